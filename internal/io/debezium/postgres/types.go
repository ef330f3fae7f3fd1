package postgres

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/io/debezium"
)

// PostgreSQL type OIDs the source converts (pg_type.oid).
const (
	oidBool        = 16
	oidBytea       = 17
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidOID         = 26
	oidJSON        = 114
	oidFloat4      = 700
	oidFloat8      = 701
	oidMoney       = 790
	oidDate        = 1082
	oidTime        = 1083
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidInterval    = 1186
	oidTimetz      = 1266
	oidNumeric     = 1700
	oidUUID        = 2950
	oidJSONB       = 3802
)

// colType is how one column is represented: its Connect type and logical name, and how its
// text-format value becomes a JSON value.
type colType struct {
	oid     uint32
	typmod  int32
	connect string
	logical string
	decimal string // decimal.handling.mode
}

func newColType(oid uint32, typmod int32, decimalMode string) colType {
	ct := colType{oid: oid, typmod: typmod, decimal: decimalMode, connect: "string"}
	precision := typmod // for time/timestamp, atttypmod is the precision (-1: 6)
	if precision < 0 {
		precision = 6
	}
	switch oid {
	case oidBool:
		ct.connect = "boolean"
	case oidInt2:
		ct.connect = "int16"
	case oidInt4:
		ct.connect = "int32"
	case oidInt8, oidOID:
		ct.connect = "int64"
	case oidFloat4:
		ct.connect = "float32"
	case oidFloat8:
		ct.connect = "float64"
	case oidNumeric, oidMoney:
		if decimalMode == "double" {
			ct.connect = "float64"
		}
	case oidBytea:
		ct.connect = "bytes"
	case oidDate:
		ct.connect, ct.logical = "int32", debezium.Date
	case oidTime:
		if precision <= 3 {
			ct.connect, ct.logical = "int32", debezium.Time
		} else {
			ct.connect, ct.logical = "int64", debezium.MicroTime
		}
	case oidTimestamp:
		if precision <= 3 {
			ct.connect, ct.logical = "int64", debezium.Timestamp
		} else {
			ct.connect, ct.logical = "int64", debezium.MicroTimestamp
		}
	case oidTimestamptz:
		ct.logical = debezium.ZonedTimestamp
	case oidTimetz:
		ct.logical = debezium.ZonedTime
	case oidInterval:
		ct.connect, ct.logical = "int64", debezium.MicroDuration
	case oidJSON, oidJSONB:
		ct.logical = debezium.JSONType
	case oidUUID:
		ct.logical = debezium.UUIDType
	}
	return ct
}

var epoch = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

// convert turns a text-format value into the event's JSON value.
func (ct colType) convert(text []byte) (any, error) {
	s := string(text)
	switch ct.oid {
	case oidBool:
		return s == "t" || s == "true", nil
	case oidInt2, oidInt4, oidInt8, oidOID:
		return strconv.ParseInt(s, 10, 64)
	case oidFloat4, oidFloat8:
		return strconv.ParseFloat(s, 64)
	case oidNumeric, oidMoney:
		if ct.decimal == "double" {
			f, err := strconv.ParseFloat(strings.NewReplacer("$", "", ",", "").Replace(s), 64)
			if err != nil {
				return s, nil // NaN and the like stay text
			}
			return f, nil
		}
		return s, nil
	case oidBytea:
		if !strings.HasPrefix(s, `\x`) {
			return nil, fmt.Errorf("bytea %q is not in hex format", s)
		}
		return hex.DecodeString(s[2:])
	case oidDate:
		t, err := parseTime("2006-01-02", s)
		if err != nil {
			return infinity(s, err)
		}
		return int64(t.Sub(epoch) / (24 * time.Hour)), nil
	case oidTime:
		t, err := time.Parse("15:04:05.999999", s)
		if err != nil {
			if s == "24:00:00" {
				return int64(24 * time.Hour / time.Microsecond), nil
			}
			return nil, err
		}
		micros := int64(t.Hour())*3600e6 + int64(t.Minute())*60e6 + int64(t.Second())*1e6 + int64(t.Nanosecond()/1000)
		if ct.logical == debezium.Time {
			return micros / 1000, nil
		}
		return micros, nil
	case oidTimestamp:
		t, err := parseTime("2006-01-02 15:04:05.999999", s)
		if err != nil {
			return infinity(s, err)
		}
		if ct.logical == debezium.Timestamp {
			return t.UnixMilli(), nil
		}
		return t.UnixMicro(), nil
	case oidTimestamptz:
		t, err := parseTime("2006-01-02 15:04:05.999999-07", s)
		if err != nil {
			if t, err = parseTime("2006-01-02 15:04:05.999999-07:00", s); err != nil {
				return infinity(s, err)
			}
		}
		return t.UTC().Format("2006-01-02T15:04:05.999999Z"), nil
	case oidInterval:
		return intervalMicros(s)
	case oidJSON, oidJSONB:
		return s, nil
	}
	return s, nil
}

// parseTime parses a PostgreSQL timestamp, including years BC.
func parseTime(layout, s string) (time.Time, error) {
	bc := strings.HasSuffix(s, " BC")
	t, err := time.Parse(layout, strings.TrimSuffix(s, " BC"))
	if err == nil && bc {
		t = t.AddDate(-2*t.Year()+1, 0, 0)
	}
	return t, err
}

// infinity keeps 'infinity' and '-infinity' as text (Debezium sends them as extreme values;
// text loses nothing).
func infinity(s string, err error) (any, error) {
	if s == "infinity" || s == "-infinity" {
		return s, nil
	}
	return nil, err
}

// intervalMicros converts an interval in PostgreSQL's default output style
// ("1 year 2 mons 3 days 04:05:06.7") into microseconds, a month being 365.25/12 days and
// a year 12 months (Debezium's interval.handling.mode=numeric).
func intervalMicros(s string) (any, error) {
	const day = int64(24 * time.Hour / time.Microsecond)
	const month = day * 36525 / 1200
	var total int64
	f := strings.Fields(s)
	for i := 0; i < len(f); i++ {
		tok := f[i]
		if strings.Contains(tok, ":") {
			neg := strings.HasPrefix(tok, "-")
			tok = strings.TrimLeft(tok, "+-")
			parts := strings.Split(tok, ":")
			if len(parts) != 3 {
				return s, nil
			}
			h, _ := strconv.ParseInt(parts[0], 10, 64)
			m, _ := strconv.ParseInt(parts[1], 10, 64)
			sec, _ := strconv.ParseFloat(parts[2], 64)
			v := h*3600e6 + m*60e6 + int64(sec*1e6+0.5)
			if neg {
				v = -v
			}
			total += v
			continue
		}
		if i+1 >= len(f) {
			return s, nil
		}
		n, err := strconv.ParseInt(tok, 10, 64)
		if err != nil {
			return s, nil
		}
		unit := f[i+1]
		i++
		switch {
		case strings.HasPrefix(unit, "year"):
			total += n * 12 * month
		case strings.HasPrefix(unit, "mon"):
			total += n * month
		case strings.HasPrefix(unit, "day"):
			total += n * day
		default:
			return s, nil
		}
	}
	return total, nil
}
