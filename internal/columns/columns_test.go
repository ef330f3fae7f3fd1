package columns

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/magnetar-io/magnetar/internal/schema"
)

const userAvro = `{"type":"record","name":"User","namespace":"t","fields":[
 {"name":"name","type":"string"},
 {"name":"age","type":["null","int"],"default":null},
 {"name":"score","type":"double"},
 {"name":"tags","type":{"type":"array","items":"string"}},
 {"name":"address","type":{"type":"record","name":"Address","fields":[
    {"name":"city","type":"string"},{"name":"zip","type":["null","long"]}]}},
 {"name":"born","type":{"type":"int","logicalType":"date"}},
 {"name":"seen","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"color","type":{"type":"enum","name":"Color","symbols":["RED","GREEN"]}},
 {"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
 {"name":"__key__","type":"string"}]}`

func names(cols []Column) []string {
	var out []string
	for _, c := range cols {
		out = append(out, c.Name+":"+c.Kind.String())
	}
	return out
}

func decodeAll(t *testing.T, l *Layout, writer schema.Schema, m Message, cols ...string) []any {
	t.Helper()
	var want []int
	for _, c := range cols {
		i := l.Index(c)
		if i < 0 {
			t.Fatalf("no column %q in %v", c, names(l.Columns))
		}
		want = append(want, i)
	}
	d, err := l.Decoder(writer, want)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]any, len(want))
	if err := d.Decode(m, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestAvroColumnsAndDecode(t *testing.T) {
	s := schema.Schema{Type: schema.Avro, Data: []byte(userAvro)}
	l, err := FromSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	got := names(l.Columns)
	want := []string{"name:VARCHAR", "age:INTEGER", "score:DOUBLE", "tags:JSON", "address.city:VARCHAR", "address.zip:BIGINT",
		"born:DATE", "seen:TIMESTAMP", "color:VARCHAR", "price:DECIMAL"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("columns %v, want %v", got, want)
	}
	if !reflect.DeepEqual(l.Dropped, []string{"__key__"}) {
		t.Fatalf("dropped %v", l.Dropped)
	}
	sch := avro.MustParse(userAvro)
	rec := map[string]any{
		"name": "ann", "age": map[string]any{"int": 41}, "score": 2.5, "tags": []string{"a", "b\"c"},
		"address": map[string]any{"city": "Oslo", "zip": nil}, "born": time.Date(2000, 1, 2, 0, 0, 0, 0, time.UTC),
		"seen": time.UnixMilli(1700000000123).UTC(), "color": "GREEN", "price": mustRat("-12.34"), "__key__": "k",
	}
	payload, err := avro.Marshal(sch, rec)
	if err != nil {
		t.Fatal(err)
	}
	row := decodeAll(t, l, schema.Schema{}, Message{Payload: payload},
		"price", "name", "age", "score", "tags", "address.city", "address.zip", "born", "seen", "color")
	wantRow := []any{"-12.34", "ann", int32(41), 2.5, `["a","b\"c"]`, "Oslo", nil,
		time.Date(2000, 1, 2, 0, 0, 0, 0, time.UTC), time.UnixMilli(1700000000123).UTC(), "GREEN"}
	if !reflect.DeepEqual(row, wantRow) {
		t.Fatalf("row\n%#v\nwant\n%#v", row, wantRow)
	}
	// Only one column wanted: the rest is skipped, and the result is the same.
	if row := decodeAll(t, l, schema.Schema{}, Message{Payload: payload}, "color"); row[0] != "GREEN" {
		t.Fatalf("projected row %v", row)
	}
	// Truncated payloads are errors, not panics.
	d, _ := l.Decoder(schema.Schema{}, []int{0, 9})
	for i := 0; i < len(payload); i++ {
		if err := d.Decode(Message{Payload: payload[:i]}, make([]any, 2)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
	}
}

func TestAvroOlderWriterVersion(t *testing.T) {
	v1 := `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"n","type":"int"}]}`
	v2 := `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"n","type":"long"},{"name":"extra","type":["null","string"],"default":null}]}`
	l, err := FromSchema(schema.Schema{Type: schema.Avro, Data: []byte(v2)})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := avro.Marshal(avro.MustParse(v1), map[string]any{"name": "x", "n": 7})
	if err != nil {
		t.Fatal(err)
	}
	row := decodeAll(t, l, schema.Schema{Type: schema.Avro, Data: []byte(v1)}, Message{Payload: payload}, "n", "extra", "name")
	if !reflect.DeepEqual(row, []any{int64(7), nil, "x"}) {
		t.Fatalf("row %#v", row)
	}
}

func TestJSONDecode(t *testing.T) {
	l, err := FromSchema(schema.Schema{Type: schema.JSON, Data: []byte(userAvro)})
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(` {"skip":{"a":[1,{"b":"}"}]},"name":"b\u00e9\"q","age":7,"score":1e2,"tags":["x"],
		"address":{"zip":12,"city":"Rome"},"born":10957,"seen":1700000000123,"color":"RED","price":"1.50"} `)
	row := decodeAll(t, l, schema.Schema{}, Message{Payload: payload},
		"name", "age", "score", "tags", "address.city", "address.zip", "born", "seen", "color", "price")
	want := []any{"bé\"q", int32(7), 100.0, `["x"]`, "Rome", int64(12), time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.UnixMilli(1700000000123).UTC(), "RED", "1.50"}
	if !reflect.DeepEqual(row, want) {
		t.Fatalf("row\n%#v\nwant\n%#v", row, want)
	}
	// Missing fields and nulls are NULL; a null payload is all NULL.
	row = decodeAll(t, l, schema.Schema{}, Message{Payload: []byte(`{"age":null}`)}, "age", "name", "address.city")
	if !reflect.DeepEqual(row, []any{nil, nil, nil}) {
		t.Fatalf("row %#v", row)
	}
	d, _ := l.Decoder(schema.Schema{}, []int{0})
	for _, bad := range []string{`{"name":`, `{"name":"x"`, `[1]`, `{"name":"x"} x`, `{"a":[}`, `{"name" "x"}`} {
		if err := d.Decode(Message{Payload: []byte(bad)}, make([]any, 1)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestPrimitives(t *testing.T) {
	be := func(n int, v uint64) []byte {
		b := make([]byte, 8)
		binary.BigEndian.PutUint64(b, v)
		return b[8-n:]
	}
	cases := []struct {
		t    schema.Type
		p    []byte
		want any
	}{
		{schema.String, []byte("héllo"), "héllo"},
		{schema.Boolean, []byte{1}, true},
		{schema.Int8, []byte{0xff}, int32(-1)},
		{schema.Int16, be(2, 0xfffe), int32(-2)},
		{schema.Int32, be(4, 70000), int32(70000)},
		{schema.Int64, be(8, 1<<40), int64(1 << 40)},
		{schema.Float, be(4, uint64(math.Float32bits(1.5))), float32(1.5)},
		{schema.Double, be(8, math.Float64bits(-2.25)), -2.25},
		{schema.Timestamp, be(8, 1700000000123), time.UnixMilli(1700000000123).UTC()},
		{schema.Bytes, []byte{0, 1}, []byte{0, 1}},
		{schema.None, []byte("raw"), []byte("raw")},
		{schema.LocalDate, be(8, 1), time.Date(1970, 1, 2, 0, 0, 0, 0, time.UTC)},
		{schema.Instant, append(be(8, 10), be(4, 5)...), time.Unix(10, 5).UTC()},
	}
	for _, c := range cases {
		l, err := FromSchema(schema.Schema{Type: c.t})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Columns) != 1 || l.Columns[0].Name != ColValue {
			t.Fatalf("%s: columns %v", c.t, names(l.Columns))
		}
		row := decodeAll(t, l, schema.Schema{}, Message{Payload: c.p}, ColValue)
		if !reflect.DeepEqual(row[0], c.want) {
			t.Errorf("%s: %#v, want %#v", c.t, row[0], c.want)
		}
	}
	l, _ := FromSchema(schema.Schema{Type: schema.Int64})
	d, _ := l.Decoder(schema.Schema{}, []int{0})
	if err := d.Decode(Message{Payload: []byte{1, 2}}, make([]any, 1)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("short INT64: %v", err)
	}
}

func kvSchema(k, v schema.Schema, encoding string) schema.Schema {
	return schema.Schema{Type: schema.KeyValue, Data: schema.JoinKeyValue(k.Data, v.Data), Properties: map[string]string{
		"key.schema.type": k.Type.String(), "value.schema.type": v.Type.String(), "kv.encoding.type": encoding}}
}

func TestKeyValue(t *testing.T) {
	val := schema.Schema{Type: schema.JSON, Data: []byte(`{"type":"record","name":"V","fields":[{"name":"n","type":"int"}]}`)}
	key := schema.Schema{Type: schema.String}
	for _, enc := range []string{"INLINE", "SEPARATED"} {
		s := kvSchema(key, val, enc)
		l, err := FromSchema(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(l.Columns); !reflect.DeepEqual(got, []string{"n:INTEGER", "__key.__value__:VARCHAR"}) {
			t.Fatalf("%s: columns %v", enc, got)
		}
		m := Message{Payload: []byte(`{"n":3}`), Key: base64.StdEncoding.EncodeToString([]byte("k1")), KeyB64: true}
		if enc == "INLINE" {
			var p []byte
			p = binary.BigEndian.AppendUint32(p, 2)
			p = append(p, "k1"...)
			p = binary.BigEndian.AppendUint32(p, 7)
			m = Message{Payload: append(p, `{"n":3}`...)}
		}
		row := decodeAll(t, l, s, m, "__key.__value__", "n")
		if !reflect.DeepEqual(row, []any{"k1", int32(3)}) {
			t.Fatalf("%s: row %#v", enc, row)
		}
	}
}

func protoSchema(t *testing.T) (schema.Schema, *descriptorpb.FileDescriptorProto) {
	t.Helper()
	lbl := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	typ := func(x descriptorpb.FieldDescriptorProto_Type) *descriptorpb.FieldDescriptorProto_Type { return &x }
	fd := &descriptorpb.FileDescriptorProto{
		Name: proto.String("m.proto"), Package: proto.String("pk"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Inner"), Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("x"), Number: proto.Int32(1), Label: lbl, Type: typ(descriptorpb.FieldDescriptorProto_TYPE_SINT64)},
			}},
			{Name: proto.String("M"), Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("id"), Number: proto.Int32(1), Label: lbl, Type: typ(descriptorpb.FieldDescriptorProto_TYPE_INT32)},
				{Name: proto.String("name"), Number: proto.Int32(2), Label: lbl, Type: typ(descriptorpb.FieldDescriptorProto_TYPE_STRING)},
				{Name: proto.String("vals"), Number: proto.Int32(3), Label: rep, Type: typ(descriptorpb.FieldDescriptorProto_TYPE_DOUBLE)},
				{Name: proto.String("inner"), Number: proto.Int32(4), Label: lbl, Type: typ(descriptorpb.FieldDescriptorProto_TYPE_MESSAGE), TypeName: proto.String(".pk.Inner")},
				{Name: proto.String("ok"), Number: proto.Int32(5), Label: lbl, Type: typ(descriptorpb.FieldDescriptorProto_TYPE_BOOL)},
			}},
		},
	}
	set, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{fd}})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]any{"fileDescriptorSet": set, "rootMessageTypeName": "pk.M", "rootFileDescriptorName": "m.proto"})
	return schema.Schema{Type: schema.ProtobufNative, Data: data}, fd
}

