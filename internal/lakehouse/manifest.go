package lakehouse

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/ocf"
)

// This file is Iceberg's manifests and manifest lists (the spec's "Manifests" and
// "Manifest Lists"): Avro object container files whose schemas carry the spec's field ids,
// which readers such as PyIceberg resolve columns by. Only data manifests (content 0) are
// written; delete files are never made.

// errManifest marks a manifest or manifest list that cannot be read.
var errManifest = errors.New("lakehouse: bad manifest")

// Manifest entry status.
const (
	statusExisting = 0
	statusAdded    = 1
	statusDeleted  = 2
)

// dataFile is a data file as a manifest describes it.
type dataFile struct {
	Content     int32          `avro:"content"`
	Path        string         `avro:"file_path"`
	Format      string         `avro:"file_format"`
	Partition   map[string]any `avro:"partition"`
	RecordCount int64          `avro:"record_count"`
	SizeBytes   int64          `avro:"file_size_in_bytes"`
	// Column metrics by field id (colstats.go); nil when the writer recorded none.
	ValueCounts *[]countKV `avro:"value_counts"`
	NullCounts  *[]countKV `avro:"null_value_counts"`
	NaNCounts   *[]countKV `avro:"nan_value_counts"`
	LowerBounds *[]boundKV `avro:"lower_bounds"`
	UpperBounds *[]boundKV `avro:"upper_bounds"`
}

// boundKV is an entry of a bounds map (Avro arrays of key/value records, since the keys
// are field ids).
type boundKV struct {
	Key   int32  `avro:"key"`
	Value []byte `avro:"value"`
}

// manifestEntry is a row of a manifest.
type manifestEntry struct {
	Status       int32    `avro:"status"`
	SnapshotID   *int64   `avro:"snapshot_id"`
	Sequence     *int64   `avro:"sequence_number"`
	FileSequence *int64   `avro:"file_sequence_number"`
	File         dataFile `avro:"data_file"`
}

// manifestFile is a row of a manifest list.
type manifestFile struct {
	Path             string         `avro:"manifest_path"`
	Length           int64          `avro:"manifest_length"`
	SpecID           int32          `avro:"partition_spec_id"`
	Content          int32          `avro:"content"`
	Sequence         int64          `avro:"sequence_number"`
	MinSequence      int64          `avro:"min_sequence_number"`
	AddedSnapshotID  int64          `avro:"added_snapshot_id"`
	AddedFiles       int32          `avro:"added_files_count"`
	ExistingFiles    int32          `avro:"existing_files_count"`
	DeletedFiles     int32          `avro:"deleted_files_count"`
	AddedRows        int64          `avro:"added_rows_count"`
	ExistingRows     int64          `avro:"existing_rows_count"`
	DeletedRows      int64          `avro:"deleted_rows_count"`
	PartitionSummary *[]partSummary `avro:"partitions"`
}

type partSummary struct {
	ContainsNull bool    `avro:"contains_null"`
	ContainsNaN  *bool   `avro:"contains_nan"`
	Lower        *[]byte `avro:"lower_bound"`
	Upper        *[]byte `avro:"upper_bound"`
}

// manifestListSchema is the v2 manifest list schema (field ids of the spec).
const manifestListSchema = `{"type":"record","name":"manifest_file","fields":[
{"name":"manifest_path","type":"string","field-id":500},
{"name":"manifest_length","type":"long","field-id":501},
{"name":"partition_spec_id","type":"int","field-id":502},
{"name":"content","type":"int","field-id":517},
{"name":"sequence_number","type":"long","field-id":515},
{"name":"min_sequence_number","type":"long","field-id":516},
{"name":"added_snapshot_id","type":"long","field-id":503},
{"name":"added_files_count","type":"int","field-id":504},
{"name":"existing_files_count","type":"int","field-id":505},
{"name":"deleted_files_count","type":"int","field-id":506},
{"name":"added_rows_count","type":"long","field-id":512},
{"name":"existing_rows_count","type":"long","field-id":513},
{"name":"deleted_rows_count","type":"long","field-id":514},
{"name":"partitions","type":["null",{"type":"array","element-id":508,"items":{"type":"record","name":"r508","fields":[
 {"name":"contains_null","type":"boolean","field-id":509},
 {"name":"contains_nan","type":["null","boolean"],"default":null,"field-id":518},
 {"name":"lower_bound","type":["null","bytes"],"default":null,"field-id":510},
 {"name":"upper_bound","type":["null","bytes"],"default":null,"field-id":511}]}}],"default":null,"field-id":507}]}`

