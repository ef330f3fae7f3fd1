package objstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/hamba/avro/v2/ocf"
	"github.com/parquet-go/parquet-go"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// Definitions are s3 and cloud-storage (the same sink).
func Definitions() []*connector.Definition {
	fields := []connector.Field{
		{Name: "bucket", TypeName: "String", Attributes: map[string]string{"required": "true"}},
		{Name: "region", TypeName: "String", Attributes: map[string]string{"defaultValue": "us-east-1"}},
		{Name: "endpoint", TypeName: "String"},
		{Name: "accessKeyId", TypeName: "String", Attributes: map[string]string{"sensitive": "true"}},
		{Name: "secretAccessKey", TypeName: "String", Attributes: map[string]string{"sensitive": "true"}},
		{Name: "pathPrefix", TypeName: "String"},
		{Name: "formatType", TypeName: "String", Attributes: map[string]string{"defaultValue": "json", "help": "json, parquet, avro or bytes"}},
		{Name: "avroCodec", TypeName: "String", Attributes: map[string]string{"defaultValue": "snappy"}},
		{Name: "bytesFormatTypeSeparator", TypeName: "String", Attributes: map[string]string{"defaultValue": "0x10"}},
		{Name: "partitionerType", TypeName: "String", Attributes: map[string]string{"defaultValue": "time"}},
		{Name: "timePartitionPattern", TypeName: "String", Attributes: map[string]string{"defaultValue": "yyyy-MM-dd"}},
		{Name: "batchSize", TypeName: "int", Attributes: map[string]string{"defaultValue": "1000"}},
		{Name: "maxBatchBytes", TypeName: "long", Attributes: map[string]string{"defaultValue": "10000000"}},
		{Name: "batchTimeMs", TypeName: "long", Attributes: map[string]string{"defaultValue": "10000"}},
	}
	def := func(name, class string) *connector.Definition {
		return &connector.Definition{Name: name, Description: "Writes topics to S3-compatible object storage as JSON or Parquet",
			SinkClass: class, SinkFields: fields, NewSink: func() connector.Sink { return &sink{} }}
	}
	return []*connector.Definition{
		def("s3", "org.apache.pulsar.ecosystem.io.s3.S3Sink"),
		def("cloud-storage", "org.apache.pulsar.io.jcloud.sink.CloudStorageGenericRecordSink"),
	}
}

type sink struct {
	bucket, region, endpoint, access, secret string
	prefix, format, pattern                  string
	avroCodec                                ocf.CodecName // formatType avro (formats.go)
	separator                                []byte        // formatType bytes
	byTime                                   bool
	batchSize                                int64
	maxBytes                                 int64
	batchTime                                time.Duration

	s3  *s3.Client
	sc  connector.Context
	b   *connector.Batcher
	buf bytes.Buffer
	// queued is the value bytes of the batch being collected (maxBatchBytes).
	queued atomic.Int64
}

// Go layouts of the date patterns the cloud storage sink documents.
var patterns = map[string]string{"yyyy-MM-dd": "2006-01-02", "yyyy-MM-dd-HH": "2006-01-02-15", "yyyy/MM/dd": "2006/01/02", "yyyyMMdd": "20060102"}

func (s *sink) Validate(c connector.Config) error {
	s.bucket = c.Required("bucket")
	s.region = c.String("region", "us-east-1")
	s.endpoint = c.String("endpoint", "")
	s.access, s.secret = c.String("accessKeyId", ""), c.String("secretAccessKey", "")
	s.prefix = c.String("pathPrefix", "")
	if s.prefix != "" && !strings.HasSuffix(s.prefix, "/") {
		s.prefix += "/"
	}
	s.format = c.OneOf("formatType", "json", "json", "parquet", "avro", "bytes")
	if err := s.formatOptions(c); err != nil { // formats.go
		return err
	}
	s.byTime = c.OneOf("partitionerType", "time", "time", "partition") == "time"
	p := c.String("timePartitionPattern", "yyyy-MM-dd")
	if s.pattern = patterns[p]; s.pattern == "" {
		return fmt.Errorf("configs: timePartitionPattern: %q is not one of yyyy-MM-dd, yyyy-MM-dd-HH, yyyy/MM/dd, yyyyMMdd", p)
	}
	s.batchSize = c.IntRange("batchSize", 1000, 1, 1<<20)
	s.maxBytes = c.IntRange("maxBatchBytes", 10_000_000, 1, 1<<32)
	s.batchTime = c.Millis("batchTimeMs", 10*time.Second)
	if (s.access == "") != (s.secret == "") {
		return errors.New("configs: accessKeyId and secretAccessKey go together")
	}
	return nil
}

