package columns

import (
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/magnetar-io/magnetar/internal/schema"
)

// Every decoder must turn any payload into a row or an error, never a panic or a hang.

func fuzzLayout(f *testing.F, s schema.Schema, seeds ...[]byte) {
	l, err := FromSchema(s)
	if err != nil {
		f.Fatal(err)
	}
	all := make([]int, len(l.Columns))
	for i := range all {
		all[i] = i
	}
	d, err := l.Decoder(schema.Schema{}, all)
	if err != nil {
		f.Fatal(err)
	}
	one, err := l.Decoder(schema.Schema{}, all[:1])
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		_ = d.Decode(Message{Payload: p, Key: string(p), KeyB64: len(p)%2 == 0}, make([]any, len(all)))
		_ = one.Decode(Message{Payload: p}, make([]any, 1))
	})
}

func FuzzAvroDecode(f *testing.F) {
	seed, err := avro.Marshal(avro.MustParse(userAvro), map[string]any{
		"name": "a", "age": nil, "score": 1.0, "tags": []string{"x"}, "address": map[string]any{"city": "c", "zip": nil},
		"born": 0, "seen": int64(0), "color": "RED", "price": mustRat("1.00"), "__key__": ""})
	if err != nil {
		f.Fatal(err)
	}
	fuzzLayout(f, schema.Schema{Type: schema.Avro, Data: []byte(userAvro)}, seed, []byte{0xff, 0xff, 0xff, 0x0f})
}

func FuzzJSONDecode(f *testing.F) {
	fuzzLayout(f, schema.Schema{Type: schema.JSON, Data: []byte(userAvro)},
		[]byte(`{"name":"x","address":{"city":"y"},"tags":[1,[2,{"a":"]"}]],"age":1.0}`), []byte(`null`), []byte(`{"name":"\u00e9\\"}`))
}

func FuzzProtobufDecode(f *testing.F) {
	s, _ := protoSchema(&testing.T{})
	fuzzLayout(f, s, []byte{0x08, 0x05, 0x12, 0x01, 'n', 0x1a, 0x08, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x22, 0x02, 0x08, 0x11})
}

func FuzzKeyValueDecode(f *testing.F) {
	val := schema.Schema{Type: schema.Avro, Data: []byte(`{"type":"record","name":"V","fields":[{"name":"n","type":"int"},{"name":"m","type":{"type":"map","values":"long"}}]}`)}
	fuzzLayout(f, kvSchema(schema.Schema{Type: schema.Int32}, val, "INLINE"), []byte{0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 2, 2, 0})
}
