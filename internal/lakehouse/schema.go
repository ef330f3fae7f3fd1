package lakehouse

import (
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/magnetar-io/magnetar/internal/columns"
)

// The table's columns are the topic schema's columns (internal/columns, the mapping the SQL
// front end uses too): the internal ones first, then the value columns. This file is the
// only one that knows columns' types.

// icebergType is the Iceberg type of a column kind.
func icebergType(c columns.Column) iceberg.Type {
	switch c.Kind {
	case columns.Bool:
		return iceberg.PrimitiveTypes.Bool
	case columns.Int32:
		return iceberg.PrimitiveTypes.Int32
	case columns.Int64:
		return iceberg.PrimitiveTypes.Int64
	case columns.Float32:
		return iceberg.PrimitiveTypes.Float32
	case columns.Float64:
		return iceberg.PrimitiveTypes.Float64
	case columns.Bytes:
		return iceberg.PrimitiveTypes.Binary
	case columns.Timestamp:
		return iceberg.PrimitiveTypes.TimestampTz
	case columns.Date:
		return iceberg.PrimitiveTypes.Date
	case columns.Time:
		return iceberg.PrimitiveTypes.Time
	case columns.Decimal:
		p, s := c.Precision, c.Scale
		if p < 1 || p > 38 || s < 0 || s > p {
			return iceberg.PrimitiveTypes.String // not representable: its exact text
		}
		return iceberg.DecimalTypeOf(p, s)
	}
	return iceberg.PrimitiveTypes.String // String, JSON
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
func promotable(from, to iceberg.Type) bool {
	if from.Equals(to) {
		return true
	}
	switch f := from.(type) {
	case iceberg.Int32Type:
		_, ok := to.(iceberg.Int64Type)
		return ok
	case iceberg.Float32Type:
		_, ok := to.(iceberg.Float64Type)
		return ok
	case iceberg.DecimalType:
		t, ok := to.(iceberg.DecimalType)
		return ok && t.Scale() == f.Scale() && t.Precision() >= f.Precision()
	}
	return false
}

// evolveSchema returns the table schema for layout l given the current table schema cur
// (nil for a new table) and whether it differs from cur. Columns keep their field ids by
// name; a new column gets the next id and is optional (older rows have none); a column the
// topic schema dropped stays, optional, so older rows keep their values; a type change
// Iceberg allows (int -> long, float -> double, wider decimal) is applied, any other keeps
// the table's type and the writer converts what it can (values that do not fit are NULL).
func evolveSchema(cur *iceberg.Schema, l *columns.Layout) (*iceberg.Schema, bool, error) {
	cols := tableColumns(l)
	next := 1
	if cur != nil {
		next = cur.HighestFieldID() + 1
	}
	var fields []iceberg.NestedField
	seen := map[string]bool{}
	changed := cur == nil
	for _, c := range cols {
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		typ := icebergType(c)
		if cur != nil {
			if old, ok := cur.FindFieldByName(c.Name); ok {
				if !old.Type.Equals(typ) && promotable(old.Type, typ) {
					old.Type = typ
					changed = true
				}
				fields = append(fields, old)
				continue
			}
		}
		fields = append(fields, iceberg.NestedField{ID: next, Name: c.Name, Type: typ, Required: cur == nil && requiredColumn(c), Doc: c.Comment})
		next++
		changed = true
	}
	if cur != nil {
		for _, f := range cur.Fields() {
			if !seen[f.Name] {
				f.Required = false
				fields = append(fields, f)
				seen[f.Name] = true
			}
		}
	}
	if len(fields) > columns.MaxColumns+len(columns.Internal()) {
		return nil, false, fmt.Errorf("%w: %d columns", columns.ErrUnsupported, len(fields))
	}
	id := 0
	if cur != nil {
		id = cur.ID + 1
	}
	return iceberg.NewSchema(id, fields...), changed, nil
}

// partitionSpec is the spec of a new table partitioned by how ("hour", "day", "month",
// "year" or "none") of __publish_time__.
func partitionSpec(sc *iceberg.Schema, how string) (iceberg.PartitionSpec, error) {
	var tr iceberg.Transform
	switch how {
	case "", "hour":
		tr = iceberg.HourTransform{}
	case "day":
		tr = iceberg.DayTransform{}
	case "month":
		tr = iceberg.MonthTransform{}
	case "year":
		tr = iceberg.YearTransform{}
	case "none":
		return *iceberg.UnpartitionedSpec, nil
	default:
		return iceberg.PartitionSpec{}, fmt.Errorf("%w: partitioning %q: want hour, day, month, year or none", ErrPolicy, how)
	}
	f, ok := sc.FindFieldByName(columns.ColPublishTime)
	if !ok {
		return iceberg.PartitionSpec{}, fmt.Errorf("lakehouse: schema without %s", columns.ColPublishTime)
	}
	return iceberg.NewPartitionSpec(iceberg.PartitionField{
		SourceIDs: []int{f.ID}, FieldID: 1000, Name: columns.ColPublishTime + "_" + tr.String(), Transform: tr,
	}), nil
}
