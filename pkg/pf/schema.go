package pf

import (
	"strings"

	"github.com/apache/pulsar-client-go/pulsar"
)

// consumerSchema is the schema an input's consumer subscribes with, from its own
// schemaType (inputSpecs.<topic>.schemaType, or customSchemaInputs, which the worker folds
// into it), so a function with several inputs checks each topic against its own type and,
// on a topic without one yet, registers it, as Pulsar's instances do. The handler still gets
// the payload's bytes. ok is false when the input is consumed without a schema: none given,
// BYTES/AUTO_CONSUME, or a type whose definition lives in a Java or Python class (JSON,
// AVRO, PROTOBUF: the Go instance has no class to derive it from, and a consumer without a
// schema may read any topic); known is false for a name no Pulsar client knows either (a
// custom schema class), which the caller logs.
func (s InputSpec) consumerSchema() (sc pulsar.Schema, ok, known bool) {
	p := s.SchemaProperties
	switch strings.ToUpper(strings.TrimSpace(s.SchemaType)) {
	case "STRING":
		return pulsar.NewStringSchema(p), true, true
	case "INT8":
		return pulsar.NewInt8Schema(p), true, true
	case "INT16":
		return pulsar.NewInt16Schema(p), true, true
	case "INT32":
		return pulsar.NewInt32Schema(p), true, true
	case "INT64":
		return pulsar.NewInt64Schema(p), true, true
	case "FLOAT":
		return pulsar.NewFloatSchema(p), true, true
	case "DOUBLE":
		return pulsar.NewDoubleSchema(p), true, true
	case "", "NONE", "BYTES", "AUTO", "AUTO_CONSUME", "JSON", "AVRO", "PROTOBUF", "PROTOBUF_NATIVE", "KEY_VALUE":
		return nil, false, true
	}
	return nil, false, false
}
