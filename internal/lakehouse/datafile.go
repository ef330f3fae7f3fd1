package lakehouse

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/uuid"
)

// Data files are Parquet, written and read through arrow-go. Each Parquet column carries
// its Iceberg field id (PARQUET:field_id), by which engines match columns across schema
// versions; a file holds rows of one partition only.

// fieldIDKey is the Arrow field metadata key pqarrow maps to Parquet field ids.
const fieldIDKey = "PARQUET:field_id"

// arrowType is the Arrow type of an Iceberg primitive type (parseType's).
func arrowType(t string) (arrow.DataType, error) {
	ti, err := parseType(t)
	if err != nil {
		return nil, err
	}
	switch ti.name {
	case typeBoolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case typeInt:
		return arrow.PrimitiveTypes.Int32, nil
	case typeLong:
		return arrow.PrimitiveTypes.Int64, nil
	case typeFloat:
		return arrow.PrimitiveTypes.Float32, nil
	case typeDouble:
		return arrow.PrimitiveTypes.Float64, nil
	case typeString:
		return arrow.BinaryTypes.String, nil
	case typeBinary:
		return arrow.BinaryTypes.Binary, nil
	case typeTimestampTz:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	case typeDate:
		return arrow.FixedWidthTypes.Date32, nil
	case typeTime:
		return arrow.FixedWidthTypes.Time64us, nil
	}
	return &arrow.Decimal128Type{Precision: int32(ti.precision), Scale: int32(ti.scale)}, nil
}

// arrowSchema is the Arrow schema of a table schema, with field ids.
func arrowSchema(sc *Schema) (*arrow.Schema, error) {
	fs := make([]arrow.Field, len(sc.Fields))
	for i, f := range sc.Fields {
		t, err := arrowType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("lakehouse: column %s: %w", f.Name, err)
		}
		fs[i] = arrow.Field{Name: f.Name, Type: t, Nullable: !f.Required,
			Metadata: arrow.NewMetadata([]string{fieldIDKey}, []string{strconv.Itoa(f.ID)})}
	}
	return arrow.NewSchema(fs, nil), nil
}

// transformTime applies a partition transform to a timestamp (hours, days, months or years
// since 1970, as Iceberg defines them).
func transformTime(transform string, t time.Time) (int32, error) {
	t = t.UTC()
	us := t.UnixMicro()
	switch transform {
	case "hour":
		return int32(floorDiv(us, int64(time.Hour/time.Microsecond))), nil
	case "day":
		return int32(floorDiv(us, int64(24*time.Hour/time.Microsecond))), nil
	case "month":
		return int32((t.Year()-1970)*12 + int(t.Month()) - 1), nil
	case "year":
		return int32(t.Year() - 1970), nil
	}
	return 0, fmt.Errorf("lakehouse: unsupported partition transform %q", transform)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// partitionPath is the human form of a partition value in data file paths (Java's).
func partitionPath(transform string, v int32) string {
	switch transform {
	case "hour":
		return time.UnixMicro(int64(v) * int64(time.Hour/time.Microsecond)).UTC().Format("2006-01-02-15")
	case "day":
		return time.Unix(int64(v)*86400, 0).UTC().Format("2006-01-02")
	case "month":
		return fmt.Sprintf("%04d-%02d", 1970+int(v)/12, int(v)%12+1)
	case "year":
		return fmt.Sprintf("%04d", 1970+int(v))
	}
	return strconv.Itoa(int(v))
}

// encodeParquet writes rec as a zstd-compressed Parquet file.
func encodeParquet(rec arrow.RecordBatch) ([]byte, error) {
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithStats(true))
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, fmt.Errorf("lakehouse: parquet writer: %w", err)
	}
	if err := w.Write(rec); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("lakehouse: writing parquet: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("lakehouse: writing parquet: %w", err)
	}
	return buf.Bytes(), nil
}

// Bounds on what a Parquet file's metadata may declare before arrow-go acts on it: its
// reader reserves a row group's declared row count for every column at once, so a corrupt
// footer of a few bytes could ask for terabytes.
const (
	// maxDataFileRows bounds a file's rows: a full writer buffer (16 MB by default) or
	// a compaction output (128 MB) holds a few million rows of this package's tables.
	maxDataFileRows = 1 << 24
	// maxDataFileValues bounds the bytes of fixed-width values (rows × value width, all
	// columns) reading a file reserves.
	maxDataFileValues = 2 << 30
	// maxParquetPage bounds one page's body; the writer's pages are 1 MB (arrow-go's
	// default), arrow-go's own reader limit is 256 MB.
	maxParquetPage = 64 << 20
)