// manifestSchema is the v2 manifest entry schema for a partition spec's partition tuple.
func manifestSchema(spec PartitionSpec) string {
	var b strings.Builder
	b.WriteString(`{"type":"record","name":"manifest_entry","fields":[
{"name":"status","type":"int","field-id":0},
{"name":"snapshot_id","type":["null","long"],"default":null,"field-id":1},
{"name":"sequence_number","type":["null","long"],"default":null,"field-id":3},
{"name":"file_sequence_number","type":["null","long"],"default":null,"field-id":4},
{"name":"data_file","field-id":2,"type":{"type":"record","name":"r2","fields":[
{"name":"content","type":"int","field-id":134},
{"name":"file_path","type":"string","field-id":100},
{"name":"file_format","type":"string","field-id":101},
{"name":"partition","field-id":102,"type":{"type":"record","name":"r102","fields":[`)
	for i, f := range spec.Fields {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(avroName(f.Name))
		fmt.Fprintf(&b, `{"name":%s,"type":["null",%s],"default":null,"field-id":%d}`, name, partitionAvroType(f.Transform), f.FieldID)
	}
	b.WriteString(`]}},
{"name":"record_count","type":"long","field-id":103},
{"name":"file_size_in_bytes","type":"long","field-id":104},
{"name":"value_counts","type":["null",{"type":"array","logicalType":"map","items":{"type":"record","name":"k119_v120","fields":[{"name":"key","type":"int","field-id":119},{"name":"value","type":"long","field-id":120}]}}],"default":null,"field-id":109},
{"name":"null_value_counts","type":["null",{"type":"array","logicalType":"map","items":{"type":"record","name":"k121_v122","fields":[{"name":"key","type":"int","field-id":121},{"name":"value","type":"long","field-id":122}]}}],"default":null,"field-id":110},
{"name":"nan_value_counts","type":["null",{"type":"array","logicalType":"map","items":{"type":"record","name":"k138_v139","fields":[{"name":"key","type":"int","field-id":138},{"name":"value","type":"long","field-id":139}]}}],"default":null,"field-id":137},
{"name":"lower_bounds","type":["null",{"type":"array","logicalType":"map","items":{"type":"record","name":"k126_v127","fields":[{"name":"key","type":"int","field-id":126},{"name":"value","type":"bytes","field-id":127}]}}],"default":null,"field-id":125},
{"name":"upper_bounds","type":["null",{"type":"array","logicalType":"map","items":{"type":"record","name":"k129_v130","fields":[{"name":"key","type":"int","field-id":129},{"name":"value","type":"bytes","field-id":130}]}}],"default":null,"field-id":128}
]}}]}`)
	return b.String()
}

// avroName makes a partition field name a valid Avro name (the spec's sanitizing: other
// characters become _xHH).
func avroName(s string) string {
	var b strings.Builder
	for i, r := range s {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if ok {
			b.WriteRune(r)
		} else if r >= '0' && r <= '9' {
			b.WriteString("_" + string(r))
		} else {
			b.WriteString("_x" + strings.ToUpper(strconv.FormatInt(int64(r), 16)))
		}
	}
	return b.String()
}

// partitionAvroType is the Avro type of a transform's result on a timestamp.
func partitionAvroType(transform string) string {
	if transform == "day" {
		return `{"type":"int","logicalType":"date"}`
	}
	return `"int"` // hour, month, year: hours, months, years since 1970
}

// encodeOCF writes rows as an Avro object container file with schema (kept as given, field
// ids included) and the file metadata meta.
func encodeOCF[T any](schema string, meta map[string]string, rows []T) ([]byte, error) {
	sc, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("lakehouse: manifest schema: %w", err)
	}
	md := map[string][]byte{}
	for k, v := range meta {
		md[k] = []byte(v)
	}
	var buf bytes.Buffer
	enc, err := ocf.NewEncoderWithSchema(sc, &buf, ocf.WithMetadata(md), ocf.WithCodec(ocf.Deflate),
		ocf.WithSchemaMarshaler(func(avro.Schema) ([]byte, error) { return []byte(schema), nil }))
	if err != nil {
		return nil, fmt.Errorf("lakehouse: manifest encoder: %w", err)
	}
	for i := range rows {
		if err := enc.Encode(&rows[i]); err != nil {
			return nil, fmt.Errorf("lakehouse: encoding a manifest row: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("lakehouse: encoding a manifest: %w", err)
	}
	return buf.Bytes(), nil
}

// maxManifestRows bounds what one manifest or manifest list may hold when read: a file of
// 1M rows is ~100 MB decoded, far beyond the 8 MB files Iceberg's writers aim for (and
// Magnetar merges manifests).
const maxManifestRows = 1_000_000

// decodeOCF reads the rows of an Avro object container file by field name (the file's own
// schema resolves against T; fields T lacks are skipped). readOCF has bounded every length
// and count before hamba/avro decodes the values.
func decodeOCF[T any](b []byte) (rows []T, meta map[string][]byte, err error) {
	defer func() {
		if r := recover(); r != nil { // the Avro decoder panics on some malformed input
			rows, meta, err = nil, nil, fmt.Errorf("%w: %v", errManifest, r)
		}
	}()
	f, err := readOCF(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errManifest, err)
	}
	var n int64
	for _, blk := range f.blocks {
		if n += blk.count; n > maxManifestRows {
			return nil, nil, fmt.Errorf("%w: more than %d rows", errManifest, maxManifestRows)
		}
	}
	// A config per file: its decoder cache would otherwise keep every schema ever read.
	api := avro.Config{MaxByteSliceSize: maxAvroBlock, MaxSliceAllocSize: maxAvroBlock}.Freeze()
	rows = make([]T, 0, n)
	for _, blk := range f.blocks {
		dec := api.NewDecoder(f.schema, bytes.NewReader(blk.data))
		for range blk.count {
			var r T
			if err := dec.Decode(&r); err != nil {
				return nil, nil, fmt.Errorf("%w: %w", errManifest, err)
			}
			rows = append(rows, r)
		}
	}
	return rows, f.meta, nil
}

