package sql

import (
	"time"

	gms "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/shopspring/decimal"

	"github.com/magnetar-io/magnetar/internal/columns"
)

// Column kinds become MySQL types: timestamps are DATETIME (TIMESTAMP's 1970-2038 range is
// too small for event times) in UTC, JSON columns are text (MySQL's JSON functions take it),
// booleans are TINYINT(1) as in MySQL.
var (
	datetime3 = types.MustCreateDatetimeType(sqltypes.Datetime, 3)
	datetime6 = types.DatetimeMaxPrecision
)

func sqlType(c columns.Column) gms.Type {
	switch c.Kind {
	case columns.Bool:
		return types.Boolean
	case columns.Int32:
		return types.Int32
	case columns.Int64:
		return types.Int64
	case columns.Float32:
		return types.Float32
	case columns.Float64:
		return types.Float64
	case columns.Bytes:
		return types.LongBlob
	case columns.Timestamp:
		if c.Internal {
			return datetime3
		}
		return datetime6
	case columns.Date:
		return types.Date
	case columns.Time:
		return types.Time
	case columns.Decimal:
		if c.Precision > 0 && c.Precision <= 65 && c.Scale >= 0 && c.Scale <= 30 && c.Scale <= c.Precision {
			if t, err := types.CreateDecimalType(uint8(c.Precision), uint8(c.Scale)); err == nil {
				return t
			}
		}
	}
	return types.LongText
}

// sqlValue converts a decoded value to what the engine expects of sqlType(c).
func sqlValue(c columns.Column, v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case bool:
		if x {
			return int8(1)
		}
		return int8(0)
	case time.Duration:
		ts, err := types.Time.ConvertToTimespan(x.Microseconds())
		if err != nil {
			return nil
		}
		return ts
	case string:
		if c.Kind == columns.Decimal && c.Precision > 0 {
			d, err := decimal.NewFromString(x)
			if err != nil {
				return nil
			}
			return d
		}
	}
	return v
}