// decodeParquet reads a whole Parquet file.
func decodeParquet(ctx context.Context, b []byte) (tbl arrow.Table, err error) {
	defer func() {
		if r := recover(); r != nil { // arrow-go's reader panics on some malformed files
			tbl, err = nil, fmt.Errorf("lakehouse: reading parquet: malformed file: %v", r)
		}
	}()
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	props.MaxUncompressedPageSize = maxParquetPage
	props.MaxCompressedPageSize = min(maxParquetPage, int64(len(b))) // a page lies within the file
	pr, err := file.NewParquetReader(bytes.NewReader(b), file.WithReadProps(props))
	if err != nil {
		return nil, fmt.Errorf("lakehouse: reading parquet: %w", err)
	}
	defer pr.Close()
	if err := checkParquetSizes(pr); err != nil {
		return nil, fmt.Errorf("lakehouse: reading parquet: %w", err)
	}
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("lakehouse: reading parquet: %w", err)
	}
	tbl, err = fr.ReadTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("lakehouse: reading parquet: %w", err)
	}
	return tbl, nil
}

// checkParquetSizes holds a file's declared row counts against maxDataFileRows and
// maxDataFileValues.
func checkParquetSizes(pr *file.Reader) error {
	md := pr.MetaData()
	var rows, values int64
	for i := range md.NumRowGroups() {
		rg := md.RowGroup(i)
		n := rg.NumRows()
		if n < 0 || n > maxDataFileRows-rows {
			return fmt.Errorf("%d rows in row group %d after %d (limit %d)", n, i, rows, maxDataFileRows)
		}
		rows += n
		for j := range rg.NumColumns() {
			w := int64(4) // byte arrays: an offset per value, their bytes bounded by the pages
			if d := md.Schema.Column(j); d != nil {
				switch d.PhysicalType() {
				case parquet.Types.Boolean:
					w = 1
				case parquet.Types.Int64, parquet.Types.Double:
					w = 8
				case parquet.Types.Int96:
					w = 12
				case parquet.Types.FixedLenByteArray:
					w = max(int64(d.TypeLength()), 1)
				}
			}
			if values += n * w; values > maxDataFileValues {
				return fmt.Errorf("%d rows of %d columns: more than %d bytes of values", rows, rg.NumColumns(), maxDataFileValues)
			}
		}
	}
	return nil
}

// writeDataFiles writes the buffered rows of each partition as a data file under the table
// at loc and returns them (not yet committed).
func writeDataFiles(ctx context.Context, io fileIO, loc string, spec *PartitionSpec, parts []partRows) ([]dataFile, error) {
	var out []dataFile
	for _, p := range parts {
		b, err := encodeParquet(p.rec)
		var metrics dataFile
		columnMetrics(&metrics, p.rec)
		p.rec.Release()
		if err != nil {
			return nil, err
		}
		dir := loc + "/data/"
		partition := map[string]any{}
		for _, f := range spec.Fields {
			partition[avroName(f.Name)] = p.key
			dir += f.Name + "=" + partitionPath(f.Transform, p.key) + "/"
		}
		path := dir + uuid.NewString() + ".parquet"
		if err := io.write(ctx, path, b); err != nil {
			return nil, err
		}
		df := metrics
		df.Path, df.Format, df.Partition, df.RecordCount, df.SizeBytes = path, "PARQUET", partition, p.rows, int64(len(b))
		out = append(out, df)
	}
	return out, nil
}

// arrowValue is row i of arr as the Go value rowBuffer.appendValue takes (nil for NULL):
// data files read back (compaction, retention) go through the same conversions as rows
// decoded from messages, so an older file's column lands in the current type.
func arrowValue(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return a.Value(i)
	case *array.LargeBinary:
		return a.Value(i)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit).UTC()
	case *array.Date32:
		return a.Value(i).ToTime().UTC()
	case *array.Time64:
		unit := a.DataType().(*arrow.Time64Type).Unit
		return time.Duration(int64(a.Value(i)) * int64(unit.Multiplier()))
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	}
	return nil
}

// fieldIDOf is an Arrow field's Iceberg field id, or -1.
func fieldIDOf(f arrow.Field) int {
	if v, ok := f.Metadata.GetValue(fieldIDKey); ok {
		if id, err := strconv.Atoi(v); err == nil {
			return id
		}
	}
	return -1
}