// encodeManifest is a manifest of entries for a table schema and partition spec.
func encodeManifest(sc *Schema, spec PartitionSpec, entries []manifestEntry) ([]byte, error) {
	scJSON, _ := json.Marshal(sc)
	specJSON, _ := json.Marshal(spec.Fields)
	entries = slices.Clone(entries) // partition values are changed below
	for i := range entries {
		if entries[i].File.Partition == nil {
			entries[i].File.Partition = map[string]any{}
		}
		for _, f := range spec.Fields {
			// A day is an Avro date, which the encoder takes as a time.
			if d, ok := entries[i].File.Partition[avroName(f.Name)].(int32); ok && f.Transform == "day" {
				p := maps.Clone(entries[i].File.Partition)
				p[avroName(f.Name)] = time.Unix(int64(d)*86400, 0).UTC()
				entries[i].File.Partition = p
			}
		}
		if entries[i].File.Format == "" {
			entries[i].File.Format = "PARQUET"
		}
	}
	return encodeOCF(manifestSchema(spec), map[string]string{
		"schema": string(scJSON), "schema-id": strconv.Itoa(sc.ID),
		"partition-spec": string(specJSON), "partition-spec-id": strconv.Itoa(spec.ID),
		"format-version": "2", "content": "data",
	}, entries)
}

// decodeManifest reads a manifest's entries; partition values come out as int32 (nil for
// NULL) by avro field name.
func decodeManifest(b []byte) ([]manifestEntry, error) {
	entries, _, err := decodeOCF[manifestEntry](b)
	if err != nil {
		return nil, err
	}
	for i := range entries {
		p := entries[i].File.Partition
		for k, v := range p {
			p[k] = partitionValue(unwrapUnion(v))
		}
	}
	return entries, nil
}

// unwrapUnion turns the generic decoding of a union value ({"int": 5}) into the value.
func unwrapUnion(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for _, x := range m {
			return x
		}
	}
	return v
}

// partitionValue is a decoded partition value as the int32 this package writes (a date is
// its days since 1970-01-01).
func partitionValue(v any) any {
	switch x := v.(type) {
	case int:
		return int32(x)
	case int64:
		return int32(x)
	case time.Time:
		return int32(x.Unix() / 86400)
	}
	return v
}

// encodeManifestList is the manifest list of snapshot id (parent -1: none).
func encodeManifestList(id, parent, seq int64, files []manifestFile) ([]byte, error) {
	return encodeOCF(manifestListSchema, map[string]string{
		"snapshot-id": strconv.FormatInt(id, 10), "parent-snapshot-id": strconv.FormatInt(parent, 10),
		"sequence-number": strconv.FormatInt(seq, 10), "format-version": "2",
	}, files)
}

func decodeManifestList(b []byte) ([]manifestFile, error) {
	files, _, err := decodeOCF[manifestFile](b)
	return files, err
}

// Single-value serialization (the spec's appendix D) of the bounds this package records.
func longBound(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

func parseLongBound(b []byte) (int64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b)), true
}

// bound returns the bound of field id in kvs.
func bound(kvs *[]boundKV, id int) ([]byte, bool) {
	if kvs == nil {
		return nil, false
	}
	for _, kv := range *kvs {
		if int(kv.Key) == id {
			return kv.Value, true
		}
	}
	return nil, false
}
