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
	s := &schema.Schema{Type: t, Data: ps.GetSchemaData()}
	if len(ps.GetProperties()) > 0 {
		s.Properties = make(map[string]string, len(ps.GetProperties()))
		for _, kv := range ps.GetProperties() {
			s.Properties[kv.GetKey()] = kv.GetValue()
		}
	}
	return s
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
	s := schemaFromWire(cmd.GetSchema())
	if s == nil {
		// Bytes: nothing to register; Pulsar answers an empty version.
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
