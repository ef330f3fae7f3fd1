package columns

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// jsonDecoder reads JSON-schema payloads (JSON text) by field name. It scans the text once:
// wanted fields are converted to their column's kind, every other value is stepped over
// without being parsed into Go values.
type jsonDecoder struct{ tree *want }

type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) fail(what string) error {
	return fmt.Errorf("%w: JSON: %s at byte %d", ErrMalformed, what, s.i)
}

func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (d *jsonDecoder) decode(payload []byte, dst []any) error {
	s := &jsonScanner{b: payload}
	s.ws()
	if s.peek() == 'n' {
		if err := s.literal("null"); err != nil {
			return err
		}
	} else if err := s.object(d.tree, dst, 0); err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return s.fail("trailing data")
	}
	return nil
}

func (s *jsonScanner) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return s.fail("unexpected token")
	}
	s.i += len(lit)
	return nil
}

// object reads an object, filling the fields tree wants.
func (s *jsonScanner) object(w *want, dst []any, depth int) error {
	if depth > maxNesting {
		return s.fail("nesting")
	}
	if s.peek() != '{' {
		return s.fail("expected an object")
	}
	s.i++
	s.ws()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		raw, escaped, err := s.rawString()
		if err != nil {
			return err
		}
		key := raw
		if escaped {
			key = []byte(unescape(raw))
		}
		s.ws()
		if s.peek() != ':' {
			return s.fail("expected ':'")
		}
		s.i++
		s.ws()
		if lw, ok := w.leaf[string(key)]; ok {
			v, err := s.leafValue(lw.col)
			if err != nil {
				return err
			}
			dst[lw.slot] = v
		} else if sub := w.sub[string(key)]; sub != nil && s.peek() == '{' {
			if err := s.object(sub, dst, depth+1); err != nil {
				return err
			}
		} else if _, err := s.skip(); err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.fail("expected ',' or '}'")
		}
	}
}

// rawString reads a string and returns its bytes between the quotes (escapes kept).
func (s *jsonScanner) rawString() ([]byte, bool, error) {
	if s.peek() != '"' {
		return nil, false, s.fail("expected a string")
	}
	start := s.i + 1
	escaped := false
	for j := start; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			s.i = j + 1
			return s.b[start:j], escaped, nil
		}
	}
	return nil, false, s.fail("unterminated string")
}

// unescape decodes the escapes of a raw string (the rare path).
func unescape(raw []byte) string {
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	var out string
	if json.Unmarshal(q, &out) != nil {
		return string(raw)
	}
	return out
}

// skip steps over one value and returns its raw text.
func (s *jsonScanner) skip() ([]byte, error) {
	start := s.i
	switch c := s.peek(); {
	case c == '"':
		if _, _, err := s.rawString(); err != nil {
			return nil, err
		}
	case c == '{' || c == '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, _, err := s.rawString(); err != nil {
					return nil, err
				}
				continue
			case '{', '[':
				depth++
				if depth > maxNesting*16 {
					return nil, s.fail("nesting")
				}
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return s.b[start:s.i], nil
				}
			}
			s.i++
		}
		return nil, s.fail("unterminated container")
	case c == 't' || c == 'f' || c == 'n':
		lit := "null"
		if c == 't' {
			lit = "true"
		} else if c == 'f' {
			lit = "false"
		}
		if err := s.literal(lit); err != nil {
			return nil, err
		}
	case c == '-' || (c >= '0' && c <= '9'):
		for s.i < len(s.b) && isNumberByte(s.b[s.i]) {
			s.i++
		}
	default:
		return nil, s.fail("unexpected token")
	}
	return s.b[start:s.i], nil
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// leafValue reads one value as its column's kind.
func (s *jsonScanner) leafValue(c Column) (any, error) {
	first := s.peek()
	if c.Kind == JSON {
		raw, err := s.skip()
		if err != nil || first == 'n' {
			return nil, err
		}
		return string(raw), nil
	}
	switch {
	case first == '"':
		raw, escaped, err := s.rawString()
		if err != nil {
			return nil, err
		}
		str := string(raw)
		if escaped {
			str = unescape(raw)
		}
		return fromJSONString(str, c), nil
	case first == 'n':
		return nil, s.literal("null")
	case first == 't' || first == 'f':
		raw, err := s.skip()
		if err != nil {
			return nil, err
		}
		if c.Kind == String {
			return string(raw), nil
		}
		return coerce(first == 't', c), nil
	case first == '{' || first == '[':
		raw, err := s.skip()
		if err != nil {
			return nil, err
		}
		if c.Kind == String {
			return string(raw), nil
		}
		return nil, nil
	}
	raw, err := s.skip()
	if err != nil {
		return nil, err
	}
	return fromJSONNumber(string(raw), c), nil
}

func fromJSONNumber(raw string, c Column) any {
	switch c.Kind {
	case String, Decimal:
		return raw
	case Int32, Int64, Timestamp, Date, Time:
		n, ok := parseNumber(raw)
		if !ok {
			return nil
		}
		i, isInt := n.(int64)
		if !isInt {
			f := n.(float64)
			if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
				return nil
			}
			i = int64(f)
		}
		switch c.Kind {
		case Timestamp:
			return time.UnixMilli(i).UTC()
		case Date:
			return time.Unix(i*86400, 0).UTC()
		case Time:
			return time.Duration(i) * time.Millisecond
		}
		return coerce(i, c)
	case Float32, Float64:
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return nil
		}
		if c.Kind == Float32 {
			return float32(f)
		}
		return f
	}
	return nil
}

func fromJSONString(str string, c Column) any {
	switch c.Kind {
	case String, Decimal:
		return str
	case Bytes:
		return bytesFromText(str)
	case Bool:
		if b, err := strconv.ParseBool(str); err == nil {
			return b
		}
	case Timestamp:
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
			if t, err := time.Parse(layout, str); err == nil {
				return t.UTC()
			}
		}
	case Date:
		if t, err := time.Parse("2006-01-02", str); err == nil {
			return t
		}
	case Int32, Int64, Float32, Float64:
		return fromJSONNumber(str, c)
	}
	return nil
}
