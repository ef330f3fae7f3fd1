package topics

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/schema"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// Schemas is the service's schema registry, shared with the admin REST layer so both apply
// the same configuration.
func (s *Service) Schemas() *schema.Registry { return s.schemas }

// SchemaID names the schema history of a topic: partitions share their partitioned
// topic's, and the domain is not part of it (Pulsar's TopicName.getSchemaName).
func SchemaID(name Name) schema.ID {
	b := name.Base()
	return schema.ID{Tenant: b.Tenant, Namespace: b.Namespace, Topic: b.Local}
}

// SchemaErr maps registry errors onto the service's error classes: refusals are
// ErrIncompatibleSchema (what the clients report), a missing namespace ErrTopicNotFound,
// anything else a metadata error.
func SchemaErr(err error) error {
	switch {
	case errors.Is(err, schema.ErrIncompatible), errors.Is(err, schema.ErrInvalid):
		return fmt.Errorf("%w: %w", wire.ErrIncompatibleSchema, err)
	case errors.Is(err, resources.ErrNotFound):
		return fmt.Errorf("%w: %w", wire.ErrTopicNotFound, err)
	}
	return fmt.Errorf("%w: %w", wire.ErrMetadata, err)
}

// ProducerSchema registers or finds a schema for name, as a producer's or a multi-schema
// producer's message's (Pulsar's GET_OR_CREATE_SCHEMA), and returns its version.
func (s *Service) ProducerSchema(ctx context.Context, name Name, sc schema.Schema) ([]byte, error) {
	if err := s.authorize(ctx, ActionProduce, name); err != nil {
		return nil, err
	}
	return s.producerSchema(ctx, name, &sc)
}

// producerSchema registers or finds the schema of a producer of name and returns its
// version (nil for a producer without schema, sc nil).
func (s *Service) producerSchema(ctx context.Context, name Name, sc *schema.Schema) ([]byte, error) {
	id := SchemaID(name)
	if sc == nil {
		if err := s.schemas.CheckProducerWithoutSchema(ctx, id); err != nil {
			return nil, SchemaErr(err)
		}
		return nil, nil
	}
	v, err := s.schemas.GetOrCreate(ctx, id, *sc)
	if err != nil {
		s.log.Info("producer schema refused", "topic", name.String(), "type", sc.Type.String(), "err", err)
		return nil, SchemaErr(err)
	}
	return schema.VersionBytes(v), nil
}

// ConsumerSchema checks a consumer's schema (nil: none), or registers it on a topic without
// schema that is idle (no producers, no consumers, no messages), as Pulsar does: a topic
// already in use without schema does not get one imposed by a consumer.
func (t *Topic) ConsumerSchema(ctx context.Context, sc *schema.Schema) error {
	if sc == nil {
		return nil
	}
	if err := t.s.schemas.AttachConsumer(ctx, SchemaID(t.name), *sc, t.schemaIdle()); err != nil {
		t.logg.Info("consumer schema refused", "type", sc.Type.String(), "err", err)
		return SchemaErr(err)
	}
	return nil
}

// schemaIdle tells whether the topic has no producers, no connected consumers and no
// stored messages.
func (t *Topic) schemaIdle() bool {
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
	return t.log == nil || t.log.lastConfirmed().EntryID < 0
}

// dropSchema removes a deleted topic's schema history for good, as Pulsar does: a topic
// created again under the name starts without schema. Partitions keep the history, which
// belongs to their partitioned topic.
func (s *Service) dropSchema(ctx context.Context, name Name) error {
	if _, err := s.schemas.Delete(ctx, SchemaID(name), true); err != nil && !errors.Is(err, schema.ErrNotFound) {
		return fmt.Errorf("%w: delete schema of %s: %w", wire.ErrMetadata, name, err)
	}
	return nil
}