func (s *sink) Open(ctx context.Context, sc connector.Context) error {
	s.sc = sc
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(s.region)}
	if s.access != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(s.access, s.secret, "")))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return fmt.Errorf("s3 sink: %w", err)
	}
	s.s3 = s3.NewFromConfig(cfg, func(o *s3.Options) {
		if s.endpoint != "" {
			o.BaseEndpoint = aws.String(s.endpoint)
			o.UsePathStyle = true
			// S3-compatible stores want no optional checksums.
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
	s.b = &connector.Batcher{Size: int(s.batchSize), Interval: max(s.batchTime, time.Millisecond), Write: s.write, Logger: sc.Logger(),
		OnRetry: func(err error) { sc.Logger().Warn("s3 sink: writing an object failed; retrying", "err", err) }}
	s.b.Start(ctx)
	return nil
}

func (s *sink) Write(_ context.Context, rec *connector.Record) error {
	s.b.Add(rec)
	// maxBatchBytes: flush early once the batch holds that much.
	if s.queued.Add(int64(len(rec.Value))) >= s.maxBytes {
		s.b.Flush()
	}
	return nil
}

// dir is a record's object directory: tenant/namespace/topic[/date].
func (s *sink) dir(r *connector.Record) string {
	t := strings.TrimPrefix(strings.TrimPrefix(r.Topic, "persistent://"), "non-persistent://")
	d := s.prefix + t + "/"
	if s.byTime {
		at := r.PublishTime
		if at.IsZero() {
			at = time.Now()
		}
		d += at.UTC().Format(s.pattern) + "/"
	}
	return d
}

// write stores recs as one object per directory, in record order; all or nothing (a retry
// rewrites the same names).
func (s *sink) write(ctx context.Context, recs []*connector.Record) error {
	s.queued.Store(0)
	var order []string
	groups := map[string][]*connector.Record{}
	for _, r := range recs {
		d := s.dir(r)
		if _, ok := groups[d]; !ok {
			order = append(order, d)
		}
		groups[d] = append(groups[d], r)
	}
	for _, d := range order {
		g := groups[d]
		body, err := s.encode(g)
		if err != nil {
			return connector.Permanent(err)
		}
		first := g[0]
		name := fmt.Sprintf("%s%d-%s.%s", d, first.PublishTime.UnixMilli(), strings.NewReplacer(":", "_", "/", "_").Replace(first.MessageID), extensions[s.format])
		pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		_, err = s.s3.PutObject(pctx, &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(name), Body: bytes.NewReader(body),
			ContentLength: aws.Int64(int64(len(body)))})
		cancel()
		if err != nil {
			return fmt.Errorf("s3 sink: PutObject %s: %w", name, err)
		}
	}
	return nil
}

type jsonRow struct {
	Topic       string            `json:"topic"`
	Key         string            `json:"key,omitempty"`
	Value       any               `json:"value"`
	MessageID   string            `json:"messageId"`
	PublishTime int64             `json:"publishTime"`
	EventTime   int64             `json:"eventTime,omitempty"`
	Properties  map[string]string `json:"properties,omitempty"`
}

// Row is a Parquet row of the sink's objects.
type Row struct {
	Topic       string `parquet:"topic"`
	Key         string `parquet:"key,optional"`
	Value       []byte `parquet:"value"`
	MessageID   string `parquet:"messageId"`
	PublishTime int64  `parquet:"publishTime"`
	EventTime   int64  `parquet:"eventTime,optional"`
	Properties  string `parquet:"properties,optional"`
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func (s *sink) encode(recs []*connector.Record) ([]byte, error) {
	s.buf.Reset()
	switch s.format {
	case "avro":
		return s.encodeAvro(recs)
	case "bytes":
		return s.encodeBytes(recs), nil
	}
	if s.format == "parquet" {
		rows := make([]Row, len(recs))
		for i, r := range recs {
			rows[i] = Row{Topic: r.Topic, Key: r.Key, Value: r.Value, MessageID: r.MessageID, PublishTime: ms(r.PublishTime), EventTime: ms(r.EventTime)}
			if len(r.Properties) > 0 {
				b, _ := json.Marshal(r.Properties)
				rows[i].Properties = string(b)
			}
		}
		w := parquet.NewGenericWriter[Row](&s.buf, parquet.Compression(&parquet.Snappy))
		if _, err := w.Write(rows); err != nil {
			return nil, fmt.Errorf("s3 sink: parquet: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("s3 sink: parquet: %w", err)
		}
		return bytes.Clone(s.buf.Bytes()), nil
	}
	enc := json.NewEncoder(&s.buf)
	for _, r := range recs {
		row := jsonRow{Topic: r.Topic, Key: r.Key, MessageID: r.MessageID, PublishTime: ms(r.PublishTime), EventTime: ms(r.EventTime), Properties: r.Properties}
		switch {
		case len(r.Value) > 0 && json.Valid(r.Value):
			row.Value = json.RawMessage(r.Value)
		case utf8.Valid(r.Value):
			row.Value = string(r.Value)
		default:
			row.Value = base64.StdEncoding.EncodeToString(r.Value)
		}
		if err := enc.Encode(row); err != nil {
			return nil, err
		}
	}
	return bytes.Clone(s.buf.Bytes()), nil
}

func (s *sink) Close() error {
	if s.b != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s.b.Close(ctx)
		cancel()
	}
	return nil
}
