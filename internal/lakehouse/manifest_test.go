package lakehouse

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func testSpec() PartitionSpec {
	return PartitionSpec{ID: 0, Fields: []PartitionField{{SourceID: 3, FieldID: 1000, Name: "__publish_time___hour", Transform: "hour"}}}
}

func testSchema() *Schema {
	return &Schema{Type: "struct", ID: 0, Fields: []Field{
		{ID: 1, Name: "__partition__", Required: true, Type: typeInt},
		{ID: 3, Name: "__publish_time__", Required: true, Type: typeTimestampTz},
		{ID: 9, Name: "amount", Type: decimalType(10, 2)},
	}}
}

// TestManifestRoundTrip writes a manifest and its manifest list and reads them back with
// this package and, independently, with iceberg-go's readers.
func TestManifestRoundTrip(t *testing.T) {
	snap, seq := int64(77), int64(5)
	entries := []manifestEntry{
		{Status: statusAdded, SnapshotID: &snap, File: dataFile{Path: "s3://b/t/data/a.parquet", Partition: map[string]any{"__publish_time___hour": int32(490000)}, RecordCount: 10, SizeBytes: 1234,
			LowerBounds: &[]boundKV{{Key: 3, Value: longBound(100)}}, UpperBounds: &[]boundKV{{Key: 3, Value: longBound(200)}}}},
		{Status: statusExisting, SnapshotID: &snap, Sequence: &seq, FileSequence: &seq, File: dataFile{Path: "s3://b/t/data/b.parquet", Partition: map[string]any{"__publish_time___hour": nil}, RecordCount: 3, SizeBytes: 99}},
	}
	mb, err := encodeManifest(testSchema(), testSpec(), entries)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeManifest(mb)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].File.Path != "s3://b/t/data/a.parquet" || got[0].File.Partition["__publish_time___hour"] != int32(490000) ||
		got[1].File.Partition["__publish_time___hour"] != nil || got[1].Sequence == nil || *got[1].Sequence != 5 || got[0].Sequence != nil {
		t.Fatalf("manifest read back: %+v", got)
	}
	if lo, ok := bound(got[0].File.LowerBounds, 3); !ok || !bytes.Equal(lo, longBound(100)) {
		t.Fatalf("lower bound: %v", got[0].File.LowerBounds)
	}
	lb, err := encodeManifestList(snap, -1, seq, []manifestFile{{Path: "s3://b/t/metadata/m.avro", Length: int64(len(mb)), Sequence: seq, MinSequence: seq, AddedSnapshotID: snap, AddedFiles: 1, ExistingFiles: 1, AddedRows: 10, ExistingRows: 3}})
	if err != nil {
		t.Fatal(err)
	}
	list, err := decodeManifestList(lb)
	if err != nil || len(list) != 1 || list[0].Length != int64(len(mb)) || list[0].AddedRows != 10 {
		t.Fatalf("manifest list: %+v, %v", list, err)
	}

	// iceberg-go reads both as Iceberg v2 files.
	ml, err := iceberg.ReadManifestList(bytes.NewReader(lb))
	if err != nil || len(ml) != 1 || ml[0].FilePath() != "s3://b/t/metadata/m.avro" || ml[0].SequenceNum() != seq || ml[0].AddedRows() != 10 {
		t.Fatalf("iceberg-go manifest list: %v, %v", ml, err)
	}
	es, err := iceberg.ReadManifest(ml[0], bytes.NewReader(mb), false)
	if err != nil || len(es) != 2 {
		t.Fatalf("iceberg-go manifest: %v, %v", es, err)
	}
	if es[0].DataFile().FilePath() != "s3://b/t/data/a.parquet" || es[0].DataFile().Count() != 10 || es[0].SequenceNum() != seq || es[0].Status() != iceberg.EntryStatusADDED {
		t.Fatalf("iceberg-go entry 0: %v seq %d", es[0].DataFile().FilePath(), es[0].SequenceNum())
	}
	if p := es[0].DataFile().Partition(); p[1000] != int32(490000) {
		t.Fatalf("iceberg-go partition: %v", p)
	}
}

