package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

const (
	userV1 = `{"type":"record","name":"User","namespace":"example","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}`
	// adds a field with a default: BACKWARD and FORWARD compatible with v1.
	userV2 = `{"type":"record","name":"User","namespace":"example","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}`
	// adds a field without a default: v3 cannot read v1 data (not BACKWARD), v1 reads v3 (FORWARD).
	userV3 = `{"type":"record","name":"User","namespace":"example","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"email","type":"string"}]}`
	// drops "name" (which has no default in v1): v4 reads v1 (BACKWARD), v1 cannot read v4 data.
	userV4 = `{"type":"record","name":"User","namespace":"example","fields":[{"name":"id","type":"long"}]}`
	// changes id to string: incompatible both ways.
	userV5 = `{"type":"record","name":"User","namespace":"example","fields":[{"name":"id","type":"string"},{"name":"name","type":"string"}]}`
)

func avro(def string) Schema { return Schema{Type: Avro, Data: []byte(def)} }

func TestReadable(t *testing.T) {
	cases := []struct {
		name           string
		reader, writer string
		ok             bool
	}{
		{"identical", userV1, userV1, true},
		{"reader adds field with default", userV2, userV1, true},
		{"reader adds field without default", userV3, userV1, false},
		{"reader drops field", userV4, userV1, true},
		{"field type change", userV5, userV1, false},
		{"int to long promotion", `"long"`, `"int"`, true},
		{"long to int", `"int"`, `"long"`, false},
		{"float to double", `"double"`, `"float"`, true},
		{"string to bytes", `"bytes"`, `"string"`, true},
		{"record field promotion", `{"type":"record","name":"R","fields":[{"name":"x","type":"double"}]}`, `{"type":"record","name":"R","fields":[{"name":"x","type":"int"}]}`, true},
		// Avro's resolver (what Pulsar checks with) matches records by fields, not names.
		{"record name differs", `{"type":"record","name":"A","fields":[]}`, `{"type":"record","name":"B","fields":[]}`, true},
		{"record name differs, fields do not resolve", `{"type":"record","name":"A","fields":[{"name":"x","type":"int"}]}`, `{"type":"record","name":"B","fields":[{"name":"y","type":"int"}]}`, false},
		{"record alias", `{"type":"record","name":"A","aliases":["B"],"fields":[]}`, `{"type":"record","name":"B","fields":[]}`, true},
		{"field alias", `{"type":"record","name":"R","fields":[{"name":"y","aliases":["x"],"type":"int"}]}`, `{"type":"record","name":"R","fields":[{"name":"x","type":"int"}]}`, true},
		{"enum subset", `{"type":"enum","name":"E","symbols":["A","B","C"]}`, `{"type":"enum","name":"E","symbols":["A","B"]}`, true},
		{"enum new symbol", `{"type":"enum","name":"E","symbols":["A"]}`, `{"type":"enum","name":"E","symbols":["A","B"]}`, false},
		{"enum with default", `{"type":"enum","name":"E","symbols":["A"],"default":"A"}`, `{"type":"enum","name":"E","symbols":["A","B"]}`, true},
		{"union reader", `["null","long"]`, `"int"`, true},
		{"union writer not covered", `"long"`, `["null","long"]`, false},
		{"union widened", `["null","string","long"]`, `["null","long"]`, true},
		{"array items", `{"type":"array","items":"long"}`, `{"type":"array","items":"int"}`, true},
		{"map values", `{"type":"map","values":"int"}`, `{"type":"map","values":"long"}`, false},
		{"fixed size", `{"type":"fixed","name":"F","size":4}`, `{"type":"fixed","name":"F","size":8}`, false},
		{"recursive", `{"type":"record","name":"N","fields":[{"name":"next","type":["null","N"]},{"name":"v","type":"long"}]}`,
			`{"type":"record","name":"N","fields":[{"name":"next","type":["null","N"]},{"name":"v","type":"int"}]}`, true},
		{"logical type", `{"type":"long","logicalType":"timestamp-millis"}`, `"long"`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := readable(avro(tc.reader), avro(tc.writer))
			if (err == nil) != tc.ok {
				t.Fatalf("readable = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrIncompatible) {
				t.Fatalf("error %v is not ErrIncompatible", err)
			}
		})
	}
}

