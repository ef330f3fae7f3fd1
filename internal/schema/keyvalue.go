package schema

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// KEY_VALUE schemas (Pulsar's KeyValueSchemaInfo) carry two schemas in one:
//
//	data:       [key length u32 BE][key schema data][value length u32 BE][value schema data]
//	properties: key.schema.type, value.schema.type (type names such as AVRO, STRING),
//	            key.schema.name, value.schema.name, key/value.schema.properties (JSON),
//	            kv.encoding.type (INLINE or SEPARATED)
//
// Compatibility checks the key and the value separately with their own types' rules.

// Property names of a KEY_VALUE schema.
const (
	kvKeyType   = "key.schema.type"
	kvValueType = "value.schema.type"
)

// SplitKeyValue returns the key and value schemas of a KEY_VALUE schema.
func SplitKeyValue(s Schema) (key, value Schema, err error) {
	d := s.Data
	part := func() ([]byte, error) {
		if len(d) < 4 {
			return nil, fmt.Errorf("%w: KEY_VALUE schema data truncated", ErrInvalid)
		}
		n := binary.BigEndian.Uint32(d)
		if uint64(n) > uint64(len(d)-4) {
			return nil, fmt.Errorf("%w: KEY_VALUE schema part of %d bytes overruns the data", ErrInvalid, n)
		}
		p := d[4 : 4+n]
		d = d[4+n:]
		return p, nil
	}
	kd, err := part()
	if err != nil {
		return key, value, err
	}
	vd, err := part()
	if err != nil {
		return key, value, err
	}
	if len(d) != 0 {
		return key, value, fmt.Errorf("%w: KEY_VALUE schema data has %d trailing bytes", ErrInvalid, len(d))
	}
	kt, err := kvPartType(s, kvKeyType)
	if err != nil {
		return key, value, err
	}
	vt, err := kvPartType(s, kvValueType)
	if err != nil {
		return key, value, err
	}
	return Schema{Type: kt, Data: kd}, Schema{Type: vt, Data: vd}, nil
}

func kvPartType(s Schema, prop string) (Type, error) {
	name, ok := s.Properties[prop]
	if !ok {
		return Bytes, nil // Pulsar's default part schema
	}
	t, err := ParseType(name)
	if err != nil {
		return 0, fmt.Errorf("%w: KEY_VALUE %s: %w", ErrInvalid, prop, err)
	}
	if t == KeyValue {
		return 0, fmt.Errorf("%w: KEY_VALUE %s may not be KEY_VALUE", ErrInvalid, prop)
	}
	return t, nil
}

// JoinKeyValue encodes key and value schema data as KEY_VALUE data.
func JoinKeyValue(key, value []byte) []byte {
	out := make([]byte, 0, 8+len(key)+len(value))
	out = binary.BigEndian.AppendUint32(out, uint32(len(key)))
	out = append(out, key...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(value)))
	return append(out, value...)
}

// KeyValueJSON renders KEY_VALUE data as the admin API shows it:
// {"key": <key schema>, "value": <value schema>}, each part embedded as JSON when it is
// JSON (Avro definitions) and as a string otherwise.
func KeyValueJSON(s Schema) (string, error) {
	k, v, err := SplitKeyValue(s)
	if err != nil {
		return "", err
	}
	part := func(d []byte) json.RawMessage {
		if len(d) > 0 && json.Valid(d) {
			return d
		}
		b, _ := json.Marshal(string(d))
		return b
	}
	b, err := json.Marshal(struct {
		Key   json.RawMessage `json:"key"`
		Value json.RawMessage `json:"value"`
	}{part(k.Data), part(v.Data)})
	return string(b), err
}

// KeyValueFromJSON is the reverse of KeyValueJSON (what an admin uploads).
func KeyValueFromJSON(text string) ([]byte, error) {
	var kv struct {
		Key   json.RawMessage `json:"key"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal([]byte(text), &kv); err != nil {
		return nil, fmt.Errorf("%w: KEY_VALUE schema must be {\"key\": ..., \"value\": ...}: %v", ErrInvalid, err)
	}
	part := func(r json.RawMessage) []byte {
		var s string
		if json.Unmarshal(r, &s) == nil {
			return []byte(s)
		}
		if string(r) == "null" {
			return nil
		}
		return r
	}
	return JoinKeyValue(part(kv.Key), part(kv.Value)), nil
}
