package objstore

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/ocf"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// The cloud storage sink's avro and bytes formats. An Avro object is an object container
// file (avroCodec: none, deflate, snappy or zstandard; Pulsar's default snappy) of records
// with the same fields as the JSON and Parquet objects (AvroRow). A bytes object (.raw, as
// Pulsar names it) is the message values one after another, bytesFormatTypeSeparator between
// them: "0x10" (Pulsar's default) is the byte 0x10, any other value its own bytes. A value
// that holds the separator reads back as several records, as Pulsar's docs warn.

var extensions = map[string]string{"json": "json", "parquet": "parquet", "avro": "avro", "bytes": "raw"}

// avroSchema is AvroRow's schema.
var avroSchema = avro.MustParse(`{"type":"record","name":"Message","namespace":"io.magnetar.objstore","fields":[
	{"name":"topic","type":"string"},
	{"name":"key","type":["null","string"],"default":null},
	{"name":"value","type":"bytes"},
	{"name":"messageId","type":"string"},
	{"name":"publishTime","type":"long"},
	{"name":"eventTime","type":["null","long"],"default":null},
	{"name":"properties","type":{"type":"map","values":"string"}}]}`)

// AvroRow is a record of the sink's Avro objects.
type AvroRow struct {
	Topic       string            `avro:"topic"`
	Key         *string           `avro:"key"`
	Value       []byte            `avro:"value"`
	MessageID   string            `avro:"messageId"`
	PublishTime int64             `avro:"publishTime"`
	EventTime   *int64            `avro:"eventTime"`
	Properties  map[string]string `avro:"properties"`
}

var avroCodecs = map[string]ocf.CodecName{"none": ocf.Null, "null": ocf.Null, "deflate": ocf.Deflate, "snappy": ocf.Snappy, "zstandard": ocf.ZStandard}

func (s *sink) formatOptions(c connector.Config) error {
	name := strings.ToLower(c.String("avroCodec", "snappy"))
	codec, ok := avroCodecs[name]
	if !ok {
		return fmt.Errorf("configs: avroCodec: %q is not one of none, deflate, snappy, zstandard (bzip2 and xz are not supported here)", name)
	}
	s.avroCodec = codec
	sep := c.String("bytesFormatTypeSeparator", "0x10")
	if h, ok := strings.CutPrefix(strings.ToLower(sep), "0x"); ok {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) == 0 {
			return fmt.Errorf("configs: bytesFormatTypeSeparator: %q is not hex bytes after 0x", sep)
		}
		s.separator = b
	} else {
		s.separator = []byte(sep)
	}
	return nil
}

func (s *sink) encodeAvro(recs []*connector.Record) ([]byte, error) {
	enc, err := ocf.NewEncoderWithSchema(avroSchema, &s.buf, ocf.WithCodec(s.avroCodec))
	if err != nil {
		return nil, fmt.Errorf("s3 sink: avro: %w", err)
	}
	for _, r := range recs {
		row := AvroRow{Topic: r.Topic, Value: r.Value, MessageID: r.MessageID, PublishTime: ms(r.PublishTime), Properties: r.Properties}
		if row.Value == nil {
			row.Value = []byte{}
		}
		if row.Properties == nil {
			row.Properties = map[string]string{}
		}
		if r.Key != "" {
			row.Key = &r.Key
		}
		if t := ms(r.EventTime); t != 0 {
			row.EventTime = &t
		}
		if err := enc.Encode(row); err != nil {
			return nil, fmt.Errorf("s3 sink: avro: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("s3 sink: avro: %w", err)
	}
	return bytes.Clone(s.buf.Bytes()), nil
}

func (s *sink) encodeBytes(recs []*connector.Record) []byte {
	for i, r := range recs {
		if i > 0 {
			s.buf.Write(s.separator)
		}
		s.buf.Write(r.Value)
	}
	return bytes.Clone(s.buf.Bytes())
}