func TestCheckEvolution(t *testing.T) {
	v1, v2, v3, v4, v5 := avro(userV1), avro(userV2), avro(userV3), avro(userV4), avro(userV5)
	str := Schema{Type: String}
	proto1 := Schema{Type: Protobuf, Data: []byte(`{"a":1}`)}
	proto2 := Schema{Type: Protobuf, Data: []byte(`{"a":2}`)}
	type c struct {
		existing  []Schema
		candidate Schema
		ok        bool
	}
	cases := map[Strategy][]c{
		AlwaysCompatible:   {{[]Schema{v1}, v5, true}, {[]Schema{v1}, str, true}},
		AlwaysIncompatible: {{nil, v1, true}, {[]Schema{v1}, v2, false}},
		Backward:           {{[]Schema{v1}, v2, true}, {[]Schema{v1}, v3, false}, {[]Schema{v1}, v4, true}, {[]Schema{v1}, v5, false}, {[]Schema{v1}, str, false}},
		Forward:            {{[]Schema{v1}, v2, true}, {[]Schema{v1}, v3, true}, {[]Schema{v1}, v4, false}, {[]Schema{v1}, v5, false}},
		Full:               {{[]Schema{v1}, v2, true}, {[]Schema{v1}, v3, false}, {[]Schema{v1}, v4, false}},
		// v1 -> v4 (drop name) -> v2 (re-add name without default in reader? v2 has name w/o default):
		// non-transitive BACKWARD only checks v4; transitive checks v1 too.
		BackwardTransitive: {{[]Schema{v1, v2}, v4, true}, {[]Schema{v4}, v2, false}, {[]Schema{v1, v4}, v1, false}},
		ForwardTransitive:  {{[]Schema{v1, v2}, v3, true}, {[]Schema{v2, v1}, v4, false}},
		FullTransitive:     {{[]Schema{v1, v2}, v2, true}, {[]Schema{v1, v2}, v3, false}},
	}
	cases[Backward] = append(cases[Backward], c{[]Schema{v1, v4}, v1, false}, c{[]Schema{v3, v4}, v2, false})
	for strategy, list := range cases {
		for i, tc := range list {
			t.Run(string(strategy)+"/"+string(rune('a'+i)), func(t *testing.T) {
				err := checkEvolution(strategy, tc.existing, tc.candidate)
				if (err == nil) != tc.ok {
					t.Fatalf("checkEvolution = %v, want ok=%v", err, tc.ok)
				}
			})
		}
	}
	// Types without a check of their own in Pulsar (PROTOBUF, STRING, ...): the same type is
	// compatible under every strategy but ALWAYS_INCOMPATIBLE; another type never is.
	if err := checkEvolution(Full, []Schema{proto1}, proto2); err != nil {
		t.Fatalf("protobuf change under FULL: %v", err)
	}
	if err := checkEvolution(AlwaysIncompatible, []Schema{proto1}, proto2); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("protobuf change under ALWAYS_INCOMPATIBLE: %v", err)
	}
	if err := checkEvolution(Full, []Schema{proto1}, Schema{Type: String}); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("protobuf to string under FULL: %v", err)
	}
	// Transitive vs not: v3 (email, no default) then v4 (only id): BACKWARD checks v4 reads v3 (ok),
	// BACKWARD_TRANSITIVE also v4 reads v1 (ok); FORWARD_TRANSITIVE: v1 must read v4 (fails).
	if err := checkEvolution(Backward, []Schema{v1, v3}, v4); err != nil {
		t.Fatal(err)
	}
}

func TestCheckConsumer(t *testing.T) {
	v1, v2, v3 := avro(userV1), avro(userV2), avro(userV3)
	if err := checkConsumer(Forward, []Schema{v1, v2}, v1); err != nil {
		t.Fatalf("registered schema refused: %v", err)
	}
	if err := checkConsumer(Backward, []Schema{v1}, v2); err != nil {
		t.Fatalf("v2 reads v1: %v", err)
	}
	if err := checkConsumer(Backward, []Schema{v1}, v3); err == nil {
		t.Fatal("v3 cannot read v1 but was accepted")
	}
	if err := checkConsumer(AlwaysIncompatible, []Schema{v1}, v2); err == nil {
		t.Fatal("ALWAYS_INCOMPATIBLE accepted an unregistered schema")
	}
	if err := checkConsumer(AlwaysCompatible, []Schema{v1}, v3); err != nil {
		t.Fatal(err)
	}
}

func TestParseAvroErrors(t *testing.T) {
	for _, def := range []string{``, `{`, `{"type":"record","fields":[]}`, `"Unknown"`, `{"type":"array"}`,
		`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"a","type":"int"}]}`,
		`[["int"]]`, `{"type":"enum","name":"E","symbols":[]}`, `{"type":"fixed","name":"F"}`, `"int" "x"`,
		strings.Repeat(`{"type":"array","items":`, 100) + `"int"` + strings.Repeat(`}`, 100)} {
		if _, err := parseAvro([]byte(def)); !errors.Is(err, ErrInvalid) {
			t.Errorf("parseAvro(%.40q) = %v, want ErrInvalid", def, err)
		}
	}
}

