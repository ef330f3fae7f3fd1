package jdbc

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/io/connector"
	"github.com/magnetar-io/magnetar/internal/io/debezium"
)

// param converts a record's JSON value for column c into a parameter: text (PostgreSQL
// casts it; MySQL converts it), []byte for binary columns, nil for NULL. logical is the
// Debezium logical type of the value when the record says (debezium.logical.types).
func param(v any, c *column, logical string, pg bool) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch c.kind {
	case "binary":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("column %s: want base64 bytes, got %v", c.name, v)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.name, err)
		}
		return b, nil
	case "bool":
		switch v := v.(type) {
		case bool:
			return strconv.FormatBool(v), nil
		case json.Number:
			return strconv.FormatBool(v.String() != "0"), nil
		}
	case "date", "time", "timestamp", "timestamptz":
		if n, ok := v.(json.Number); ok {
			return temporal(n, c, logical, pg)
		}
		if s, ok := v.(string); ok && !pg && strings.Contains(s, "T") {
			// MySQL takes no 'T' and no zone: ISO-8601 in UTC becomes its DATETIME text.
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				return t.UTC().Format("2006-01-02 15:04:05.999999"), nil
			}
		}
	case "int", "float", "decimal":
		if b, ok := v.(bool); ok {
			if b {
				return "1", nil
			}
			return "0", nil
		}
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	case bool:
		if pg {
			return strconv.FormatBool(v), nil
		}
		if v {
			return "1", nil
		}
		return "0", nil
	}
	b, err := json.Marshal(v) // nested objects and arrays: JSON text
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

var epoch = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

// temporal turns Debezium's numeric dates and times back into text. The logical type says
// the unit; without it the column's precision decides as Debezium's adaptive mode does
// (0-3 fractional digits: milliseconds, 4-6: microseconds).
func temporal(n json.Number, c *column, logical string, pg bool) (any, error) {
	i, err := n.Int64()
	if err != nil {
		return nil, fmt.Errorf("column %s: %q is not an integer", c.name, n)
	}
	micro := c.precision > 3
	switch logical {
	case debezium.Time, debezium.Timestamp:
		micro = false
	case debezium.MicroTime, debezium.MicroTimestamp:
		micro = true
	}
	switch {
	case c.kind == "date" || logical == debezium.Date:
		return epoch.AddDate(0, 0, int(i)).Format("2006-01-02"), nil
	case c.kind == "time":
		d := time.Duration(i) * time.Millisecond
		if micro {
			d = time.Duration(i) * time.Microsecond
		}
		if pg && d == 24*time.Hour {
			return "24:00:00", nil
		}
		h := d / time.Hour
		d -= h * time.Hour
		m := d / time.Minute
		d -= m * time.Minute
		return fmt.Sprintf("%02d:%02d:%09.6f", h, m, d.Seconds()), nil
	}
	t := time.UnixMilli(i).UTC()
	if micro {
		t = time.UnixMicro(i).UTC()
	}
	if c.kind == "timestamptz" && pg {
		return t.Format("2006-01-02 15:04:05.999999Z07:00"), nil
	}
	return t.Format("2006-01-02 15:04:05.999999"), nil
}

// change is what one record asks of the table.
type change struct {
	rec    *connector.Record
	delete bool
	row    map[string]any // the row (upsert/insert/update) or the key (delete)
	types  map[string]string
}

// decodeRecord reads a record: a Debezium envelope (op c/r/u upserts after, d deletes by the
// key), its json-with-envelope form ({"schema","payload"}), a plain JSON row, or a tombstone.
func (s *sink) decodeRecord(rec *connector.Record) (*change, error) {
	ch := &change{rec: rec}
	if lt := rec.Properties[debezium.PropLogicalTypes]; lt != "" {
		ch.types = s.logicalTypes(lt)
	}
	if len(rec.Value) == 0 {
		if s.nullDelete {
			key, err := s.keyOf(rec)
			if err != nil {
				return nil, err
			}
			ch.delete, ch.row = true, key
			return ch, nil
		}
		return nil, connector.Permanentf("jdbc: a record with no value (nullValueAction is FAIL; DELETE deletes by the key)")
	}
	m, err := decodeObject(rec.Value)
	if err != nil {
		return nil, connector.Permanent(err)
	}
	if p, ok := m["payload"].(map[string]any); ok && m["schema"] != nil {
		m = p
	}
	op, isEnv := m["op"].(string)
	_, hasSrc := m["source"]
	_, hasAfter := m["after"]
	_, hasBefore := m["before"]
	if isEnv && hasSrc && (hasAfter || hasBefore) {
		switch op {
		case "c", "r", "u":
			after, ok := m["after"].(map[string]any)
			if !ok {
				return nil, connector.Permanentf("jdbc: a Debezium %q event without after", op)
			}
			ch.row = after
		case "d":
			before, _ := m["before"].(map[string]any)
			if before == nil {
				k, err := s.keyOf(rec)
				if err != nil {
					return nil, err
				}
				before = k
			}
			ch.delete, ch.row = true, before
		case "t", "m":
			return nil, nil // truncate and message events change no row
		default:
			return nil, connector.Permanentf("jdbc: Debezium op %q", op)
		}
		return ch, nil
	}
	ch.row = m
	return ch, nil
}

func decodeObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("jdbc: the value is not a JSON object: %v", err)
	}
	return m, nil
}

// keyOf reads the message key as a JSON object of key columns.
func (s *sink) keyOf(rec *connector.Record) (map[string]any, error) {
	if rec.Key == "" {
		return nil, connector.Permanentf("jdbc: a delete without a key")
	}
	m, err := decodeObject([]byte(rec.Key))
	if err != nil {
		if len(s.keyCols) == 1 {
			return map[string]any{s.keyCols[0]: rec.Key}, nil // a plain key of a one-column key
		}
		return nil, connector.Permanentf("jdbc: the key %q is not a JSON object of the key columns", rec.Key)
	}
	return m, nil
}

func (s *sink) logicalTypes(js string) map[string]string {
	s.typesMu.Lock()
	defer s.typesMu.Unlock()
	if m, ok := s.typesCache[js]; ok {
		return m
	}
	var m map[string]string
	_ = json.Unmarshal([]byte(js), &m)
	if len(s.typesCache) > 1024 {
		clear(s.typesCache)
	}
	s.typesCache[js] = m
	return m
}
