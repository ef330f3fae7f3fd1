package columns

import (
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/schema"
)

// ErrMalformed marks a payload that does not decode with its schema.
var ErrMalformed = errors.New("columns: malformed payload")

// ErrUnsupported marks a schema whose columns cannot be derived (a broken definition).
var ErrUnsupported = errors.New("columns: unsupported schema")

// Kind is a column's type, independent of any query engine.
type Kind int

// Column kinds and the Go type of their values.
const (
	Bool      Kind = iota // bool
	Int32                 // int32
	Int64                 // int64
	Float32               // float32
	Float64               // float64
	String                // string
	Bytes                 // []byte
	Timestamp             // time.Time, UTC, millisecond or microsecond precision
	Date                  // time.Time at midnight UTC
	Time                  // time.Duration since midnight
	Decimal               // string: the exact decimal text
	JSON                  // string: JSON text
)

var kindNames = [...]string{"BOOLEAN", "INTEGER", "BIGINT", "REAL", "DOUBLE", "VARCHAR", "VARBINARY", "TIMESTAMP", "DATE", "TIME", "DECIMAL", "JSON"}

// String is the kind's SQL-ish name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Column is one column of a topic's table.
type Column struct {
	Name     string
	Kind     Kind
	Nullable bool
	// Precision and Scale of a Decimal column.
	Precision, Scale int
	// Internal columns describe the message rather than its payload.
	Internal bool
	Comment  string

	// path is the field path in the schema (record field names, or protobuf field names),
	// key tells the path is in the KEY_VALUE key's schema.
	path []string
	key  bool
}

// MaxDepth bounds how many levels of nested records are flattened into columns; deeper
// records are one JSON column.
const MaxDepth = 8

// MaxColumns bounds the columns one schema yields; a schema with more fields is
// ErrUnsupported (a table of thousands of columns is a mistake, not a table).
const MaxColumns = 4096

// Internal column names (Pulsar SQL's).
const (
	ColPartition    = "__partition__"
	ColEventTime    = "__event_time__"
	ColPublishTime  = "__publish_time__"
	ColMessageID    = "__message_id__"
	ColSequenceID   = "__sequence_id__"
	ColProducerName = "__producer_name__"
	ColKey          = "__key__"
	ColProperties   = "__properties__"
	// ColValue is the one column of a primitive schema (and of a topic without one).
	ColValue = "__value__"
	// KeyPrefix starts the names of a KEY_VALUE key's columns.
	KeyPrefix = "__key."
)

// Internal returns the internal columns, in Pulsar SQL's order.
func Internal() []Column {
	return []Column{
		{Name: ColPartition, Kind: Int32, Internal: true, Comment: "The partition number which the message belongs to (-1: not partitioned)"},
		{Name: ColEventTime, Kind: Timestamp, Nullable: true, Internal: true, Comment: "Application defined timestamp in milliseconds of when the event occurred"},
		{Name: ColPublishTime, Kind: Timestamp, Internal: true, Comment: "The timestamp in milliseconds of when event as published"},
		{Name: ColMessageID, Kind: String, Internal: true, Comment: "The message ID of the message used to generate this row: (ledgerId,entryId,batchIndex)"},
		{Name: ColSequenceID, Kind: Int64, Internal: true, Comment: "The sequence ID of the message used to generate this row"},
		{Name: ColProducerName, Kind: String, Nullable: true, Internal: true, Comment: "The name of the producer that publish the message used to generate this row"},
		{Name: ColKey, Kind: String, Nullable: true, Internal: true, Comment: "The partition key for the topic"},
		{Name: ColProperties, Kind: JSON, Nullable: true, Internal: true, Comment: "User defined properties"},
	}
}

// Layout is the value columns of a topic's schema and how to decode them.
type Layout struct {
	// Schema is the schema the columns come from.
	Schema schema.Schema
	// Columns are the value columns (internal ones not included).
	Columns []Column
	// Dropped names value fields left out because an internal column has their name.
	Dropped []string

	format format
	kv     *kvLayout
}

// format decodes one payload kind (Avro, JSON, protobuf, primitive) for a layout.
type format interface {
	// decoder returns a decoder of payloads written with writer that fills dst[slot[i]]
	// from the layout column cols[i].
	decoder(writer schema.Schema, cols []Column, slots []int) (payloadDecoder, error)
}

// payloadDecoder decodes one payload into its slots of dst.
type payloadDecoder interface {
	decode(payload []byte, dst []any) error
}

// FromSchema returns the value columns of s. A topic without a schema has Type BYTES.
func FromSchema(s schema.Schema) (*Layout, error) {
	l := &Layout{Schema: s}
	if s.Type == schema.KeyValue {
		return l, l.keyValue()
	}
	f, cols, err := formatOf(s, nil)
	if err != nil {
		return nil, err
	}
	l.format = f
	l.setColumns(cols)
	return l, nil
}

// setColumns keeps cols, dropping those named like internal columns.
func (l *Layout) setColumns(cols []Column) {
	reserved := map[string]bool{}
	for _, c := range Internal() {
		reserved[c.Name] = true
	}
	for _, c := range cols {
		if reserved[c.Name] {
			l.Dropped = append(l.Dropped, c.Name)
			continue
		}
		l.Columns = append(l.Columns, c)
	}
}

// formatOf returns the payload format and columns of a non-KEY_VALUE schema; prefix starts
// every column name (KEY_VALUE keys).
func formatOf(s schema.Schema, prefix []string) (format, []Column, error) {
	var (
		f    format
		cols []Column
		err  error
	)
	switch s.Type {
	case schema.Avro:
		f, cols, err = newAvroFormat(s.Data, false)
	case schema.JSON:
		f, cols, err = newAvroFormat(s.Data, true)
	case schema.ProtobufNative:
		f, cols, err = newProtoFormat(s.Data)
	case schema.KeyValue:
		return nil, nil, fmt.Errorf("%w: KEY_VALUE inside KEY_VALUE", ErrUnsupported)
	default:
		f, cols, err = newPrimitiveFormat(s.Type)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(cols) > MaxColumns {
		return nil, nil, fmt.Errorf("%w: %d columns (at most %d)", ErrUnsupported, len(cols), MaxColumns)
	}
	return f, cols, nil
}

// Index returns the position of the value column called name, or -1.
func (l *Layout) Index(name string) int {
	for i, c := range l.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}