func TestStrategyAndVersionParsing(t *testing.T) {
	for in, want := range map[string]Strategy{"full": Full, "BACKWARD_TRANSITIVE": BackwardTransitive, "BackwardTransitive": BackwardTransitive,
		"AlwaysCompatible": AlwaysCompatible, "": Undefined, "UNDEFINED": Undefined} {
		if got, err := ParseStrategy(in); err != nil || got != want {
			t.Errorf("ParseStrategy(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseStrategy("sometimes"); !errors.Is(err, ErrInvalid) {
		t.Error("bad strategy accepted")
	}
	for _, v := range []int64{0, 1, 255, 256, 1 << 40, -1} {
		got, err := ParseVersionBytes(VersionBytes(v))
		if err != nil || got != v {
			t.Errorf("version %d round trip: %d, %v", v, got, err)
		}
	}
	if b := VersionBytes(1); b[7] != 1 || b[0] != 0 {
		t.Errorf("VersionBytes(1) = %x, want big-endian", b)
	}
	if _, err := ParseVersionBytes([]byte{1}); !errors.Is(err, ErrInvalid) {
		t.Error("short version accepted")
	}
}

func FuzzParseAvro(f *testing.F) {
	for _, s := range []string{userV1, userV2, userV5, `"int"`, `["null","string"]`, `{"type":"map","values":{"type":"array","items":"long"}}`,
		`{"type":"record","name":"N","fields":[{"name":"next","type":["null","N"]}]}`, `{"type":"enum","name":"E","symbols":["A"],"default":"A"}`,
		`{"type":"fixed","name":"F","size":16}`, `{"type":{"type":"record","name":"W","fields":[]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := parseAvro(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error not ErrInvalid: %v", err)
			}
			return
		}
		// A parsed schema can always read its own data, and resolution terminates.
		if err := canRead(n, n); err != nil {
			t.Fatalf("schema cannot read itself: %v", err)
		}
		if err := canRead(n, &avroNode{kind: "null"}); err != nil && !strings.Contains(err.Error(), "at") {
			t.Fatalf("odd error: %v", err)
		}
	})
}

// protoNative builds PROTOBUF_NATIVE schema data (ProtobufNativeSchemaData JSON) for a set
// of files given in order, the root being message msg of file root.
func protoNative(t *testing.T, root, msg string, files ...*descriptorpb.FileDescriptorProto) Schema {
	t.Helper()
	set, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: files})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(map[string]any{"fileDescriptorSet": set, "rootMessageTypeName": msg, "rootFileDescriptorName": root})
	if err != nil {
		t.Fatal(err)
	}
	return Schema{Type: ProtobufNative, Data: data}
}

func protoFile(name, pkg string, msgs ...string) *descriptorpb.FileDescriptorProto {
	f := &descriptorpb.FileDescriptorProto{Name: proto.String(name), Package: proto.String(pkg)}
	for _, m := range msgs {
		f.MessageType = append(f.MessageType, &descriptorpb.DescriptorProto{Name: proto.String(m)})
	}
	return f
}

// PROTOBUF_NATIVE follows Pulsar's ProtobufNativeSchemaCompatibilityCheck: the root message
// may not change; descriptor sets that list the same files in another order (as the Go
// client's do, from a map) are the same schema. Regression: the Go client's
// TestProtoNativeSchema consumer was refused as "definitions differ".
func TestProtobufNativeCompatibility(t *testing.T) {
	a, b := protoFile("test.proto", "proto", "Test", "Foo"), protoFile("dep.proto", "proto", "Dep")
	v1 := protoNative(t, "test.proto", "proto.Test", a, b)
	reordered := protoNative(t, "test.proto", "proto.Test", b, a)
	otherRoot := protoNative(t, "test.proto", "proto.Foo", a, b)
	for _, s := range []Schema{v1, reordered, otherRoot} {
		if err := validate(s, 0); err != nil {
			t.Fatalf("valid schema refused: %v", err)
		}
	}
	if err := checkEvolution(Full, []Schema{v1}, reordered); err != nil {
		t.Errorf("reordered descriptor set under FULL: %v", err)
	}
	if err := checkConsumer(Full, []Schema{v1}, reordered); err != nil {
		t.Errorf("consumer with reordered descriptor set: %v", err)
	}
	if err := checkEvolution(Backward, []Schema{v1}, otherRoot); !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "root message") {
		t.Errorf("root message change under BACKWARD: %v", err)
	}
	if err := checkEvolution(AlwaysCompatible, []Schema{v1}, otherRoot); err != nil {
		t.Errorf("root message change under ALWAYS_COMPATIBLE: %v", err)
	}
	for name, bad := range map[string]Schema{
		"not JSON":     {Type: ProtobufNative, Data: []byte("nope")},
		"no root file": protoNative(t, "missing.proto", "proto.Test", a),
		"no root msg":  protoNative(t, "test.proto", "proto.Missing", a),
		"bad set":      {Type: ProtobufNative, Data: []byte(`{"fileDescriptorSet":"AAEC","rootMessageTypeName":"x","rootFileDescriptorName":"y"}`)},
	} {
		if err := validate(bad, 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: validate = %v, want ErrInvalid", name, err)
		}
	}
}
