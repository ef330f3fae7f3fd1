// Package debezium writes change events in Debezium's envelope, shared by the MySQL/MariaDB
// and PostgreSQL change-data-capture sources, so consumers written for Debezium read them
// unchanged.
//
// One message per changed row, on the table's topic {topic.prefix}.{schema}.{table}
// (MySQL: {topic.prefix}.{database}.{table}) in topic.namespace (default: the source's own
// tenant/namespace):
//
//	key   {"<pk column>": value, ...}                    (the primary key; JSON)
//	value {"before": {...}|null, "after": {...}|null,    (the row before and after)
//	       "source": {...},                              (connector-specific position)
//	       "op": "c"|"u"|"d"|"r"|"t",                    (create, update, delete, snapshot read, truncate)
//	       "ts_ms": <when the connector processed it>,
//	       "transaction": null}
//
// after a delete, with tombstones.on.delete (default true), a tombstone: the key and an empty
// value. Column values follow Debezium's defaults: integers and floats as JSON numbers,
// booleans, strings, binary as base64 (binary.handling.mode=bytes), temporal types as
// time.precision.mode=adaptive (DATE days since the epoch, TIME microseconds of the day,
// TIMESTAMP/DATETIME milliseconds (precision 0-3) or microseconds (4-6) since the epoch,
// TIMESTAMP WITH TIME ZONE an ISO-8601 string). Decimals are strings (ours: Debezium's
// default "precise" is an unscaled binary that only its schema can decode; "double" is
// supported too).
//
// Every message carries the property "debezium.logical.types": the Connect logical type of
// each temporal column ({"col":"io.debezium.time.MicroTimestamp",...}), so a sink (the JDBC
// sink) converts a number back to the right date or time without the Connect schema. The
// topic's Pulsar schema is a JSON schema (an Avro record of the envelope, logical types as
// "connect.name" field properties); a DDL change gives the topic a new schema version.
package debezium

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// Version is the Debezium version whose envelope these events follow.
const Version = "2.5.4.Final"

// Unavailable is Debezium's placeholder for a value the database did not send (PostgreSQL's
// unchanged TOASTed columns); sinks leave such a column as it is.
const Unavailable = "__debezium_unavailable_value"

// PropLogicalTypes is the message property with the temporal columns' logical types.
const PropLogicalTypes = "debezium.logical.types"

// Logical types (Connect schema names).
const (
	Date           = "io.debezium.time.Date"
	Time           = "io.debezium.time.Time"
	MicroTime      = "io.debezium.time.MicroTime"
	Timestamp      = "io.debezium.time.Timestamp"
	MicroTimestamp = "io.debezium.time.MicroTimestamp"
	ZonedTimestamp = "io.debezium.time.ZonedTimestamp"
	ZonedTime      = "io.debezium.time.ZonedTime"
	MicroDuration  = "io.debezium.time.MicroDuration"
	JSONType       = "io.debezium.data.Json"
	UUIDType       = "io.debezium.data.Uuid"
	DecimalType    = "org.apache.kafka.connect.data.Decimal"
)

// Column is one column of a captured table.
type Column struct {
	Name string
	// Type is the Connect type: int8, int16, int32, int64, float32, float64, boolean,
	// string, bytes.
	Type string
	// Logical is the Connect logical type name ("" for none).
	Logical  string
	Optional bool
	Key      bool
}

// Table is a captured table and what its events are written with.
type Table struct {
	Schema, Name string // schema (PostgreSQL) or database (MySQL), table
	Columns      []Column
	Topic        string
	PulsarSchema *connector.Schema
	Props        map[string]string // shared by every message of the table; read only
	keyIdx       []int
}

