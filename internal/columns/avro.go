package columns

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/magnetar-io/magnetar/internal/schema"
)

// AVRO and JSON schemas are Avro record definitions. The definition is parsed with
// hamba/avro (a fresh name cache each time: two versions may define the same record name
// differently); payloads are decoded by our own walk over it, so unwanted fields are
// skipped by length instead of being materialized.

// avroFormat is an AVRO (binary payloads) or JSON (JSON text payloads) schema.
type avroFormat struct {
	isJSON bool
	root   *avro.RecordSchema
}

func parseAvroRecord(data []byte) (*avro.RecordSchema, error) {
	s, err := avro.ParseBytesWithCache(data, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("%w: Avro definition: %w", ErrUnsupported, err)
	}
	rec, ok := deref(s).(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("%w: Avro definition is a %s, not a record", ErrUnsupported, s.Type())
	}
	return rec, nil
}

func newAvroFormat(data []byte, isJSON bool) (format, []Column, error) {
	rec, err := parseAvroRecord(data)
	if err != nil {
		return nil, nil, err
	}
	var cols []Column
	avroColumns(rec, nil, 0, &cols)
	return &avroFormat{isJSON: isJSON, root: rec}, cols, nil
}

// deref resolves a named reference.
func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// nonNull returns T for ["null", T] (and T itself otherwise).
func nonNull(s avro.Schema) avro.Schema {
	s = deref(s)
	if u, ok := s.(*avro.UnionSchema); ok && u.Nullable() && len(u.Types()) == 2 {
		for _, t := range u.Types() {
			if t.Type() != avro.Null {
				return deref(t)
			}
		}
	}
	return s
}

func avroColumns(rec *avro.RecordSchema, path []string, depth int, out *[]Column) {
	for _, f := range rec.Fields() {
		p := append(append([]string(nil), path...), f.Name())
		t := nonNull(f.Type())
		if sub, ok := t.(*avro.RecordSchema); ok && depth+1 < MaxDepth {
			avroColumns(sub, p, depth+1, out)
			continue
		}
		c := Column{Name: strings.Join(p, "."), Nullable: true, path: p}
		c.Kind, c.Precision, c.Scale = avroKind(t)
		*out = append(*out, c)
	}
}

// avroKind is the column kind of a (non-null-union) Avro type.
func avroKind(s avro.Schema) (Kind, int, int) {
	s = deref(s)
	logical := func() avro.LogicalSchema {
		if l, ok := s.(avro.LogicalTypeSchema); ok {
			return l.Logical()
		}
		return nil
	}()
	if logical != nil {
		switch logical.Type() {
		case avro.Date:
			return Date, 0, 0
		case avro.TimeMillis, avro.TimeMicros:
			return Time, 0, 0
		case avro.TimestampMillis, avro.TimestampMicros, avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			return Timestamp, 0, 0
		case avro.Decimal:
			if d, ok := logical.(*avro.DecimalLogicalSchema); ok {
				return Decimal, d.Precision(), d.Scale()
			}
		}
	}
	switch s.Type() {
	case avro.Boolean:
		return Bool, 0, 0
	case avro.Int:
		return Int32, 0, 0
	case avro.Long:
		return Int64, 0, 0
	case avro.Float:
		return Float32, 0, 0
	case avro.Double:
		return Float64, 0, 0
	case avro.String, avro.Enum, avro.Null:
		return String, 0, 0
	case avro.Bytes, avro.Fixed:
		return Bytes, 0, 0
	}
	return JSON, 0, 0 // arrays, maps, unions of several types, deep records
}

// want is the plan of one record level: which fields fill which slots.
type want struct {
	leaf map[string]leafWant
	sub  map[string]*want
}

type leafWant struct {
	slot int
	col  Column
}

// wantTree arranges the wanted columns by their path.
func wantTree(cols []Column, slots []int) *want {
	root := &want{}
	for i, c := range cols {
		w := root
		for _, name := range c.path[:len(c.path)-1] {
			if w.sub == nil {
				w.sub = map[string]*want{}
			}
			n := w.sub[name]
			if n == nil {
				n = &want{}
				w.sub[name] = n
			}
			w = n
		}
		if w.leaf == nil {
			w.leaf = map[string]leafWant{}
		}
		w.leaf[c.path[len(c.path)-1]] = leafWant{slot: slots[i], col: c}
	}
	return root
}