func TestProtobufNative(t *testing.T) {
	s, fdp := protoSchema(t)
	l, err := FromSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(l.Columns); !reflect.DeepEqual(got, []string{"id:INTEGER", "name:VARCHAR", "vals:JSON", "inner.x:BIGINT", "ok:BOOLEAN"}) {
		t.Fatalf("columns %v", got)
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatal(err)
	}
	md := fd.Messages().ByName("M")
	m := dynamicpb.NewMessage(md)
	m.Set(md.Fields().ByName("id"), protoValue(int32(-5)))
	m.Set(md.Fields().ByName("name"), protoValue("n"))
	l2 := m.Mutable(md.Fields().ByName("vals")).List()
	l2.Append(protoValue(1.5))
	l2.Append(protoValue(2.0))
	inner := m.Mutable(md.Fields().ByName("inner")).Message()
	inner.Set(inner.Descriptor().Fields().ByName("x"), protoValue(int64(-9)))
	payload, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	row := decodeAll(t, l, schema.Schema{}, Message{Payload: payload}, "ok", "inner.x", "vals", "name", "id")
	if !reflect.DeepEqual(row, []any{false, int64(-9), "[1.5,2]", "n", int32(-5)}) {
		t.Fatalf("row %#v", row)
	}
	// No inner message: its column is NULL, proto3 scalars are their zero values.
	row = decodeAll(t, l, schema.Schema{}, Message{Payload: nil}, "inner.x", "id", "name")
	if !reflect.DeepEqual(row, []any{nil, int32(0), ""}) {
		t.Fatalf("empty row %#v", row)
	}
}

func mustRat(s string) any {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}
