package lakehouse

import (
	"fmt"

	"github.com/magnetar-io/magnetar/internal/columns"
)

// The table's columns are the topic schema's columns (internal/columns, the mapping the SQL
// front end uses too): the internal ones first, then the value columns. This file is the
// only one that knows columns' types.

// icebergType is the Iceberg type of a column kind.
func icebergType(c columns.Column) string {
	switch c.Kind {
	case columns.Bool:
		return typeBoolean
	case columns.Int32:
		return typeInt
	case columns.Int64:
		return typeLong
	case columns.Float32:
		return typeFloat
	case columns.Float64:
		return typeDouble
	case columns.Bytes:
		return typeBinary
	case columns.Timestamp:
		return typeTimestampTz
	case columns.Date:
		return typeDate
	case columns.Time:
		return typeTime
	case columns.Decimal:
		p, s := c.Precision, c.Scale
		if p < 1 || p > 38 || s < 0 || s > p {
			return typeString // not representable: its exact text
		}
		return decimalType(p, s)
	}
	return typeString // String, JSON
}

// required internal columns: every row has them.
func requiredColumn(c columns.Column) bool {
	return c.Internal && !c.Nullable
}

// tableColumns are the internal columns and then the value columns of a layout.
func tableColumns(l *columns.Layout) []columns.Column {
	return append(columns.Internal(), l.Columns...)
}

// promotable tells whether Iceberg's schema evolution allows from -> to.
func promotable(from, to string) bool {
	if from == to {
		return true
	}
	switch {
	case from == typeInt:
		return to == typeLong
	case from == typeFloat:
		return to == typeDouble
	}
	f, err1 := parseType(from)
	t, err2 := parseType(to)
	return err1 == nil && err2 == nil && f.name == "decimal" && t.name == "decimal" && t.scale == f.scale && t.precision >= f.precision
}

// evolveSchema returns the table schema for layout l given the current table schema cur
// (nil for a new table) and whether it differs from cur. Columns keep their field ids by
// name; a new column gets the next id and is optional (older rows have none); a column the
// topic schema dropped stays, optional, so older rows keep their values; a type change
// Iceberg allows (int -> long, float -> double, wider decimal) is applied, any other keeps
// the table's type and the writer converts what it can (values that do not fit are NULL).
// The schema id is left to Metadata.addSchema.
func evolveSchema(cur *Schema, l *columns.Layout) (Schema, bool, error) {
	cols := tableColumns(l)
	next := 1
	if cur != nil {
		next = cur.highestFieldID() + 1
	}
	var fields []Field
	seen := map[string]bool{}
	changed := cur == nil
	for _, c := range cols {
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		typ := icebergType(c)
		if cur != nil {
			if old, ok := cur.field(c.Name); ok {
				if old.Type != typ && promotable(old.Type, typ) {
					old.Type = typ
					changed = true
				}
				fields = append(fields, old)
				continue
			}
		}
		fields = append(fields, Field{ID: next, Name: c.Name, Type: typ, Required: cur == nil && requiredColumn(c), Doc: c.Comment})
		next++
		changed = true
	}
	if cur != nil {
		for _, f := range cur.Fields {
			if !seen[f.Name] {
				if f.Required {
					f.Required = false
					changed = true
				}
				fields = append(fields, f)
				seen[f.Name] = true
			}
		}
	}
	if len(fields) > columns.MaxColumns+len(columns.Internal()) {
		return Schema{}, false, fmt.Errorf("%w: %d columns", columns.ErrUnsupported, len(fields))
	}
	return Schema{Type: "struct", Fields: fields}, changed, nil
}

// partitionSpec is the spec of a new table partitioned by how ("hour", "day", "month",
// "year" or "none") of __publish_time__.
func partitionSpec(sc *Schema, how string) (PartitionSpec, error) {
	switch how {
	case "":
		how = "hour"
	case "hour", "day", "month", "year":
	case "none":
		return PartitionSpec{Fields: []PartitionField{}}, nil
	default:
		return PartitionSpec{}, fmt.Errorf("%w: partitioning %q: want hour, day, month, year or none", ErrPolicy, how)
	}
	f, ok := sc.field(columns.ColPublishTime)
	if !ok {
		return PartitionSpec{}, fmt.Errorf("lakehouse: schema without %s", columns.ColPublishTime)
	}
	return PartitionSpec{Fields: []PartitionField{{
		SourceID: f.ID, FieldID: 1000, Name: columns.ColPublishTime + "_" + how, Transform: how,
	}}}, nil
}