// TestManifestDayPartition: a day partition is an Avro date; it reads back as days.
func TestManifestDayPartition(t *testing.T) {
	spec := PartitionSpec{Fields: []PartitionField{{SourceID: 3, FieldID: 1000, Name: "__publish_time___day", Transform: "day"}}}
	mb, err := encodeManifest(testSchema(), spec, []manifestEntry{{Status: statusAdded, File: dataFile{Path: "x", Partition: map[string]any{"__publish_time___day": int32(20000)}, RecordCount: 1, SizeBytes: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeManifest(mb)
	if err != nil || got[0].File.Partition["__publish_time___day"] != int32(20000) {
		t.Fatalf("%+v %v", got, err)
	}
}

func FuzzManifestDecode(f *testing.F) {
	snap := int64(1)
	mb, _ := encodeManifest(testSchema(), testSpec(), []manifestEntry{{Status: statusAdded, SnapshotID: &snap, File: dataFile{Path: "x", Partition: map[string]any{"__publish_time___hour": int32(1)}, RecordCount: 1, SizeBytes: 1}}})
	lb, _ := encodeManifestList(1, -1, 1, []manifestFile{{Path: "m", Length: 1}})
	f.Add(mb)
	f.Add(lb)
	f.Add([]byte("Obj\x01"))
	for name, b := range badAvroFiles() {
		if name != "deflate bomb" { // 64 MB to inflate: every mutation of it would be slow
			f.Add(b)
		}
	}
	// testdata/fuzz/FuzzManifestDecode holds inputs the fuzzer found (1cefada9941c1947: a
	// block size of 6 GB, which hamba/avro's ocf.Decoder allocated).
	f.Fuzz(func(t *testing.T, b []byte) {
		// Any bytes: rows, or an error; never a panic, never an allocation or a loop the
		// bytes do not bound.
		_, _ = decodeManifest(b)
		_, _ = decodeManifestList(b)
	})
}

func FuzzParseMetadata(f *testing.F) {
	md := newMetadata(*testSchema(), testSpec(), "s3://b/t", nil)
	b, _ := md.marshal()
	f.Add(b)
	f.Add([]byte(`{"format-version":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		md, err := parseMetadata(b)
		if err != nil {
			return
		}
		// What parses has its current schema and spec, and writes back to what parses.
		if md.schema() == nil || md.spec() == nil {
			t.Fatal("parsed metadata without its current schema or spec")
		}
		out, err := md.marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parseMetadata(out); err != nil {
			t.Fatalf("re-parse: %v", err)
		}
	})
}

// TestReadsIcebergGoFiles: metadata, manifests and manifest lists written by iceberg-go (as
// tables made before the package wrote the format itself are) parse here.
func TestReadsIcebergGoFiles(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 3, Name: "__publish_time__", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 9, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "__publish_time___hour", Transform: iceberg.HourTransform{}})
	md, err := table.NewMetadata(sc, &spec, table.UnsortedSortOrder, "s3://b/t", iceberg.Properties{"format-version": "2"})
	if err != nil {
		t.Fatal(err)
	}
	mj, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := parseMetadata(mj)
	if err != nil {
		t.Fatalf("%v\n%s", err, mj)
	}
	if f, ok := ours.schema().field("amount"); !ok || f.Type != "decimal(10,2)" || ours.spec().Fields[0].Transform != "hour" || ours.current() != nil {
		t.Fatalf("parsed %s as %+v", mj, ours)
	}
	if out, _ := ours.marshal(); bytes.Contains(out, []byte("null")) {
		t.Fatalf("written back with nulls: %s", out)
	}

	snap, seq := int64(42), int64(3)
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, "s3://b/t/data/x.parquet", iceberg.ParquetFile,
		map[int]any{1000: int32(490000)}, nil, nil, 10, 1234)
	if err != nil {
		t.Fatal(err)
	}
	df := b.LowerBoundValues(map[int][]byte{3: longBound(100)}).Build()
	var mb bytes.Buffer
	mf, err := iceberg.WriteManifest("s3://b/t/metadata/m.avro", &mb, 2, spec, sc, snap,
		[]iceberg.ManifestEntry{iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &snap, nil, nil, df)})
	if err != nil {
		t.Fatal(err)
	}
	es, err := decodeManifest(mb.Bytes())
	if err != nil || len(es) != 1 || es[0].File.Path != "s3://b/t/data/x.parquet" || es[0].File.RecordCount != 10 ||
		es[0].File.Partition["__publish_time___hour"] != int32(490000) {
		t.Fatalf("iceberg-go manifest read as %+v, %v", es, err)
	}
	if lo, ok := bound(es[0].File.LowerBounds, 3); !ok || !bytes.Equal(lo, longBound(100)) {
		t.Fatalf("lower bounds %v", es[0].File.LowerBounds)
	}
	var lb bytes.Buffer
	if err := iceberg.WriteManifestList(2, &lb, snap, nil, &seq, 0, []iceberg.ManifestFile{mf}); err != nil {
		t.Fatal(err)
	}
	list, err := decodeManifestList(lb.Bytes())
	if err != nil || len(list) != 1 || list[0].Path != "s3://b/t/metadata/m.avro" || list[0].Length != int64(mb.Len()) || list[0].AddedFiles != 1 {
		t.Fatalf("iceberg-go manifest list read as %+v, %v", list, err)
	}
}
