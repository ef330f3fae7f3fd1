package broker

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/schema"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Schemas is the broker's schema registry, shared with the admin REST layer so both
// apply the same configuration.
func (s *Server) Schemas() *schema.Registry { return s.schemas }

// SchemaID names the schema history of a topic: partitions share their partitioned
// topic's, and the domain is not part of it (Pulsar's TopicName.getSchemaName).
func SchemaID(name TopicName) schema.ID {
	b := name.Base()
	return schema.ID{Tenant: b.Tenant, Namespace: b.Namespace, Topic: b.Local}
}

// schemaFromWire converts a PRODUCER/SUBSCRIBE/GET_OR_CREATE schema; ok is false when it
// means "no schema" (absent, None, or a client-side AUTO kind).
func schemaFromWire(ps *pb.Schema) (schema.Schema, bool) {
	if ps == nil {
		return schema.Schema{}, false
	}
	t, ok := schema.TypeFromWire(int32(ps.GetType()))
	if !ok {
		return schema.Schema{}, false
	}
	s := schema.Schema{Type: t, Data: ps.GetSchemaData()}
	if len(ps.GetProperties()) > 0 {
		s.Properties = make(map[string]string, len(ps.GetProperties()))
		for _, kv := range ps.GetProperties() {
			s.Properties[kv.GetKey()] = kv.GetValue()
		}
	}
	return s, true
}

// wireSchema builds the protocol's Schema (every required field set) for an entry.
func wireSchema(name TopicName, e schema.Entry) *pb.Schema {
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

// schemaErr maps registry errors onto the protocol's error classes: refusals are
// IncompatibleSchema (what the clients report), a missing namespace TopicNotFound,
// anything else a metadata error.
func schemaErr(err error) error {
	switch {
	case errors.Is(err, schema.ErrIncompatible), errors.Is(err, schema.ErrInvalid):
		return fmt.Errorf("%w: %w", wire.ErrIncompatibleSchema, err)
	case errors.Is(err, resources.ErrNotFound):
		return fmt.Errorf("%w: %w", wire.ErrTopicNotFound, err)
	}
	return fmt.Errorf("%w: %w", wire.ErrMetadata, err)
}

// producerSchema registers or finds the producer's schema and returns its version for
// PRODUCER_SUCCESS (nil for producers without schema).
func (c *conn) producerSchema(ctx context.Context, name TopicName, ps *pb.Schema) ([]byte, error) {
	id := SchemaID(name)
	s, ok := schemaFromWire(ps)
	if !ok {
		if err := c.s.schemas.CheckProducerWithoutSchema(ctx, id); err != nil {
			return nil, schemaErr(err)
		}
		return nil, nil
	}
	v, err := c.s.schemas.GetOrCreate(ctx, id, s)
	if err != nil {
		c.log.Info("producer schema refused", "topic", name.String(), "type", s.Type.String(), "err", err)
		return nil, schemaErr(err)
	}
	return schema.VersionBytes(v), nil
}

// consumerSchema checks a consumer's schema, or registers it on a topic without schema
// that is idle (no producers, no consumers, no messages), as Pulsar does: a topic already
// in use without schema does not get one imposed by a consumer.
func (c *conn) consumerSchema(ctx context.Context, t *topic, ps *pb.Schema) error {
	s, ok := schemaFromWire(ps)
	if !ok {
		return nil
	}
	if err := c.s.schemas.AttachConsumer(ctx, SchemaID(t.name), s, t.schemaIdle()); err != nil {
		c.log.Info("consumer schema refused", "topic", t.full, "type", s.Type.String(), "err", err)
		return schemaErr(err)
	}
	return nil
}

// schemaIdle tells whether the topic has no producers, no connected consumers and no
// stored messages.
func (t *topic) schemaIdle() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.producers) > 0 {
		return false
	}
	for _, sub := range t.subs {
		if len(sub.consumersSnapshot()) > 0 {
			return false
		}
	}
	return t.log == nil || t.log.lastConfirmed().entry < 0
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
	name, err := ParseTopicName(cmd.GetTopic())
	if err != nil {
		fail(pb.ServerError_InvalidTopicName, err)
		return
	}
	ctx, cancel := c.opContext()
	defer cancel()
	var e schema.Entry
	if raw := cmd.GetSchemaVersion(); len(raw) > 0 {
		v, perr := schema.ParseVersionBytes(raw)
		if perr != nil {
			fail(pb.ServerError_TopicNotFound, perr)
			return
		}
		e, err = c.s.schemas.Get(ctx, SchemaID(name), v)
	} else {
		e, err = c.s.schemas.Latest(ctx, SchemaID(name))
	}
	switch {
	case errors.Is(err, schema.ErrNotFound):
		fail(pb.ServerError_TopicNotFound, err)
		return
	case err != nil:
		code, _ := wire.ServerErrorFor(schemaErr(err))
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
	name, err := ParseTopicName(cmd.GetTopic())
	if err != nil {
		fail(err)
		return
	}
	ctx, cancel := c.opContext()
	defer cancel()
	s, ok := schemaFromWire(cmd.GetSchema())
	if !ok {
		// Bytes: nothing to register; Pulsar answers an empty version.
		resp.SchemaVersion = []byte{}
		return
	}
	v, err := c.s.schemas.GetOrCreate(ctx, SchemaID(name), s)
	if err != nil {
		fail(schemaErr(err))
		return
	}
	resp.SchemaVersion = schema.VersionBytes(v)
}

// dropSchema removes a deleted topic's schema history for good, as Pulsar does: a topic
// created again under the name starts without schema. Partitions keep the history, which
// belongs to their partitioned topic.
func (s *Server) dropSchema(ctx context.Context, name TopicName) error {
	if _, err := s.schemas.Delete(ctx, SchemaID(name), true); err != nil && !errors.Is(err, schema.ErrNotFound) {
		return fmt.Errorf("%w: delete schema of %s: %w", wire.ErrMetadata, name, err)
	}
	return nil
}