func (f *avroFormat) decoder(writer schema.Schema, cols []Column, slots []int) (payloadDecoder, error) {
	tree := wantTree(cols, slots)
	if f.isJSON {
		return &jsonDecoder{tree: tree}, nil
	}
	rec := f.root
	if len(writer.Data) > 0 {
		r, err := parseAvroRecord(writer.Data)
		if err != nil {
			return nil, err
		}
		rec = r
	}
	return &avroDecoder{op: compileRecord(rec, tree)}, nil
}

// avroReader reads Avro binary encoding.
type avroReader struct {
	b   []byte
	off int
}

func (r *avroReader) fail(what string) error {
	return fmt.Errorf("%w: Avro %s at byte %d", ErrMalformed, what, r.off)
}

func (r *avroReader) long() (int64, error) {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		return 0, r.fail("varint")
	}
	r.off += n
	return int64(v>>1) ^ -int64(v&1), nil
}

func (r *avroReader) take(n int64) ([]byte, error) {
	if n < 0 || n > int64(len(r.b)-r.off) {
		return nil, r.fail("length " + strconv.FormatInt(n, 10))
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

func (r *avroReader) bytes() ([]byte, error) {
	n, err := r.long()
	if err != nil {
		return nil, err
	}
	return r.take(n)
}

// avroOp decodes (or skips) one value.
type avroOp func(r *avroReader, dst []any) error

type avroDecoder struct{ op avroOp }

func (d *avroDecoder) decode(payload []byte, dst []any) error {
	r := &avroReader{b: payload}
	if err := d.op(r, dst); err != nil {
		return err
	}
	if r.off != len(payload) {
		return fmt.Errorf("%w: Avro record ends at byte %d of %d", ErrMalformed, r.off, len(payload))
	}
	return nil
}

// compileRecord returns the op of a record whose wanted fields are tree.
func compileRecord(rec *avro.RecordSchema, tree *want) avroOp {
	ops := make([]avroOp, 0, len(rec.Fields()))
	for _, f := range rec.Fields() {
		name := f.Name()
		switch {
		case tree != nil && tree.sub[name] != nil && isRecordOrNullable(f.Type()):
			ops = append(ops, compileNested(f.Type(), tree.sub[name]))
		case tree != nil && tree.leaf != nil && hasLeaf(tree, name):
			lw := tree.leaf[name]
			ops = append(ops, compileLeaf(f.Type(), lw))
		default:
			ops = append(ops, compileSkip(f.Type(), 0))
		}
	}
	return func(r *avroReader, dst []any) error {
		for _, op := range ops {
			if err := op(r, dst); err != nil {
				return err
			}
		}
		return nil
	}
}

func hasLeaf(w *want, name string) bool { _, ok := w.leaf[name]; return ok }

func isRecordOrNullable(s avro.Schema) bool {
	_, ok := nonNull(s).(*avro.RecordSchema)
	return ok
}

// compileNested decodes a (maybe nullable) record whose wanted fields are tree; a null
// leaves them NULL.
func compileNested(s avro.Schema, tree *want) avroOp {
	s = deref(s)
	if u, ok := s.(*avro.UnionSchema); ok {
		branches := make([]avroOp, len(u.Types()))
		for i, t := range u.Types() {
			if rec, ok := deref(t).(*avro.RecordSchema); ok {
				branches[i] = compileRecord(rec, tree)
			} else {
				branches[i] = compileSkip(t, 0)
			}
		}
		return unionOp(branches)
	}
	return compileRecord(s.(*avro.RecordSchema), tree)
}

func unionOp(branches []avroOp) avroOp {
	return func(r *avroReader, dst []any) error {
		i, err := r.long()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(branches)) {
			return r.fail("union branch " + strconv.FormatInt(i, 10))
		}
		return branches[i](r, dst)
	}
}

// compileLeaf decodes a value into its column's slot.
func compileLeaf(s avro.Schema, lw leafWant) avroOp {
	s = deref(s)
	if u, ok := s.(*avro.UnionSchema); ok {
		if t := nonNull(u); t != avro.Schema(u) {
			branches := make([]avroOp, len(u.Types()))
			for i, b := range u.Types() {
				if b.Type() == avro.Null {
					branches[i] = func(*avroReader, []any) error { return nil }
				} else {
					branches[i] = compileLeaf(b, lw)
				}
			}
			return unionOp(branches)
		}
	}
	if lw.col.Kind == JSON {
		return func(r *avroReader, dst []any) error {
			b, err := appendAvroJSON(nil, s, r, 0)
			if err != nil {
				return err
			}
			dst[lw.slot] = string(b)
			return nil
		}
	}
	return func(r *avroReader, dst []any) error {
		v, err := readAvroScalar(s, r)
		if err != nil {
			return err
		}
		dst[lw.slot] = coerce(v, lw.col)
		return nil
	}
}

// readAvroScalar reads a non-container value as a Go value of its logical meaning.
func readAvroScalar(s avro.Schema, r *avroReader) (any, error) {
	var logical avro.LogicalType
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		logical = l.Logical().Type()
	}
	switch s.Type() {
	case avro.Null:
		return nil, nil
	case avro.Boolean:
		b, err := r.take(1)
		if err != nil {
			return nil, err
		}
		return b[0] != 0, nil
	case avro.Int, avro.Long:
		v, err := r.long()
		if err != nil {
			return nil, err
		}
		switch logical {
		case avro.Date:
			return time.Unix(v*86400, 0).UTC(), nil
		case avro.TimeMillis:
			return time.Duration(v) * time.Millisecond, nil
		case avro.TimeMicros:
			return time.Duration(v) * time.Microsecond, nil
		case avro.TimestampMillis, avro.LocalTimestampMillis:
			return time.UnixMilli(v).UTC(), nil
		case avro.TimestampMicros, avro.LocalTimestampMicros:
			return time.UnixMicro(v).UTC(), nil
		}
		if s.Type() == avro.Int {
			return int32(v), nil
		}
		return v, nil
	case avro.Float:
		b, err := r.take(4)
		if err != nil {
			return nil, err
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(b)), nil
	case avro.Double:
		b, err := r.take(8)
		if err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	case avro.String:
		b, err := r.bytes()
		if err != nil {
			return nil, err
		}
		return string(b), nil
	case avro.Bytes, avro.Fixed:
		var b []byte
		var err error
		if fx, ok := s.(*avro.FixedSchema); ok {
			b, err = r.take(int64(fx.Size()))
		} else {
			b, err = r.bytes()
		}
		if err != nil {
			return nil, err
		}
		if logical == avro.Decimal {
			if d, ok := s.(avro.LogicalTypeSchema).Logical().(*avro.DecimalLogicalSchema); ok {
				return decimalText(b, d.Scale()), nil
			}
		}
		return append([]byte(nil), b...), nil
	case avro.Enum:
		i, err := r.long()
		if err != nil {
			return nil, err
		}
		syms := s.(*avro.EnumSchema).Symbols()
		if i < 0 || i >= int64(len(syms)) {
			return nil, r.fail("enum index " + strconv.FormatInt(i, 10))
		}
		return syms[i], nil
	}
	// A container where a scalar column is wanted (the type changed across versions):
	// render it as JSON text.
	b, err := appendAvroJSON(nil, s, r, 0)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// decimalText renders a big-endian two's-complement unscaled value with scale digits.
func decimalText(b []byte, scale int) string {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(len(b))*8))
	}
	s := n.String()
	if scale <= 0 {
		return s
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for len(s) <= scale {
		s = "0" + s
	}
	s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	if neg {
		s = "-" + s
	}
	return s
}

