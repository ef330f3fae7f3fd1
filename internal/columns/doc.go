// Package columns maps a topic's schema to typed columns and decodes messages into rows of
// them. It is the part of Pulsar SQL's model that does not depend on a query engine: the SQL
// front end (internal/sql) turns these columns into its engine's types, and the lakehouse
// writer (internal/lakehouse) into Iceberg's.
//
// # Columns of a topic
//
// A topic's value columns come from its latest schema (FromSchema):
//
//   - AVRO and JSON (both defined by an Avro record schema): one column per field. Fields of
//     nested records are flattened into "parent.child" columns (Pulsar SQL's naming) up to
//     MaxDepth levels; arrays, maps, unions of several non-null types and records deeper
//     than that are one JSON column. ["null", T] is a nullable T. Logical types: date,
//     time-millis/micros, timestamp-millis/micros (and local-), decimal, uuid.
//   - PROTOBUF_NATIVE (a FileDescriptorSet and the root message's name): one column per
//     field, nested messages flattened the same way; repeated fields and maps are JSON.
//   - Primitive schemas (STRING, INT8..INT64, FLOAT, DOUBLE, BOOLEAN, BYTES, DATE, TIME,
//     TIMESTAMP, INSTANT, LOCAL_DATE, LOCAL_TIME, LOCAL_DATE_TIME) and topics without a
//     schema: one column, "__value__".
//   - KEY_VALUE: the value schema's columns, and the key schema's with the prefix "__key."
//     (so a primitive key is "__key.__value__"). With SEPARATED encoding the key is the
//     message key (base64 when the producer said so); INLINE puts both in the payload as
//     [u32 BE key length][key][u32 BE value length][value].
//
// Internal columns (Internal) describe each message: __partition__, __event_time__,
// __publish_time__, __message_id__, __sequence_id__, __producer_name__, __key__ and
// __properties__, with Pulsar SQL's names and types. A value column whose name collides
// with an internal one is dropped (the internal one wins) and reported in Layout.Dropped.
//
// # Decoding
//
// Layout.Decoder(writer, want) builds a decoder for messages written with one schema
// version (writer) that fills only the wanted columns: fields nobody asked for are skipped
// without being decoded (Avro and protobuf fields by their wire length, JSON values by
// scanning past them), which is what projection pushdown saves. Columns match writer fields
// by name, so a message written with an older version decodes into the latest columns and
// leaves fields that version lacks NULL. A payload that does not decode is an error wrapping
// ErrMalformed; the caller decides whether that fails a query or yields NULLs.
//
// Values are plain Go values by Kind: bool, int32, int64, float32, float64, string,
// []byte (a copy), time.Time (UTC), time.Duration
// (TIME), and string for DECIMAL (exact decimal text) and JSON (JSON text). nil is NULL.
package columns
