package broker

import (
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/schema"
	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// schemaFromWire converts a PRODUCER/SUBSCRIBE/GET_OR_CREATE schema; nil means "no
// schema" (absent, None, or a client-side AUTO kind).
func schemaFromWire(ps *pb.Schema) *schema.Schema {
	if ps == nil {
		return nil
	}
	t, ok := schema.TypeFromWire(int32(ps.GetType()))
	if !ok {
		return nil
	}
	return &schema.Schema{Type: t, Data: ps.GetSchemaData(), Properties: keyValues(ps.GetProperties())}
}

// producerSchemaFromWire is schemaFromWire for PRODUCER and GET_OR_CREATE_SCHEMA, where a
// schema of type None is registered too, as Pulsar's AbstractTopic.addSchema registers any
// schema a producer gives: the Go client sends its BYTES schema as None with its
// properties, and stamps its messages with the version answered, which its consumers then
// look up (an empty version is "schema not found ... version [ [] ]"). The Java client sends
// no schema at all for Schema.BYTES, so it registers nothing.
func producerSchemaFromWire(ps *pb.Schema) *schema.Schema {
	if ps != nil && ps.GetType() == pb.Schema_None {
		return &schema.Schema{Type: schema.None, Data: ps.GetSchemaData(), Properties: keyValues(ps.GetProperties())}
	}
	return schemaFromWire(ps)
}

// keyValues is a protocol key/value list as a map (nil when empty): schema properties,
// PRODUCER's and SUBSCRIBE's metadata. The frame size bounds it.
func keyValues(kvs []*pb.KeyValue) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = kv.GetValue()
	}
	return out
}

// wireSchema builds the protocol's Schema (every required field set) for an entry.
func wireSchema(name topics.Name, e schema.Entry) *pb.Schema {
	ps := &pb.Schema{
		Name:       proto.String(name.Base().Local),
		SchemaData: e.Schema.Data,
		Type:       pb.Schema_Type(e.Schema.Type.Wire()).Enum(),
	}
	if ps.SchemaData == nil {
		ps.SchemaData = []byte{}
	}
	for k, v := range e.Schema.Properties {
		ps.Properties = append(ps.Properties, &pb.KeyValue{Key: proto.String(k), Value: proto.String(v)})
	}
	return ps
}

// handleGetSchema answers a schema by version (8 bytes, big-endian) or the latest one.
// A missing schema is error_code TopicNotFound with no schema, which the Go client
// reports as "schema not found".
func (c *conn) handleGetSchema(cmd *pb.CommandGetSchema) {
	resp := &pb.CommandGetSchemaResponse{RequestId: proto.Uint64(cmd.GetRequestId())}
	fail := func(code pb.ServerError, err error) {
		resp.ErrorCode = code.Enum()
		resp.ErrorMessage = proto.String(err.Error())
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_SCHEMA_RESPONSE.Enum(), GetSchemaResponse: resp})
	}
	name, err := topics.ParseName(cmd.GetTopic())
	if err != nil {
		fail(pb.ServerError_InvalidTopicName, err)
		return
	}
	schemas := c.s.topics.Schemas()
	ctx, cancel := c.opContext()
	defer cancel()
	if err := c.s.topics.Authorize(ctx, topics.ActionLookup, name); err != nil {
		fail(pb.ServerError_AuthorizationError, err)
		return
	}
	var e schema.Entry
	if raw := cmd.GetSchemaVersion(); len(raw) > 0 {
		v, perr := schema.ParseVersionBytes(raw)
		if perr != nil {
			fail(pb.ServerError_TopicNotFound, perr)
			return
		}
		e, err = schemas.Get(ctx, topics.SchemaID(name), v)
	} else {
		e, err = schemas.Latest(ctx, topics.SchemaID(name))
	}
	switch {
	case errors.Is(err, schema.ErrNotFound):
		fail(pb.ServerError_TopicNotFound, err)
		return
	case err != nil:
		code, _ := wire.ServerErrorFor(topics.SchemaErr(err))
		fail(code, err)
		return
	}
	resp.Schema = wireSchema(name, e)
	resp.SchemaVersion = schema.VersionBytes(e.Version)
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_SCHEMA_RESPONSE.Enum(), GetSchemaResponse: resp})
}

// handleGetOrCreateSchema is a producer's schema for a message it sends with a schema
// other than the one it was created with (multi-schema producers): same rules as
// PRODUCER's schema.
func (c *conn) handleGetOrCreateSchema(cmd *pb.CommandGetOrCreateSchema) {
	resp := &pb.CommandGetOrCreateSchemaResponse{RequestId: proto.Uint64(cmd.GetRequestId())}
	defer func() {
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE.Enum(), GetOrCreateSchemaResponse: resp})
	}()
	fail := func(err error) {
		code, _ := wire.ServerErrorFor(err)
		resp.ErrorCode = code.Enum()
		resp.ErrorMessage = proto.String(err.Error())
	}
	name, err := topics.ParseName(cmd.GetTopic())
	if err != nil {
		fail(err)
		return
	}
	ctx, cancel := c.opContext()
	defer cancel()
	if err := c.s.topics.Authorize(ctx, topics.ActionProduce, name); err != nil {
		fail(err)
		return
	}
	s := producerSchemaFromWire(cmd.GetSchema())
	if s == nil {
		// No schema (or a client-side AUTO kind): nothing to register, an empty version.
		resp.SchemaVersion = []byte{}
		return
	}
	v, err := c.s.topics.ProducerSchema(ctx, name, *s)
	if err != nil {
		fail(err)
		return
	}
	resp.SchemaVersion = v
}
