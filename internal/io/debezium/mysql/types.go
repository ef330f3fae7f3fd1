package mysql

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/io/debezium"
)

// colInfo is one column as information_schema describes it, and how its value becomes the
// event's JSON value.
type colInfo struct {
	name      string
	dataType  string // DATA_TYPE, lower case
	unsigned  bool
	precision int      // DATETIME_PRECISION (fractional seconds)
	members   []string // enum and set values, from COLUMN_TYPE
	bits      int      // bit(n)
	key       bool
	connect   string
	logical   string
	decimal   string
}

func (c *colInfo) classify(decimalMode string) {
	c.decimal = decimalMode
	c.connect = "string"
	switch c.dataType {
	case "tinyint", "smallint":
		c.connect = "int16"
		if c.unsigned && c.dataType == "smallint" {
			c.connect = "int32"
		}
	case "mediumint":
		c.connect = "int32"
	case "int", "integer":
		c.connect = "int32"
		if c.unsigned {
			c.connect = "int64"
		}
	case "bigint":
		c.connect = "int64"
	case "year":
		c.connect, c.logical = "int32", "io.debezium.time.Year"
	case "bit":
		c.connect = "int64"
		if c.bits == 1 {
			c.connect = "boolean"
		}
	case "float":
		c.connect = "float32"
	case "double", "real":
		c.connect = "float64"
	case "decimal", "numeric":
		if decimalMode == "double" {
			c.connect = "float64"
		}
	case "date":
		c.connect, c.logical = "int32", debezium.Date
	case "datetime":
		if c.precision <= 3 {
			c.connect, c.logical = "int64", debezium.Timestamp
		} else {
			c.connect, c.logical = "int64", debezium.MicroTimestamp
		}
	case "timestamp":
		c.logical = debezium.ZonedTimestamp
	case "time":
		c.connect, c.logical = "int64", debezium.MicroTime
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		c.connect = "bytes"
	case "json":
		c.logical = debezium.JSONType
	case "enum":
		c.logical = "io.debezium.data.Enum"
	case "set":
		c.logical = "io.debezium.data.EnumSet"
	}
}

// parseColumnType reads unsigned, enum/set members and bit width from COLUMN_TYPE.
func (c *colInfo) parseColumnType(ct string) {
	c.unsigned = strings.Contains(ct, "unsigned")
	switch c.dataType {
	case "enum", "set":
		if i := strings.IndexByte(ct, '('); i >= 0 {
			c.members = splitQuoted(strings.TrimSuffix(ct[i+1:], ")"))
		}
	case "bit":
		c.bits = 1
		if i := strings.IndexByte(ct, '('); i >= 0 {
			if n, err := strconv.Atoi(strings.TrimSuffix(ct[i+1:], ")")); err == nil {
				c.bits = n
			}
		}
	}
}

// splitQuoted splits 'a','b”c' into [a b'c].
func splitQuoted(s string) []string {
	var out []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\'' && in && i+1 < len(s) && s[i+1] == '\'':
			cur.WriteByte('\'')
			i++
		case ch == '\'':
			in = !in
			if !in {
				out = append(out, cur.String())
				cur.Reset()
			}
		case in:
			cur.WriteByte(ch)
		}
	}
	return out
}

var epoch = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

