package lakehouse

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Column metrics of a data file, as Iceberg's manifests carry them (value_counts,
// null_value_counts, nan_value_counts, lower_bounds, upper_bounds): engines skip files
// whose bounds cannot match a filter without opening them. Bounds are the spec's
// single-value serialization (appendix D); strings and binary are truncated to 16
// characters or bytes as Iceberg's default metrics mode, truncate(16), does, the upper
// bound rounded up so that it still bounds.

// metricsTruncate is the length string and binary bounds are cut to.
const metricsTruncate = 16

// countKV is an entry of a count map (value_counts and the like).
type countKV struct {
	Key   int32 `avro:"key"`
	Value int64 `avro:"value"`
}

// columnMetrics fills df's metrics from the record it was written from: every column with
// a field id gets its value and null counts, float columns their NaN count, and columns
// with a non-null value (not NaN) their bounds.
func columnMetrics(df *dataFile, rec arrow.RecordBatch) {
	var values, nulls, nans []countKV
	var lower, upper []boundKV
	for i, f := range rec.Schema().Fields() {
		id := fieldIDOf(f)
		if id < 0 {
			continue
		}
		col := rec.Column(i)
		values = append(values, countKV{int32(id), int64(col.Len())})
		nulls = append(nulls, countKV{int32(id), int64(col.NullN())})
		lo, hi, nan, isFloat := columnBounds(col)
		if isFloat {
			nans = append(nans, countKV{int32(id), nan})
		}
		if lo != nil {
			lower = append(lower, boundKV{int32(id), lo})
		}
		if hi != nil {
			upper = append(upper, boundKV{int32(id), hi})
		}
	}
	df.ValueCounts, df.NullCounts, df.NaNCounts = &values, &nulls, &nans
	df.LowerBounds, df.UpperBounds = &lower, &upper
}

// columnBounds returns the serialized bounds of col's non-null values (nil when it has
// none, or, for an upper bound, when truncation leaves none), and for float columns the
// count of NaNs, which bounds leave out.
func columnBounds(col arrow.Array) (lo, hi []byte, nans int64, isFloat bool) {
	n := col.Len()
	switch a := col.(type) {
	case *array.Boolean:
		lo, hi = minMax(n, a.IsNull, a.Value, func(x, y bool) bool { return !x && y }, func(v bool) []byte {
			if v {
				return []byte{1}
			}
			return []byte{0}
		})
	case *array.Int32:
		lo, hi = minMax(n, a.IsNull, a.Value, less[int32], func(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) })
	case *array.Date32:
		lo, hi = minMax(n, a.IsNull, a.Value, less[arrow.Date32], func(v arrow.Date32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) })
	case *array.Int64:
		lo, hi = minMax(n, a.IsNull, a.Value, less[int64], longBound)
	case *array.Timestamp: // microseconds (arrowType's unit)
		lo, hi = minMax(n, a.IsNull, a.Value, less[arrow.Timestamp], func(v arrow.Timestamp) []byte { return longBound(int64(v)) })
	case *array.Time64: // microseconds
		lo, hi = minMax(n, a.IsNull, a.Value, less[arrow.Time64], func(v arrow.Time64) []byte { return longBound(int64(v)) })
	case *array.Float32:
		nans = countNaN(n, a.IsNull, func(i int) bool { return math.IsNaN(float64(a.Value(i))) })
		skip := func(i int) bool { return a.IsNull(i) || math.IsNaN(float64(a.Value(i))) }
		lo, hi = minMax(n, skip, a.Value, floatLess[float32], func(v float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)) })
		isFloat = true
	case *array.Float64:
		nans = countNaN(n, a.IsNull, func(i int) bool { return math.IsNaN(a.Value(i)) })
		skip := func(i int) bool { return a.IsNull(i) || math.IsNaN(a.Value(i)) }
		lo, hi = minMax(n, skip, a.Value, floatLess[float64], func(v float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)) })
		isFloat = true
	case *array.String:
		lo, hi = minMax(n, a.IsNull, a.Value, less[string], func(v string) []byte { return []byte(v) })
		lo, hi = truncateString(lo, false), truncateString(hi, true)
	case *array.Binary:
		lo, hi = minMax(n, a.IsNull, a.Value, func(x, y []byte) bool { return bytes.Compare(x, y) < 0 }, bytes.Clone)
		lo, hi = truncateBinary(lo, false), truncateBinary(hi, true)
	case *array.Decimal128:
		lo, hi = minMax(n, a.IsNull, a.Value, decimal128.Num.Less, decimalBound)
	}
	return lo, hi, nans, isFloat
}

func less[T int32 | int64 | string | arrow.Date32 | arrow.Timestamp | arrow.Time64](x, y T) bool {
	return x < y
}

// floatLess orders -0 before +0, as Iceberg's comparators do (NaN never gets here).
func floatLess[T float32 | float64](x, y T) bool {
	if x == y {
		return math.Signbit(float64(x)) && !math.Signbit(float64(y))
	}
	return x < y
}

// minMax is the serialized least and greatest of the values not skipped.
func minMax[T any](n int, skip func(int) bool, value func(int) T, less func(T, T) bool, ser func(T) []byte) (lo, hi []byte) {
	var mn, mx T
	seen := false
	for i := range n {
		if skip(i) {
			continue
		}
		v := value(i)
		if !seen {
			mn, mx, seen = v, v, true
			continue
		}
		if less(v, mn) {
			mn = v
		}
		if less(mx, v) {
			mx = v
		}
	}
	if !seen {
		return nil, nil
	}
	return ser(mn), ser(mx)
}

func countNaN(n int, isNull func(int) bool, isNaN func(int) bool) int64 {
	var c int64
	for i := range n {
		if !isNull(i) && isNaN(i) {
			c++
		}
	}
	return c
}

// decimalBound is a decimal's unscaled value as the shortest big-endian two's complement.
func decimalBound(v decimal128.Num) []byte {
	x := v.BigInt()
	size := 1
	for {
		lim := new(big.Int).Lsh(big.NewInt(1), uint(8*size-1))
		if x.Cmp(lim) < 0 && x.Cmp(new(big.Int).Neg(lim)) >= 0 {
			break
		}
		size++
	}
	if x.Sign() < 0 {
		x = new(big.Int).Add(x, new(big.Int).Lsh(big.NewInt(1), uint(8*size)))
	}
	return x.FillBytes(make([]byte, size))
}

// truncateString cuts a UTF-8 bound to metricsTruncate characters; an upper bound then
// has its last character incremented (dropping characters that cannot be), nil if none
// can.
func truncateString(b []byte, upper bool) []byte {
	if b == nil || utf8.RuneCount(b) <= metricsTruncate {
		return b
	}
	rs := []rune(string(b))[:metricsTruncate]
	if !upper {
		return []byte(string(rs))
	}
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i] + 1
		if r >= 0xD800 && r <= 0xDFFF { // surrogates are not characters
			r = 0xE000
		}
		if r <= utf8.MaxRune {
			rs[i] = r
			return []byte(string(rs[:i+1]))
		}
	}
	return nil
}

// truncateBinary is truncateString for bytes.
func truncateBinary(b []byte, upper bool) []byte {
	if b == nil || len(b) <= metricsTruncate {
		return b
	}
	b = bytes.Clone(b[:metricsTruncate])
	if !upper {
		return b
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xFF {
			b[i]++
			return b[:i+1]
		}
	}
	return nil
}
