package columns

import (
	"encoding/base64"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// coerce converts a decoded value to its column's kind: the column comes from the latest
// schema, the value from the version the message was written with (Avro promotions int ->
// long -> float -> double, string <-> bytes). A value that cannot be converted is NULL.
func coerce(v any, c Column) any {
	if v == nil {
		return nil
	}
	switch c.Kind {
	case Bool:
		if b, ok := v.(bool); ok {
			return b
		}
	case Int32:
		switch x := v.(type) {
		case int32:
			return x
		case int64:
			if x >= math.MinInt32 && x <= math.MaxInt32 {
				return int32(x)
			}
		}
	case Int64:
		switch x := v.(type) {
		case int32:
			return int64(x)
		case int64:
			return x
		}
	case Float32:
		switch x := v.(type) {
		case float32:
			return x
		case int32:
			return float32(x)
		case int64:
			return float32(x)
		}
	case Float64:
		switch x := v.(type) {
		case float64:
			return x
		case float32:
			return float64(x)
		case int32:
			return float64(x)
		case int64:
			return float64(x)
		}
	case String:
		switch x := v.(type) {
		case string:
			return x
		case []byte:
			return string(x)
		}
		return string(appendJSONValue(nil, v))
	case Bytes:
		switch x := v.(type) {
		case []byte:
			return x
		case string:
			return []byte(x)
		}
	case Timestamp, Date:
		switch x := v.(type) {
		case time.Time:
			return x
		case int64:
			return time.UnixMilli(x).UTC()
		}
	case Time:
		if d, ok := v.(time.Duration); ok {
			return d
		}
	case Decimal:
		switch x := v.(type) {
		case string:
			return x
		case int32, int64, float32, float64:
			return string(appendJSONValue(nil, x))
		}
	case JSON:
		if s, ok := v.(string); ok {
			return s
		}
		return string(appendJSONValue(nil, v))
	}
	return nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, "\ufffd"...)
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"')
}

// AppendJSONString appends s as a JSON string (for callers rendering properties).
func AppendJSONString(dst []byte, s string) []byte { return appendJSONString(dst, s) }

// bytesFromText decodes base64 (standard or URL alphabet, padded or not), or keeps the text.
func bytesFromText(s string) []byte {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b
		}
	}
	return []byte(s)
}

// parseNumber reads a JSON number as int64 when integral, else float64.
func parseNumber(raw string) (any, bool) {
	if i, err := strconv.ParseInt(raw, 10, 64); err == nil {
		return i, true
	}
	if f, err := strconv.ParseFloat(raw, 64); err == nil {
		return f, true
	}
	return nil, false
}
