package schema

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Errors of the schema registry. Callers map them at their edge: the broker to
// IncompatibleSchema / TopicNotFound, the admin API to 409 / 404 / 400.
var (
	ErrNotFound     = errors.New("schema: not found")
	ErrIncompatible = errors.New("schema: incompatible")
	ErrInvalid      = errors.New("schema: invalid")
)

// Type is a schema type with Pulsar's numbering (the wire's Schema.Type for values >= 0;
// BYTES is Pulsar's -1, sent on the wire as None).
type Type int32

// Schema types (Pulsar's SchemaType).
const (
	Bytes          Type = -1
	None           Type = 0
	String         Type = 1
	JSON           Type = 2
	Protobuf       Type = 3
	Avro           Type = 4
	Boolean        Type = 5
	Int8           Type = 6
	Int16          Type = 7
	Int32          Type = 8
	Int64          Type = 9
	Float          Type = 10
	Double         Type = 11
	Date           Type = 12
	Time           Type = 13
	Timestamp      Type = 14
	KeyValue       Type = 15
	Instant        Type = 16
	LocalDate      Type = 17
	LocalTime      Type = 18
	LocalDateTime  Type = 19
	ProtobufNative Type = 20
)

var typeNames = map[Type]string{
	Bytes: "BYTES", None: "NONE", String: "STRING", JSON: "JSON", Protobuf: "PROTOBUF", Avro: "AVRO",
	Boolean: "BOOLEAN", Int8: "INT8", Int16: "INT16", Int32: "INT32", Int64: "INT64", Float: "FLOAT",
	Double: "DOUBLE", Date: "DATE", Time: "TIME", Timestamp: "TIMESTAMP", KeyValue: "KEY_VALUE",
	Instant: "INSTANT", LocalDate: "LOCAL_DATE", LocalTime: "LOCAL_TIME", LocalDateTime: "LOCAL_DATE_TIME",
	ProtobufNative: "PROTOBUF_NATIVE",
}

// String is the REST name (AVRO, KEY_VALUE, ...).
func (t Type) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("UNKNOWN(%d)", int32(t))
}

// ParseType reads a REST type name (case-insensitive).
func ParseType(s string) (Type, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	for t, n := range typeNames {
		if n == u {
			return t, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown schema type %q", ErrInvalid, s)
}

// TypeFromWire maps a wire Schema.Type value; ok is false for values that mean "no schema"
// (None and the client-side AUTO kinds, which are negative and never stored).
func TypeFromWire(v int32) (t Type, ok bool) {
	t = Type(v)
	if v <= 0 {
		return t, false
	}
	_, known := typeNames[t]
	return t, known
}

// Wire is the value sent in a wire Schema.Type (BYTES travels as None).
func (t Type) Wire() int32 {
	if t < 0 {
		return 0
	}
	return int32(t)
}

// avroBased tells whether the schema data is an Avro schema definition (the Go and Java
// clients write JSON schemas as Avro definitions too).
func (t Type) avroBased() bool { return t == Avro || t == JSON }

// Schema is what a client or an admin registers: a type, its definition and properties.
type Schema struct {
	Type       Type
	Data       []byte
	Properties map[string]string
}

// sameAs is Pulsar's "is this schema already registered" test: type and data, not
// properties (the clients rewrite properties freely) - except a KEY_VALUE schema's part
// types, which live in its properties.
func (s Schema) sameAs(o Schema) bool {
	if s.Type != o.Type || !bytes.Equal(s.Data, o.Data) {
		return false
	}
	if s.Type == KeyValue {
		for _, p := range []string{kvKeyType, kvValueType} {
			if s.Properties[p] != o.Properties[p] {
				return false
			}
		}
	}
	return true
}

// Strategy is a schema compatibility check strategy.
type Strategy string

// Compatibility strategies (Pulsar's SchemaCompatibilityStrategy names). Undefined means
// "use the broker default".
const (
	Undefined          Strategy = "UNDEFINED"
	AlwaysIncompatible Strategy = "ALWAYS_INCOMPATIBLE"
	AlwaysCompatible   Strategy = "ALWAYS_COMPATIBLE"
	Backward           Strategy = "BACKWARD"
	Forward            Strategy = "FORWARD"
	Full               Strategy = "FULL"
	BackwardTransitive Strategy = "BACKWARD_TRANSITIVE"
	ForwardTransitive  Strategy = "FORWARD_TRANSITIVE"
	FullTransitive     Strategy = "FULL_TRANSITIVE"
)

// Strategies lists every strategy name, Undefined first.
var Strategies = []Strategy{Undefined, AlwaysIncompatible, AlwaysCompatible, Backward, Forward, Full,
	BackwardTransitive, ForwardTransitive, FullTransitive}

// ParseStrategy reads a strategy name, case-insensitively. It also accepts the legacy
// auto-update names (AutoUpdateDisabled, Backward, Forward, Full, AlwaysCompatible,
// BackwardTransitive, ...) by their spelling without underscores.
func ParseStrategy(s string) (Strategy, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	for _, st := range Strategies {
		if string(st) == u || strings.ReplaceAll(string(st), "_", "") == u {
			return st, nil
		}
	}
	if u == "" {
		return Undefined, nil
	}
	return "", fmt.Errorf("%w: unknown compatibility strategy %q", ErrInvalid, s)
}

func (s Strategy) transitive() bool {
	return s == BackwardTransitive || s == ForwardTransitive || s == FullTransitive
}

// Version encodes a schema version as the protocol carries it: 8 bytes, big-endian.
func VersionBytes(v int64) []byte {
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

// ParseVersionBytes decodes an 8-byte big-endian version.
func ParseVersionBytes(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: schema version must be 8 bytes, got %d", ErrInvalid, len(b))
	}
	var v int64
	for _, x := range b {
		v = v<<8 | int64(x)
	}
	return v, nil
}
