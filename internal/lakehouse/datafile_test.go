package lakehouse

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/columns"
)

func TestTransformTime(t *testing.T) {
	at := time.Date(2026, 12, 2, 15, 30, 0, 0, time.UTC)
	before := time.Date(1969, 12, 31, 23, 59, 0, 0, time.UTC) // negative: floor, not truncation
	for _, c := range []struct {
		tr   string
		t    time.Time
		want int32
		path string
	}{
		{"hour", at, int32(at.Unix() / 3600), "2026-12-02-15"},
		{"day", at, int32(at.Unix() / 86400), "2026-12-02"},
		{"month", at, (2026-1970)*12 + 11, "2026-12"},
		{"year", at, 2026 - 1970, "2026"},
		{"hour", before, -1, "1969-12-31-23"},
		{"day", before, -1, "1969-12-31"},
		{"month", before, -1, "1969-12"},
	} {
		got, err := transformTime(c.tr, c.t)
		if err != nil || got != c.want {
			t.Errorf("%s(%v) = %d, %v; want %d", c.tr, c.t, got, err, c.want)
		}
		if p := partitionPath(c.tr, c.want); p != c.path && c.want >= 0 {
			t.Errorf("%s path of %d = %q, want %q", c.tr, c.want, p, c.path)
		}
	}
}

// TestParquetRoundTrip: rows of every column type through the row buffer, a data file per
// partition, and back through decodeParquet with their field ids.
func TestParquetRoundTrip(t *testing.T) {
	sc := &Schema{ID: 0, Fields: []Field{
		{ID: 1, Name: columns.ColPublishTime, Required: true, Type: typeTimestampTz},
		{ID: 2, Name: "b", Type: typeBoolean}, {ID: 3, Name: "i", Type: typeInt}, {ID: 4, Name: "l", Type: typeLong},
		{ID: 5, Name: "f", Type: typeFloat}, {ID: 6, Name: "d", Type: typeDouble}, {ID: 7, Name: "s", Type: typeString},
		{ID: 8, Name: "bin", Type: typeBinary}, {ID: 9, Name: "date", Type: typeDate}, {ID: 10, Name: "time", Type: typeTime},
		{ID: 11, Name: "dec", Type: decimalType(10, 2)},
	}}
	spec, err := partitionSpec(sc, "hour")
	if err != nil {
		t.Fatal(err)
	}
	rb, err := newRowBuffer(sc, &spec)
	if err != nil {
		t.Fatal(err)
	}
	slots := make([]int, len(sc.Fields))
	for i, f := range sc.Fields {
		slots[i] = rb.slot(f.Name)
	}
	t0 := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	day := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	rows := [][]any{
		{t0.Add(time.Minute), true, int32(7), int64(1 << 40), float32(1.5), 2.25, "x", []byte{1, 2}, day, 3 * time.Second, "12.34"},
		{t0.Add(2 * time.Hour), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil}, // another partition
		{t0.Add(3 * time.Minute), false, int64(9), int32(5), float32(0), 1.0, "y", []byte{}, day, time.Duration(0), "-0.01"},
	}
	for _, r := range rows {
		rb.appendRow(slots, r)
	}
	dir := t.TempDir()
	io := localIO{}
	parts := rb.take()
	if len(parts) != 2 || parts[0].rows != 2 || parts[1].rows != 1 {
		t.Fatalf("partitions: %+v", parts)
	}
	dfs, err := writeDataFiles(context.Background(), io, "file://"+dir+"/t", &spec, parts)
	if err != nil {
		t.Fatal(err)
	}
	// Each file has its own column metrics (colstats_test.go checks them all).
	if lo, _ := boundOf(dfs[0].LowerBounds, 1); lo != t0.Add(time.Minute).UnixMicro() {
		t.Fatalf("lower bound of %s: %d", columns.ColPublishTime, lo)
	}
	if hi, _ := boundOf(dfs[0].UpperBounds, 1); hi != t0.Add(3*time.Minute).UnixMicro() {
		t.Fatalf("upper bound of %s: %d", columns.ColPublishTime, hi)
	}
	if hi, _ := boundOf(dfs[1].UpperBounds, 1); hi != t0.Add(2*time.Hour).UnixMicro() {
		t.Fatalf("upper bound of %s in the second file: %d", columns.ColPublishTime, hi)
	}
	if len(dfs) != 2 || dfs[0].Partition["__publish_time___hour"] != int32(t0.Unix()/3600) || dfs[0].RecordCount != 2 {
		t.Fatalf("data files %+v", dfs)
	}
	if filepath.Base(filepath.Dir(dfs[0].Path)) != "__publish_time___hour=2026-12-02-15" {
		t.Fatalf("path %s", dfs[0].Path)
	}
	b, err := io.read(context.Background(), dfs[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := decodeParquet(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	want := []any{t0.Add(time.Minute), true, int32(7), int64(1 << 40), float32(1.5), 2.25, "x", []byte{1, 2}, day, 3 * time.Second, "12.34"}
	for j, f := range tbl.Schema().Fields() {
		if fieldIDOf(f) != sc.Fields[j].ID {
			t.Fatalf("column %s: field id %d, want %d", f.Name, fieldIDOf(f), sc.Fields[j].ID)
		}
		got := arrowValue(tbl.Column(j).Data().Chunk(0), 0)
		if g, w := fmtValue(got), fmtValue(want[j]); g != w {
			t.Errorf("column %s: %s, want %s", f.Name, g, w)
		}
	}
	// The second row's int column got an int64 that fits: converted, not NULL.
	if v := arrowValue(tbl.Column(2).Data().Chunk(0), 1); v != int32(9) {
		t.Errorf("converted int: %v", v)
	}
}

func fmtValue(v any) string {
	if t, ok := v.(time.Time); ok {
		return t.UTC().Format(time.RFC3339Nano)
	}
	if b, ok := v.([]byte); ok {
		return string(b) + "(bytes)"
	}
	return fmt.Sprintf("%T %v", v, v)
}

func TestLocalIO(t *testing.T) {
	ctx := context.Background()
	loc := "file://" + t.TempDir() + "/a/b/c.json"
	io := localIO{}
	if _, err := io.read(ctx, loc); !errors.Is(err, errNotFound) {
		t.Fatalf("missing file: %v", err)
	}
	if err := io.write(ctx, loc, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if b, err := io.read(ctx, loc); err != nil || string(b) != "x" {
		t.Fatalf("read %q %v", b, err)
	}
	if err := io.remove(ctx, loc); err != nil {
		t.Fatal(err)
	}
	if err := io.remove(ctx, loc); err != nil {
		t.Fatalf("removing twice: %v", err)
	}
	if err := io.write(ctx, "file:relative/x", nil); err == nil {
		t.Fatal("relative location accepted")
	}
}

func FuzzDecodeParquet(f *testing.F) {
	sc := &Schema{Fields: []Field{{ID: 1, Name: columns.ColPublishTime, Required: true, Type: typeTimestampTz}, {ID: 2, Name: "s", Type: typeString}}}
	rb, _ := newRowBuffer(sc, nil)
	rb.appendRow([]int{0, 1}, []any{time.Unix(1, 0), "v"})
	b, _ := encodeParquet(rb.take()[0].rec)
	f.Add(b)
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Any bytes: a table or an error, never a panic (maintenance reads files it did not
		// necessarily write).
		if tbl, err := decodeParquet(context.Background(), b); err == nil {
			tbl.Release()
		}
	})
}
