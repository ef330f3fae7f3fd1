package lakehouse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/magnetar-io/magnetar/internal/columns"
	"github.com/magnetar-io/magnetar/internal/testenv"
)

// metricsSchema has a column of every primitive type this package writes.
func metricsSchema() *Schema {
	return &Schema{ID: 0, Fields: []Field{
		{ID: 1, Name: columns.ColPublishTime, Required: true, Type: typeTimestampTz},
		{ID: 2, Name: "b", Type: typeBoolean}, {ID: 3, Name: "i", Type: typeInt}, {ID: 4, Name: "l", Type: typeLong},
		{ID: 5, Name: "f", Type: typeFloat}, {ID: 6, Name: "d", Type: typeDouble}, {ID: 7, Name: "s", Type: typeString},
		{ID: 8, Name: "bin", Type: typeBinary}, {ID: 9, Name: "date", Type: typeDate}, {ID: 10, Name: "time", Type: typeTime},
		{ID: 11, Name: "dec", Type: decimalType(10, 2)},
	}}
}

// TestColumnMetrics: the counts and bounds of each column type, the bounds decoded by
// iceberg-go's single-value deserialization (LiteralFromBytes) rather than ours.
func TestColumnMetrics(t *testing.T) {
	sc := metricsSchema()
	rb, err := newRowBuffer(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	slots := make([]int, len(sc.Fields))
	for i, f := range sc.Fields {
		slots[i] = rb.slot(f.Name)
	}
	t0 := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	day := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	a15 := strings.Repeat("a", 15)
	for _, r := range [][]any{
		{t0.Add(time.Minute), false, int32(7), int64(-5), float32(math.NaN()), math.Copysign(0, -1), a15 + "yz", append([]byte{5}, bytes.Repeat([]byte{0xFF}, 16)...), day, 3 * time.Second, "12.34"},
		{t0, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
		{t0.Add(3 * time.Minute), false, int32(-3), int64(1 << 40), float32(math.NaN()), 0.0, a15 + "zz", append([]byte{1}, bytes.Repeat([]byte{0xFF}, 16)...), day.AddDate(0, 0, -400), time.Hour, "-1.28"},
	} {
		rb.appendRow(slots, r)
	}
	parts := rb.take()
	var df dataFile
	columnMetrics(&df, parts[0].rec)
	parts[0].rec.Release()

	counts := func(kvs *[]countKV) string {
		var b strings.Builder
		for _, kv := range *kvs {
			fmt.Fprintf(&b, "%d:%d ", kv.Key, kv.Value)
		}
		return b.String()
	}
	if got := counts(df.ValueCounts); got != "1:3 2:3 3:3 4:3 5:3 6:3 7:3 8:3 9:3 10:3 11:3 " {
		t.Errorf("value counts %s", got)
	}
	if got := counts(df.NullCounts); got != "1:0 2:1 3:1 4:1 5:1 6:1 7:1 8:1 9:1 10:1 11:1 " {
		t.Errorf("null counts %s", got)
	}
	if got := counts(df.NaNCounts); got != "5:2 6:0 " {
		t.Errorf("NaN counts %s", got)
	}
	types := map[int]iceberg.Type{1: iceberg.PrimitiveTypes.TimestampTz, 2: iceberg.PrimitiveTypes.Bool, 3: iceberg.PrimitiveTypes.Int32,
		4: iceberg.PrimitiveTypes.Int64, 5: iceberg.PrimitiveTypes.Float32, 6: iceberg.PrimitiveTypes.Float64, 7: iceberg.PrimitiveTypes.String,
		8: iceberg.PrimitiveTypes.Binary, 9: iceberg.PrimitiveTypes.Date, 10: iceberg.PrimitiveTypes.Time, 11: iceberg.DecimalTypeOf(10, 2)}
	lits := func(kvs *[]boundKV) map[int]string {
		out := map[int]string{}
		for _, kv := range *kvs {
			lit, err := iceberg.LiteralFromBytes(types[int(kv.Key)], kv.Value)
			if err != nil {
				t.Fatalf("field %d bound %x: %v", kv.Key, kv.Value, err)
			}
			out[int(kv.Key)] = lit.String()
			if b, ok := lit.Any().([]byte); ok {
				out[int(kv.Key)] = fmt.Sprintf("%x", b)
			}
		}
		return out
	}
	lo, hi := lits(df.LowerBounds), lits(df.UpperBounds)
	for id, want := range map[int][2]string{
		1:  {"2026-12-02 15:00:00.000000", "2026-12-02 15:03:00.000000"},
		2:  {"false", "false"},
		3:  {"-3", "7"},
		4:  {"-5", "1099511627776"},
		6:  {"-0", "0"},                             // -0 sorts first
		7:  {a15 + "y", a15 + "{"},                  // cut to 16 characters, the upper one rounded up
		8:  {"01" + strings.Repeat("ff", 15), "06"}, // 16 bytes; rounding up carries over the 0xFF bytes
		9:  {"2025-10-28", "2026-12-02"},
		10: {"00:00:03.000000", "01:00:00.000000"},
		11: {"-1.28", "12.34"}, // -128: the one byte 0x80
	} {
		if lo[id] != want[0] || hi[id] != want[1] {
			t.Errorf("field %d: bounds %q..%q, want %q..%q", id, lo[id], hi[id], want[0], want[1])
		}
	}
	if _, ok := lo[5]; ok { // only NaNs: no bounds
		t.Errorf("bounds of an all-NaN column: %q..%q", lo[5], hi[5])
	}
	if b, _ := bound(df.LowerBounds, 11); !bytes.Equal(b, []byte{0x80}) {
		t.Errorf("decimal lower bound %x, want the shortest two's complement 80", b)
	}
	// Bounds that cannot be rounded up after the cut: none.
	if b := truncateString([]byte(strings.Repeat("\U0010FFFF", 17)), true); b != nil {
		t.Errorf("upper bound of 17 U+10FFFF: %q", b)
	}
	if b := truncateString([]byte(strings.Repeat("a", 15)+"\U0010FFFF\U0010FFFF"), true); string(b) != strings.Repeat("a", 14)+"b" {
		t.Errorf("upper bound dropping U+10FFFF: %q", b)
	}
	if b := truncateBinary(bytes.Repeat([]byte{0xFF}, 17), true); b != nil {
		t.Errorf("upper bound of 17 0xFF: %x", b)
	}
}

// prunableTable writes a table of three data files, file k with i in [10k, 10k+4], s
// "k-" and 20 to 24 x's, l all NULL, all in one hour; it returns the metadata location.
func prunableTable(t *testing.T) string {
	ctx := context.Background()
	sc := metricsSchema()
	spec, err := partitionSpec(sc, "hour")
	if err != nil {
		t.Fatal(err)
	}
	loc := "file://" + t.TempDir() + "/t"
	md := newMetadata(*sc, spec, loc, nil)
	cat := &Catalog{io: localIO{}}
	t0 := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	for k := range 3 {
		rb, err := newRowBuffer(sc, &spec)
		if err != nil {
			t.Fatal(err)
		}
		for j := range 5 {
			rb.appendRow([]int{rb.slot(columns.ColPublishTime), rb.slot("i"), rb.slot("s")},
				[]any{t0.Add(time.Duration(k*5+j) * time.Second), int32(10*k + j), fmt.Sprintf("%d-%s", k, strings.Repeat("x", 20+j))})
		}
		dfs, err := writeDataFiles(ctx, cat.io, loc, &spec, rb.take())
		if err != nil {
			t.Fatal(err)
		}
		if md, _, err = cat.appendFiles(ctx, md, dfs, nil); err != nil {
			t.Fatal(err)
		}
	}
	mloc, err := cat.writeMetadata(ctx, md, 1)
	if err != nil {
		t.Fatal(err)
	}
	return mloc
}

// TestScanPrunesByColumn: prunableTable read back with iceberg-go: a row filter on a
// non-time column plans only the files whose metrics can match, and the rows read are the
// filter's.
func TestScanPrunesByColumn(t *testing.T) {
	ctx := context.Background()
	mloc := prunableTable(t)
	tbl, err := table.NewFromLocation(ctx, table.Identifier{"ns", "t"}, mloc,
		func(context.Context) (iceio.IO, error) { return iceio.LocalFS{}, nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		filter iceberg.BooleanExpression
		files  int
		rows   int64
	}{
		{iceberg.AlwaysTrue{}, 3, 15},
		{iceberg.GreaterThanEqual(iceberg.Reference("i"), int32(20)), 1, 5},
		{iceberg.LessThan(iceberg.Reference("i"), int32(12)), 2, 7},
		{iceberg.EqualTo(iceberg.Reference("i"), int32(7)), 0, 0}, // between files 0 and 1
		{iceberg.EqualTo(iceberg.Reference("s"), "1-"+strings.Repeat("x", 22)), 1, 1},
		{iceberg.GreaterThanEqual(iceberg.Reference("s"), "2-"), 1, 5},
		{iceberg.IsNull(iceberg.Reference("l")), 3, 15}, // all NULL
		{iceberg.NotNull(iceberg.Reference("l")), 0, 0}, // null counts prune
	} {
		scan := tbl.Scan(table.WithRowFilter(c.filter))
		tasks, err := scan.PlanFiles(ctx)
		if err != nil {
			t.Fatalf("%v: %v", c.filter, err)
		}
		if len(tasks) != c.files {
			t.Errorf("%v: %d files planned, want %d", c.filter, len(tasks), c.files)
		}
		at, err := scan.ToArrowTable(ctx)
		if err != nil {
			t.Fatalf("%v: %v", c.filter, err)
		}
		if at.NumRows() != c.rows {
			t.Errorf("%v: %d rows, want %d", c.filter, at.NumRows(), c.rows)
		}
		at.Release()
	}
}

// TestPyIcebergPrunesByColumn: the same pruning seen by PyIceberg (from PyPI, the venv of
// tests/e2e's lakehouse suite), reading the table's metadata file without a catalog.
func TestPyIcebergPrunesByColumn(t *testing.T) {
	if os.Getenv("MAGNETAR_LAKEHOUSE_E2E") == "" {
		t.Skip("runs with `make lakehouse-e2e` (MAGNETAR_LAKEHOUSE_E2E=1): it needs PyIceberg from PyPI")
	}
	const pyicebergVersion = "0.12.0" // tests/e2e/lakehouse_test.go's: one venv for both
	python := testenv.PythonVenv(t, "pyiceberg", "venv-"+pyicebergVersion, "pyiceberg[pyarrow]=="+pyicebergVersion)
	mloc := prunableTable(t)
	filters := map[string][2]int{ // files planned, rows read
		"i >= 20": {1, 5}, "i < 12": {2, 7}, "i = 7": {0, 0},
		"s = '1-" + strings.Repeat("x", 22) + "'": {1, 1}, "s >= '2-'": {1, 5},
		"l IS NULL": {3, 15}, "l IS NOT NULL": {0, 0},
	}
	args := []string{"testdata/pyiceberg_plan.py", mloc}
	for f := range filters {
		args = append(args, f)
	}
	out, err := exec.Command(python, args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("%v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var got []struct {
		Filter      string
		Files, Rows int
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(filters) {
		t.Fatalf("%v: %s", err, out)
	}
	for _, g := range got {
		if w := filters[g.Filter]; g.Files != w[0] || g.Rows != w[1] {
			t.Errorf("%s: %d files planned, %d rows; want %d, %d", g.Filter, g.Files, g.Rows, w[0], w[1])
		}
	}
}