// maxNesting bounds how deep containers nest in one value (recursive schemas).
const maxNesting = 64

// blockCount reads an array or map block header; it returns 0 at the end.
func blockCount(r *avroReader) (int64, error) {
	n, err := r.long()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		n = -n
		if _, err := r.long(); err != nil { // block size in bytes
			return 0, err
		}
	}
	// Every item takes at least one byte unless its type is null; bound the count so a
	// forged header cannot loop for long.
	if n > int64(len(r.b)-r.off)+1<<16 {
		return 0, r.fail("block count " + strconv.FormatInt(n, 10))
	}
	return n, nil
}

// compileSkip returns an op that reads past a value without keeping it.
func compileSkip(s avro.Schema, depth int) avroOp {
	return func(r *avroReader, _ []any) error { return skipAvro(s, r, depth) }
}

func skipAvro(s avro.Schema, r *avroReader, depth int) error {
	if depth > maxNesting {
		return r.fail("nesting")
	}
	s = deref(s)
	switch t := s.(type) {
	case *avro.RecordSchema:
		for _, f := range t.Fields() {
			if err := skipAvro(f.Type(), r, depth+1); err != nil {
				return err
			}
		}
		return nil
	case *avro.UnionSchema:
		i, err := r.long()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(t.Types())) {
			return r.fail("union branch " + strconv.FormatInt(i, 10))
		}
		return skipAvro(t.Types()[i], r, depth+1)
	case *avro.ArraySchema, *avro.MapSchema:
		for {
			n, err := r.long()
			if err != nil {
				return err
			}
			if n == 0 {
				return nil
			}
			if n < 0 { // the block's byte size lets us jump over it
				size, err := r.long()
				if err != nil {
					return err
				}
				if _, err := r.take(size); err != nil {
					return err
				}
				continue
			}
			if n > int64(len(r.b)-r.off)+1<<16 {
				return r.fail("block count " + strconv.FormatInt(n, 10))
			}
			for ; n > 0; n-- {
				if m, ok := t.(*avro.MapSchema); ok {
					if _, err := r.bytes(); err != nil {
						return err
					}
					if err := skipAvro(m.Values(), r, depth+1); err != nil {
						return err
					}
				} else if err := skipAvro(t.(*avro.ArraySchema).Items(), r, depth+1); err != nil {
					return err
				}
			}
		}
	case *avro.FixedSchema:
		_, err := r.take(int64(t.Size()))
		return err
	}
	switch s.Type() {
	case avro.Null:
		return nil
	case avro.Boolean:
		_, err := r.take(1)
		return err
	case avro.Int, avro.Long, avro.Enum:
		_, err := r.long()
		return err
	case avro.Float:
		_, err := r.take(4)
		return err
	case avro.Double:
		_, err := r.take(8)
		return err
	case avro.String, avro.Bytes:
		_, err := r.bytes()
		return err
	}
	return fmt.Errorf("%w: Avro type %s", ErrUnsupported, s.Type())
}

