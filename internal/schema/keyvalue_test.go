package schema

import (
	"errors"
	"testing"
)

func kv(key, value Schema) Schema {
	return Schema{Type: KeyValue, Data: JoinKeyValue(key.Data, value.Data),
		Properties: map[string]string{kvKeyType: key.Type.String(), kvValueType: value.Type.String(), "kv.encoding.type": "INLINE"}}
}

func TestKeyValue(t *testing.T) {
	k := Schema{Type: String}
	s1, s2, s3 := kv(k, avro(userV1)), kv(k, avro(userV2)), kv(k, avro(userV3))
	key, value, err := SplitKeyValue(s2)
	if err != nil || key.Type != String || len(key.Data) != 0 || value.Type != Avro || string(value.Data) != userV2 {
		t.Fatalf("split = %+v %+v %v", key, value, err)
	}
	if err := validate(s1, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := checkEvolution(Backward, []Schema{s1}, s2); err != nil {
		t.Fatalf("value gains a defaulted field: %v", err)
	}
	if err := checkEvolution(Backward, []Schema{s1}, s3); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("value gains a field without default: %v", err)
	}
	if err := checkEvolution(Full, []Schema{s1}, kv(Schema{Type: Int64}, avro(userV1))); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("key type change: %v", err)
	}
	// Same data, different part types: not the same schema.
	if kv(Schema{Type: String}, Schema{Type: String}).sameAs(kv(Schema{Type: Bytes}, Schema{Type: String})) {
		t.Fatal("part types ignored")
	}
	// The admin JSON form round-trips.
	j, err := KeyValueJSON(s1)
	if err != nil {
		t.Fatal(err)
	}
	data, err := KeyValueFromJSON(j)
	if err != nil || string(data) != string(s1.Data) {
		t.Fatalf("JSON round trip: %q -> %q, %v", j, data, err)
	}
	for _, bad := range [][]byte{nil, {0, 0, 0}, {0, 0, 0, 5, 1}, append(JoinKeyValue(nil, nil), 9)} {
		if _, _, err := SplitKeyValue(Schema{Type: KeyValue, Data: bad}); !errors.Is(err, ErrInvalid) {
			t.Errorf("SplitKeyValue(%x) = %v", bad, err)
		}
	}
	nested := s1
	nested.Properties = map[string]string{kvKeyType: "KEY_VALUE"}
	if err := validate(nested, 1<<20); !errors.Is(err, ErrInvalid) {
		t.Fatalf("nested KEY_VALUE: %v", err)
	}
}

func FuzzSplitKeyValue(f *testing.F) {
	f.Add(JoinKeyValue([]byte(userV1), []byte(`"x"`)), "AVRO", "STRING")
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0}, "", "")
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, "INT32", "KEY_VALUE")
	f.Fuzz(func(t *testing.T, data []byte, kt, vt string) {
		s := Schema{Type: KeyValue, Data: data, Properties: map[string]string{kvKeyType: kt, kvValueType: vt}}
		k, v, err := SplitKeyValue(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error not ErrInvalid: %v", err)
			}
			return
		}
		if string(JoinKeyValue(k.Data, v.Data)) != string(data) {
			t.Fatal("split/join does not round-trip")
		}
		_ = validate(s, 1<<20)
		_ = readable(s, s)
	})
}