// NewTable builds a table's encoding state: its topic, Pulsar schema and properties.
func NewTable(topic, schema, name string, cols []Column) *Table {
	t := &Table{Schema: schema, Name: name, Columns: cols, Topic: topic}
	types := map[string]string{}
	for i, c := range cols {
		if c.Key {
			t.keyIdx = append(t.keyIdx, i)
		}
		if strings.HasPrefix(c.Logical, "io.debezium.time.") {
			types[c.Name] = c.Logical
		}
	}
	t.Props = map[string]string{}
	if len(types) > 0 {
		b, _ := json.Marshal(types)
		t.Props[PropLogicalTypes] = string(b)
	}
	t.PulsarSchema = &connector.Schema{Type: "JSON", Definition: avroSchema(topic, cols)}
	return t
}

// HasKey reports whether the table has a primary key.
func (t *Table) HasKey() bool { return len(t.keyIdx) > 0 }

// AppendKey appends the key JSON of row ({"id":1}); a table without a primary key has no
// key (nil).
func (t *Table) AppendKey(buf []byte, row []any) []byte {
	if len(t.keyIdx) == 0 {
		return nil
	}
	buf = append(buf, '{')
	for n, i := range t.keyIdx {
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendQuote(buf, t.Columns[i].Name)
		buf = append(buf, ':')
		buf = AppendValue(buf, row[i])
	}
	return append(buf, '}')
}

// Field is one entry of the source block.
type Field struct {
	Name  string
	Value any
}

// Event is one change.
type Event struct {
	Op            string
	Before, After []any // nil: absent
	Source        []Field
	TsMs          int64
}

// AppendEnvelope appends ev's value JSON.
func (t *Table) AppendEnvelope(buf []byte, ev *Event) []byte {
	buf = append(buf, `{"before":`...)
	buf = t.appendRow(buf, ev.Before)
	buf = append(buf, `,"after":`...)
	buf = t.appendRow(buf, ev.After)
	buf = append(buf, `,"source":{`...)
	for i, f := range ev.Source {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendQuote(buf, f.Name)
		buf = append(buf, ':')
		buf = AppendValue(buf, f.Value)
	}
	buf = append(buf, `},"op":`...)
	buf = strconv.AppendQuote(buf, ev.Op)
	buf = append(buf, `,"ts_ms":`...)
	buf = strconv.AppendInt(buf, ev.TsMs, 10)
	return append(buf, `,"transaction":null}`...)
}

func (t *Table) appendRow(buf []byte, row []any) []byte {
	if row == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, '{')
	for i, c := range t.Columns {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendQuote(buf, c.Name)
		buf = append(buf, ':')
		buf = AppendValue(buf, row[i])
	}
	return append(buf, '}')
}

// AppendValue appends v as JSON: nil, bool, integers, floats (NaN and infinities as
// strings, as Debezium), string, []byte (base64), json.Number.
func AppendValue(buf []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(buf, "null"...)
	case bool:
		return strconv.AppendBool(buf, v)
	case int64:
		return strconv.AppendInt(buf, v, 10)
	case int:
		return strconv.AppendInt(buf, int64(v), 10)
	case int32:
		return strconv.AppendInt(buf, int64(v), 10)
	case uint64:
		return strconv.AppendUint(buf, v, 10)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return strconv.AppendQuote(buf, strconv.FormatFloat(v, 'g', -1, 64))
		}
		return strconv.AppendFloat(buf, v, 'g', -1, 64)
	case float32:
		return AppendValue(buf, float64(v))
	case string:
		return appendString(buf, v)
	case []byte:
		buf = append(buf, '"')
		buf = base64.StdEncoding.AppendEncode(buf, v)
		return append(buf, '"')
	case json.Number:
		return append(buf, v...)
	}
	return appendString(buf, fmt.Sprint(v))
}

// appendString appends s as a JSON string (strconv.Quote's escapes are not all JSON's).
func appendString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

var avroName = regexp.MustCompile(`[^A-Za-z0-9_]`)

// sanitize makes an Avro name of s (Debezium's field.name.adjustment.mode=avro).
func sanitize(s string) string {
	s = avroName.ReplaceAllString(s, "_")
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		s = "_" + s
	}
	return s
}

