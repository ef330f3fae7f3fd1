package lakehouse

import (
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/magnetar-io/magnetar/internal/columns"
)

// rowBuffer collects rows for one table schema in Arrow builders, one per partition of the
// table's spec, until they are written as data files. Values are the Go values of
// internal/columns (nil is NULL); a value that does not fit its column's type (a type change
// Iceberg does not allow) is NULL, or the type's zero value in a required column.
type rowBuffer struct {
	schema *arrow.Schema
	parts  map[int32]*partBuilder
	order  []int32 // partitions in the order their first row came
	rows   int
	bytes  int64 // an estimate of the rows' size in memory
	// index by column name of the table schema
	index  map[string]int
	filled []bool // per column, scratch of appendRow

	transform string // the spec's transform of srcSlot's column; "" unpartitioned
	srcSlot   int
	// boundsSlot is __publish_time__'s column (retention keeps rows by it), -1 if absent.
	boundsSlot int
}

// partBuilder holds one partition's rows.
type partBuilder struct {
	b    *array.RecordBuilder
	rows int64
}

// partRows are the rows of one partition taken from a buffer.
type partRows struct {
	key  int32
	rec  arrow.RecordBatch
	rows int64
}

func newRowBuffer(sc *Schema, spec *PartitionSpec) (*rowBuffer, error) {
	as, err := arrowSchema(sc)
	if err != nil {
		return nil, err
	}
	rb := &rowBuffer{schema: as, parts: map[int32]*partBuilder{}, index: map[string]int{}, srcSlot: -1, boundsSlot: -1}
	for i, f := range as.Fields() {
		rb.index[f.Name] = i
	}
	if spec != nil && len(spec.Fields) > 0 {
		pf := spec.Fields[0] // tables Magnetar creates have at most one partition field
		if src, ok := sc.fieldByID(pf.SourceID); ok {
			rb.transform, rb.srcSlot = pf.Transform, rb.index[src.Name]
		}
	}
	if f, ok := sc.field(columns.ColPublishTime); ok {
		rb.boundsSlot = rb.index[f.Name]
	}
	return rb, nil
}

// slot returns the builder index of a column, or -1.
func (rb *rowBuffer) slot(name string) int {
	if i, ok := rb.index[name]; ok {
		return i
	}
	return -1
}

// appendRow appends one row: vals[i] goes to column slots[i]; columns not named get NULL.
func (rb *rowBuffer) appendRow(slots []int, vals []any) {
	if rb.filled == nil {
		rb.filled = make([]bool, len(rb.schema.Fields()))
	}
	var key int32
	for i, s := range slots {
		if t, ok := vals[i].(time.Time); ok && s >= 0 && s == rb.srcSlot && rb.transform != "" {
			key, _ = transformTime(rb.transform, t)
		}
	}
	pb := rb.parts[key]
	if pb == nil {
		pb = &partBuilder{b: array.NewRecordBuilder(memory.DefaultAllocator, rb.schema)}
		rb.parts[key] = pb
		rb.order = append(rb.order, key)
	}
	filled := rb.filled
	clear(filled)
	for i, s := range slots {
		if s < 0 {
			continue
		}
		filled[s] = true
		rb.bytes += rb.appendValue(pb.b, s, vals[i])
	}
	for s, ok := range filled {
		if !ok {
			rb.appendValue(pb.b, s, nil)
		}
	}
	pb.rows++
	rb.rows++
}

func (rb *rowBuffer) appendValue(b *array.RecordBuilder, s int, v any) int64 {
	f := rb.schema.Field(s)
	bld := b.Field(s)
	if v == nil {
		if f.Nullable {
			bld.AppendNull()
		} else {
			bld.AppendEmptyValue()
		}
		return 1
	}
	ok := true
	n := int64(8)
	switch b := bld.(type) {
	case *array.BooleanBuilder:
		x, isBool := v.(bool)
		ok = isBool
		if ok {
			b.Append(x)
		}
	case *array.Int32Builder:
		switch x := v.(type) {
		case int32:
			b.Append(x)
		case int64:
			if ok = x >= math.MinInt32 && x <= math.MaxInt32; ok {
				b.Append(int32(x))
			}
		default:
			ok = false
		}
	case *array.Int64Builder:
		switch x := v.(type) {
		case int64:
			b.Append(x)
		case int32:
			b.Append(int64(x))
		default:
			ok = false
		}
	case *array.Float32Builder:
		switch x := v.(type) {
		case float32:
			b.Append(x)
		default:
			ok = false
		}
	case *array.Float64Builder:
		switch x := v.(type) {
		case float64:
			b.Append(x)
		case float32:
			b.Append(float64(x))
		case int32:
			b.Append(float64(x))
		case int64:
			b.Append(float64(x))
		default:
			ok = false
		}
	case *array.StringBuilder:
		switch x := v.(type) {
		case string:
			b.Append(x)
			n += int64(len(x))
		case []byte:
			b.Append(string(x))
			n += int64(len(x))
		default:
			b.Append(fmt.Sprint(x))
		}
	case *array.BinaryBuilder:
		switch x := v.(type) {
		case []byte:
			b.Append(x)
			n += int64(len(x))
		case string:
			b.AppendString(x)
			n += int64(len(x))
		default:
			ok = false
		}
	case *array.TimestampBuilder:
		x, isTime := v.(time.Time)
		if ok = isTime; ok {
			b.Append(arrow.Timestamp(x.UnixMicro()))
		}
	case *array.Date32Builder:
		x, isTime := v.(time.Time)
		if ok = isTime; ok {
			b.Append(arrow.Date32FromTime(x))
		}
	case *array.Time64Builder:
		x, isDur := v.(time.Duration)
		if ok = isDur; ok {
			b.Append(arrow.Time64(x.Microseconds()))
		}
	case *array.Decimal128Builder:
		dt := f.Type.(*arrow.Decimal128Type)
		x, isStr := v.(string)
		if ok = isStr; ok {
			d, err := decimal128.FromString(x, dt.Precision, dt.Scale)
			if ok = err == nil; ok {
				b.Append(d)
			}
		}
	default:
		ok = false
	}
	if !ok {
		if f.Nullable {
			bld.AppendNull()
		} else {
			bld.AppendEmptyValue()
		}
	}
	return n
}

// take returns the buffered rows, partition by partition, and empties the buffer (nil
// when empty); the caller releases the records.
func (rb *rowBuffer) take() []partRows {
	if rb.rows == 0 {
		return nil
	}
	var out []partRows
	for _, k := range rb.order {
		pb := rb.parts[k]
		out = append(out, partRows{key: k, rec: pb.b.NewRecordBatch(), rows: pb.rows})
		pb.b.Release()
	}
	clear(rb.parts)
	rb.order = rb.order[:0]
	rb.rows, rb.bytes = 0, 0
	return out
}

func (rb *rowBuffer) release() {
	for _, pb := range rb.parts {
		pb.b.Release()
	}
	clear(rb.parts)
	rb.order = rb.order[:0]
}