// appendAvroJSON renders one value as JSON text (bytes and fixed as base64 strings, unions
// as their branch's value, enums as their symbol).
func appendAvroJSON(dst []byte, s avro.Schema, r *avroReader, depth int) ([]byte, error) {
	if depth > maxNesting {
		return nil, r.fail("nesting")
	}
	s = deref(s)
	switch t := s.(type) {
	case *avro.RecordSchema:
		dst = append(dst, '{')
		for i, f := range t.Fields() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, f.Name())
			dst = append(dst, ':')
			var err error
			if dst, err = appendAvroJSON(dst, f.Type(), r, depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case *avro.UnionSchema:
		i, err := r.long()
		if err != nil {
			return nil, err
		}
		if i < 0 || i >= int64(len(t.Types())) {
			return nil, r.fail("union branch " + strconv.FormatInt(i, 10))
		}
		return appendAvroJSON(dst, t.Types()[i], r, depth+1)
	case *avro.ArraySchema, *avro.MapSchema:
		m, isMap := t.(*avro.MapSchema)
		open, close := byte('['), byte(']')
		if isMap {
			open, close = '{', '}'
		}
		dst = append(dst, open)
		first := true
		for {
			n, err := blockCount(r)
			if err != nil {
				return nil, err
			}
			if n == 0 {
				return append(dst, close), nil
			}
			for ; n > 0; n-- {
				if !first {
					dst = append(dst, ',')
				}
				first = false
				if isMap {
					k, err := r.bytes()
					if err != nil {
						return nil, err
					}
					dst = appendJSONString(dst, string(k))
					dst = append(dst, ':')
					if dst, err = appendAvroJSON(dst, m.Values(), r, depth+1); err != nil {
						return nil, err
					}
				} else if dst, err = appendAvroJSON(dst, t.(*avro.ArraySchema).Items(), r, depth+1); err != nil {
					return nil, err
				}
			}
		}
	}
	v, err := readAvroScalar(s, r)
	if err != nil {
		return nil, err
	}
	return appendJSONValue(dst, v), nil
}

// appendJSONValue renders a scalar Go value as JSON.
func appendJSONValue(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, x)
	case int32:
		return strconv.AppendInt(dst, int64(x), 10)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case float32:
		return appendJSONFloat(dst, float64(x), 32)
	case float64:
		return appendJSONFloat(dst, x, 64)
	case string:
		return appendJSONString(dst, x)
	case []byte:
		return appendJSONString(dst, base64.StdEncoding.EncodeToString(x))
	case time.Time:
		return appendJSONString(dst, x.Format(time.RFC3339Nano))
	case time.Duration:
		return strconv.AppendInt(dst, x.Milliseconds(), 10)
	}
	return appendJSONString(dst, fmt.Sprint(v))
}

func appendJSONFloat(dst []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}