var avroTypes = map[string]string{"int8": "int", "int16": "int", "int32": "int", "int64": "long", "float32": "float",
	"float64": "double", "boolean": "boolean", "string": "string", "bytes": "bytes"}

// avroSchema is the envelope's Avro record schema (the definition of the topic's JSON
// schema).
func avroSchema(topic string, cols []Column) string {
	type field struct {
		Name        string `json:"name"`
		Type        any    `json:"type"`
		Default     any    `json:"default"`
		ConnectName string `json:"connect.name,omitempty"`
	}
	fields := make([]field, 0, len(cols))
	for _, c := range cols {
		at := avroTypes[c.Type]
		if at == "" {
			at = "string"
		}
		fields = append(fields, field{Name: sanitize(c.Name), Type: []string{"null", at}, ConnectName: c.Logical})
	}
	name := topic
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	ns := sanitize(name)
	value := map[string]any{"type": "record", "name": "Value", "namespace": ns, "fields": fields}
	src := map[string]any{"type": "record", "name": "Source", "namespace": ns, "fields": []map[string]any{
		{"name": "connector", "type": []string{"null", "string"}, "default": nil},
		{"name": "db", "type": []string{"null", "string"}, "default": nil},
		{"name": "table", "type": []string{"null", "string"}, "default": nil},
	}}
	env := map[string]any{"type": "record", "name": "Envelope", "namespace": ns, "fields": []any{
		map[string]any{"name": "before", "type": []any{"null", value}, "default": nil},
		map[string]any{"name": "after", "type": []any{"null", ns + ".Value"}, "default": nil},
		map[string]any{"name": "source", "type": []any{"null", src}, "default": nil},
		map[string]any{"name": "op", "type": []string{"null", "string"}, "default": nil},
		map[string]any{"name": "ts_ms", "type": []string{"null", "long"}, "default": nil},
	}}
	b, _ := json.Marshal(env)
	return string(b)
}

// TopicName is a table's topic: {prefix}.{schema}.{table} in namespace (tenant/ns).
func TopicName(namespace, prefix, schema, table string) string {
	return "persistent://" + namespace + "/" + prefix + "." + schema + "." + table
}

// NowMs is ts_ms.
func NowMs() int64 { return time.Now().UnixMilli() }

// Filter selects tables by Debezium's include/exclude lists: comma-separated regular
// expressions matched against the whole "schema.table" (or "schema").
type Filter struct {
	schemaInc, schemaExc, tableInc, tableExc []*regexp.Regexp
}

// NewFilter reads <what>.include.list / <what>.exclude.list for schemaKey (schema or
// database) and table from c.
func NewFilter(c connector.Config, schemaKey string) (*Filter, error) {
	f := &Filter{}
	for _, x := range []struct {
		key string
		dst *[]*regexp.Regexp
	}{{schemaKey + ".include.list", &f.schemaInc}, {schemaKey + ".exclude.list", &f.schemaExc},
		{"table.include.list", &f.tableInc}, {"table.exclude.list", &f.tableExc}} {
		for _, p := range c.List(x.key) {
			re, err := regexp.Compile("^(?:" + p + ")$")
			if err != nil {
				return nil, fmt.Errorf("configs: %s: %q: %w", x.key, p, err)
			}
			*x.dst = append(*x.dst, re)
		}
	}
	return f, nil
}

func anyMatch(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// Includes reports whether schema.table is captured.
func (f *Filter) Includes(schema, table string) bool {
	if len(f.schemaInc) > 0 && !anyMatch(f.schemaInc, schema) {
		return false
	}
	if anyMatch(f.schemaExc, schema) {
		return false
	}
	full := schema + "." + table
	if len(f.tableInc) > 0 && !anyMatch(f.tableInc, full) {
		return false
	}
	return !anyMatch(f.tableExc, full)
}
