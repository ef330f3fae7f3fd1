package broker

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/schema"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// GET_SCHEMA and GET_OR_CREATE_SCHEMA over a raw socket: the exact error codes and
// 8-byte versions a client sees, and that bad requests leave the connection usable.
func TestSchemaCommandsRaw(t *testing.T) {
	tb := startBroker(t, nil)
	r := dialRaw(t, tb)
	r.connect()
	const topic = "persistent://public/default/raw-schema"
	rid := uint64(0)
	getSchema := func(version []byte) *pb.CommandGetSchemaResponse {
		t.Helper()
		rid++
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_SCHEMA.Enum(), GetSchema: &pb.CommandGetSchema{
			RequestId: proto.Uint64(rid), Topic: proto.String(topic), SchemaVersion: version}})
		resp := r.expect(pb.BaseCommand_GET_SCHEMA_RESPONSE).GetGetSchemaResponse()
		if resp.GetRequestId() != rid {
			t.Fatalf("request id %d, want %d", resp.GetRequestId(), rid)
		}
		return resp
	}
	getOrCreate := func(typ pb.Schema_Type, data string) *pb.CommandGetOrCreateSchemaResponse {
		t.Helper()
		rid++
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_OR_CREATE_SCHEMA.Enum(), GetOrCreateSchema: &pb.CommandGetOrCreateSchema{
			RequestId: proto.Uint64(rid), Topic: proto.String(topic),
			Schema: &pb.Schema{Name: proto.String("x"), Type: typ.Enum(), SchemaData: []byte(data)}}})
		return r.expect(pb.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE).GetGetOrCreateSchemaResponse()
	}

	if resp := getSchema(nil); resp.GetErrorCode() != pb.ServerError_TopicNotFound || resp.Schema != nil {
		t.Fatalf("no schema: %v", resp)
	}
	if resp := getOrCreate(pb.Schema_Avro, userV1Avro); resp.ErrorCode != nil || !bytes.Equal(resp.GetSchemaVersion(), schema.VersionBytes(0)) {
		t.Fatalf("create: %v", resp)
	}
	if resp := getOrCreate(pb.Schema_Avro, userV1Avro); !bytes.Equal(resp.GetSchemaVersion(), schema.VersionBytes(0)) {
		t.Fatalf("same again: %v", resp)
	}
	// FULL (the default): a field without default breaks it.
	if resp := getOrCreate(pb.Schema_Avro, userV3Avro); resp.GetErrorCode() != pb.ServerError_IncompatibleSchema || resp.GetErrorMessage() == "" {
		t.Fatalf("incompatible: %v", resp)
	}
	if resp := getOrCreate(pb.Schema_Avro, `{"type":`); resp.GetErrorCode() != pb.ServerError_IncompatibleSchema {
		t.Fatalf("invalid definition: %v", resp)
	}
	if resp := getOrCreate(pb.Schema_Avro, userV2Avro); !bytes.Equal(resp.GetSchemaVersion(), schema.VersionBytes(1)) {
		t.Fatalf("evolution: %v", resp)
	}
	resp := getSchema(nil)
	if resp.ErrorCode != nil || resp.GetSchema().GetType() != pb.Schema_Avro || string(resp.GetSchema().GetSchemaData()) != userV2Avro ||
		!bytes.Equal(resp.GetSchemaVersion(), schema.VersionBytes(1)) || resp.GetSchema().GetName() != "raw-schema" {
		t.Fatalf("latest: %v", resp)
	}
	if resp := getSchema(schema.VersionBytes(0)); string(resp.GetSchema().GetSchemaData()) != userV1Avro {
		t.Fatalf("version 0: %v", resp)
	}
	if resp := getSchema(schema.VersionBytes(9)); resp.GetErrorCode() != pb.ServerError_TopicNotFound {
		t.Fatalf("unknown version: %v", resp)
	}
	if resp := getSchema([]byte{1, 2}); resp.GetErrorCode() != pb.ServerError_TopicNotFound {
		t.Fatalf("short version: %v", resp)
	}
	// A partition asks for its partitioned topic's schema.
	rid++
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_SCHEMA.Enum(), GetSchema: &pb.CommandGetSchema{
		RequestId: proto.Uint64(rid), Topic: proto.String(topic + "-partition-3")}})
	if resp := r.expect(pb.BaseCommand_GET_SCHEMA_RESPONSE).GetGetSchemaResponse(); resp.ErrorCode != nil {
		t.Fatalf("partition: %v", resp)
	}
	// A None schema (the Go client's BYTES) is registered like any other, so on this AVRO
	// topic it is a type change, refused as Pulsar refuses it.
	if resp := getOrCreate(pb.Schema_None, ""); resp.GetErrorCode() != pb.ServerError_IncompatibleSchema {
		t.Fatalf("bytes on an AVRO topic: %v", resp)
	}
	// The connection still works.
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
	r.expect(pb.BaseCommand_PONG)
}
