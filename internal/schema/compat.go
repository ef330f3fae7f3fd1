package schema

import (
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// validate checks a schema before it is stored: AVRO must be an Avro definition, JSON must
// be JSON (an Avro definition in practice, which the compatibility check then uses).
func validate(s Schema, maxSize int) error {
	if maxSize > 0 && len(s.Data) > maxSize {
		return fmt.Errorf("%w: schema data is %d bytes, more than maxSchemaSizeBytes %d", ErrInvalid, len(s.Data), maxSize)
	}
	if _, ok := typeNames[s.Type]; !ok {
		return fmt.Errorf("%w: unknown schema type %d", ErrInvalid, int32(s.Type))
	}
	switch s.Type {
	case KeyValue:
		k, v, err := SplitKeyValue(s)
		if err != nil {
			return err
		}
		if err := validate(k, maxSize); err != nil {
			return fmt.Errorf("key schema: %w", err)
		}
		if err := validate(v, maxSize); err != nil {
			return fmt.Errorf("value schema: %w", err)
		}
	case Avro:
		if _, err := parseAvro(s.Data); err != nil {
			return err
		}
	case JSON:
		if !json.Valid(s.Data) {
			return fmt.Errorf("%w: JSON schema data is not JSON", ErrInvalid)
		}
	case ProtobufNative:
		if _, err := protobufNativeRoot(s.Data); err != nil {
			return err
		}
	}
	return nil
}

// readable reports whether data written with writer can be read with reader, by Pulsar's
// checks per type: Avro resolution for Avro-based types (AVRO, JSON), the same root message
// for PROTOBUF_NATIVE, part by part for KEY_VALUE, and nothing more than the same type for
// the rest. A type change is never readable.
func readable(reader, writer Schema) error {
	if reader.Type != writer.Type {
		return fmt.Errorf("%w: type %s cannot replace %s", ErrIncompatible, reader.Type, writer.Type)
	}
	if reader.sameAs(writer) {
		return nil
	}
	if reader.Type == KeyValue {
		rk, rv, rerr := SplitKeyValue(reader)
		wk, wv, werr := SplitKeyValue(writer)
		if rerr == nil && werr == nil {
			if err := readable(rk, wk); err != nil {
				return fmt.Errorf("key: %w", err)
			}
			if err := readable(rv, wv); err != nil {
				return fmt.Errorf("value: %w", err)
			}
			return nil
		}
	}
	switch {
	case reader.Type.avroBased():
		r, rerr := parseAvro(reader.Data)
		w, werr := parseAvro(writer.Data)
		if rerr == nil && werr == nil {
			if err := canRead(r, w); err != nil {
				return fmt.Errorf("%w: %v", ErrIncompatible, err)
			}
			return nil
		}
		return fmt.Errorf("%w: %s definitions differ and are not Avro-resolvable", ErrIncompatible, reader.Type)
	case reader.Type == ProtobufNative:
		// Pulsar's ProtobufNativeSchemaCompatibilityCheck: under every strategy but the
		// ALWAYS_* ones (handled by the callers) only the root message may not change. The
		// descriptor bytes themselves differ between equal schemas (the Go client lists the
		// files of the set in map order).
		r, rerr := protobufNativeRoot(reader.Data)
		w, werr := protobufNativeRoot(writer.Data)
		if rerr != nil || werr != nil {
			return fmt.Errorf("%w: %w", ErrIncompatible, errors.Join(rerr, werr))
		}
		if r != w {
			return fmt.Errorf("%w: protobuf root message change is not allowed: %s to %s", ErrIncompatible, w, r)
		}
		return nil
	}
	// Every other type (STRING, PROTOBUF, the primitives, ...) has no compatibility check of
	// its own in Pulsar (SchemaCompatibilityCheck.DEFAULT): the same type is compatible.
	return nil
}

// protobufNativeRoot reads PROTOBUF_NATIVE schema data (Pulsar's ProtobufNativeSchemaData
// JSON: a base64 FileDescriptorSet, the root file and the root message's full name) and
// returns the root message's full name after checking that the set has it, as Pulsar's
// ProtobufNativeSchemaDataValidator does by deserializing the descriptor.
func protobufNativeRoot(data []byte) (string, error) {
	var d struct {
		FileDescriptorSet      []byte `json:"fileDescriptorSet"`
		RootMessageTypeName    string `json:"rootMessageTypeName"`
		RootFileDescriptorName string `json:"rootFileDescriptorName"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return "", fmt.Errorf("%w: PROTOBUF_NATIVE schema data is not ProtobufNativeSchemaData JSON: %v", ErrInvalid, err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(d.FileDescriptorSet, &set); err != nil {
		return "", fmt.Errorf("%w: PROTOBUF_NATIVE fileDescriptorSet: %v", ErrInvalid, err)
	}
	for _, f := range set.GetFile() {
		if f.GetName() != d.RootFileDescriptorName {
			continue
		}
		for _, m := range f.GetMessageType() {
			full := m.GetName()
			if f.GetPackage() != "" {
				full = f.GetPackage() + "." + full
			}
			if full == d.RootMessageTypeName {
				return full, nil
			}
		}
	}
	return "", fmt.Errorf("%w: PROTOBUF_NATIVE root message %q not found in file %q of the descriptor set", ErrInvalid, d.RootMessageTypeName, d.RootFileDescriptorName)
}

// checkEvolution decides whether candidate may be added after existing (oldest first, all
// live: after the last deletion) under strategy, which must not be Undefined. An empty
// history accepts anything.
func checkEvolution(strategy Strategy, existing []Schema, candidate Schema) error {
	if len(existing) == 0 || strategy == AlwaysCompatible {
		return nil
	}
	if strategy == AlwaysIncompatible {
		return fmt.Errorf("%w: strategy is ALWAYS_INCOMPATIBLE", ErrIncompatible)
	}
	against := existing
	if !strategy.transitive() {
		against = existing[len(existing)-1:]
	}
	for _, old := range against {
		var err error
		switch strategy {
		case Backward, BackwardTransitive:
			err = readable(candidate, old) // new readers read old data
		case Forward, ForwardTransitive:
			err = readable(old, candidate) // old readers read new data
		case Full, FullTransitive:
			if err = readable(candidate, old); err == nil {
				err = readable(old, candidate)
			}
		default:
			return fmt.Errorf("%w: unknown strategy %q", ErrInvalid, strategy)
		}
		if err != nil {
			return fmt.Errorf("%w (strategy %s)", err, strategy)
		}
	}
	return nil
}

// checkConsumer decides whether a consumer with schema reader may attach (PIP-44): it must
// read the latest schema, or every schema for BACKWARD_TRANSITIVE and FULL_TRANSITIVE.
// A schema identical to a registered one is always accepted.
func checkConsumer(strategy Strategy, existing []Schema, reader Schema) error {
	if len(existing) == 0 || strategy == AlwaysCompatible {
		return nil
	}
	for _, e := range existing {
		if e.sameAs(reader) {
			return nil
		}
	}
	if strategy == AlwaysIncompatible {
		return fmt.Errorf("%w: strategy is ALWAYS_INCOMPATIBLE and the consumer's schema is not registered", ErrIncompatible)
	}
	against := existing[len(existing)-1:]
	if strategy == BackwardTransitive || strategy == FullTransitive {
		against = existing
	}
	for _, w := range against {
		if err := readable(reader, w); err != nil {
			return fmt.Errorf("%w (consumer, strategy %s)", err, strategy)
		}
	}
	return nil
}