// fromBinlog turns a value decoded from a rows event into the value's text as the text
// protocol (the snapshot) gives it, so both go through convert.
func (c *colInfo) fromBinlog(v any) (text []byte, isNull bool) {
	switch v := v.(type) {
	case nil:
		return nil, true
	case string:
		return []byte(v), false
	case []byte:
		return v, false
	case int8:
		if c.unsigned {
			return strconv.AppendUint(nil, uint64(uint8(v)), 10), false
		}
		return strconv.AppendInt(nil, int64(v), 10), false
	case int16:
		if c.unsigned {
			return strconv.AppendUint(nil, uint64(uint16(v)), 10), false
		}
		return strconv.AppendInt(nil, int64(v), 10), false
	case int32:
		if c.unsigned {
			if c.dataType == "mediumint" {
				return strconv.AppendUint(nil, uint64(uint32(v)&0xFFFFFF), 10), false
			}
			return strconv.AppendUint(nil, uint64(uint32(v)), 10), false
		}
		return strconv.AppendInt(nil, int64(v), 10), false
	case int64:
		switch c.dataType {
		case "enum":
			if v >= 1 && int(v) <= len(c.members) {
				return []byte(c.members[v-1]), false
			}
			return []byte{}, false
		case "set":
			var parts []string
			for i, m := range c.members {
				if v&(1<<i) != 0 {
					parts = append(parts, m)
				}
			}
			return []byte(strings.Join(parts, ",")), false
		case "bit":
			// As the text protocol sends it: big-endian bytes.
			n := max((c.bits+7)/8, 1)
			b := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				b[i] = byte(v)
				v >>= 8
			}
			return b, false
		}
		if c.unsigned {
			return strconv.AppendUint(nil, uint64(v), 10), false
		}
		return strconv.AppendInt(nil, v, 10), false
	case int:
		return strconv.AppendInt(nil, int64(v), 10), false
	case float32:
		return strconv.AppendFloat(nil, float64(v), 'g', -1, 32), false
	case float64:
		return strconv.AppendFloat(nil, v, 'g', -1, 64), false
	}
	return []byte(fmt.Sprint(v)), false
}

// convert turns a value's text into the event's JSON value.
func (c *colInfo) convert(text []byte) (any, error) {
	s := string(text)
	switch c.dataType {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year":
		if c.unsigned && c.dataType == "bigint" {
			u, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, err
			}
			if u > math.MaxInt64 {
				return json.Number(s), nil
			}
			return int64(u), nil
		}
		return strconv.ParseInt(s, 10, 64)
	case "bit":
		var n int64
		for _, b := range text { // big-endian bytes
			n = n<<8 | int64(b)
		}
		if c.bits == 1 {
			return n != 0, nil
		}
		return n, nil
	case "float", "double", "real":
		return strconv.ParseFloat(s, 64)
	case "decimal", "numeric":
		if c.decimal == "double" {
			return strconv.ParseFloat(s, 64)
		}
		return s, nil
	case "date":
		if strings.HasPrefix(s, "0000-00-00") {
			return nil, nil
		}
		t, err := time.Parse("2006-01-02", s)
		if err != nil {
			return nil, err
		}
		return int64(t.Sub(epoch) / (24 * time.Hour)), nil
	case "datetime":
		if strings.HasPrefix(s, "0000-00-00") {
			return nil, nil
		}
		t, err := time.Parse("2006-01-02 15:04:05.999999", s)
		if err != nil {
			return nil, err
		}
		if c.logical == debezium.Timestamp {
			return t.UnixMilli(), nil
		}
		return t.UnixMicro(), nil
	case "timestamp":
		if strings.HasPrefix(s, "0000-00-00") {
			return nil, nil
		}
		t, err := time.Parse("2006-01-02 15:04:05.999999", s)
		if err != nil {
			return nil, err
		}
		return t.UTC().Format("2006-01-02T15:04:05.999999Z"), nil
	case "time":
		return timeMicros(s)
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return append([]byte(nil), text...), nil
	}
	return s, nil
}

// timeMicros reads [-]HHH:MM:SS[.ffffff] as microseconds.
func timeMicros(s string) (any, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 {
		return nil, fmt.Errorf("time %q", s)
	}
	h, err1 := strconv.ParseInt(parts[0], 10, 64)
	m, err2 := strconv.ParseInt(parts[1], 10, 64)
	secPart, frac, _ := strings.Cut(parts[2], ".")
	sec, err3 := strconv.ParseInt(secPart, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, fmt.Errorf("time %q", s)
	}
	var us int64
	if frac != "" {
		frac = (frac + "000000")[:6]
		us, _ = strconv.ParseInt(frac, 10, 64)
	}
	v := h*3600e6 + m*60e6 + sec*1e6 + us
	if neg {
		v = -v
	}
	return v, nil
}
