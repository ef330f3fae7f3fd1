package file

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// Sink configs (ours): outputDirectory (required), fileNamePrefix (default the sink's
// name), format (line: the value and a newline; json: one object per line with topic, key,
// value, messageId, properties, eventTime), maxFileSizeBytes (roll to a new file past it,
// 128 MiB), batchSize (500) and timeoutMs (100): records are written in batches and
// fsynced before they are acknowledged.
type sink struct {
	sc                   connector.Context
	dir, prefix, format  string
	maxSize              int64
	f                    *os.File
	size                 int64
	b                    *connector.Batcher
	buf                  []byte
	batchSize, timeoutMs int64
}

func (s *sink) Validate(c connector.Config) error {
	s.dir = c.Required("outputDirectory")
	s.prefix = c.String("fileNamePrefix", "")
	s.format = c.OneOf("format", "line", "line", "json")
	s.maxSize = c.IntRange("maxFileSizeBytes", 128<<20, 1, 1<<40)
	s.batchSize = c.IntRange("batchSize", 500, 1, 1<<20)
	s.timeoutMs = c.IntRange("timeoutMs", 100, 0, 1<<31)
	return nil
}

func (s *sink) Open(ctx context.Context, sc connector.Context) error {
	s.sc = sc
	if s.prefix == "" {
		s.prefix = strings.ReplaceAll(sc.Name(), "/", "_")
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	s.b = &connector.Batcher{Size: int(s.batchSize), Interval: time.Duration(s.timeoutMs) * time.Millisecond, Write: s.write,
		OnRetry: func(err error) { sc.Logger().Warn("file sink: write failed; retrying", "err", err) }, Logger: sc.Logger()}
	s.b.Start(ctx)
	return nil
}

func (s *sink) Write(_ context.Context, rec *connector.Record) error {
	s.b.Add(rec)
	return nil
}

type jsonLine struct {
	Topic      string            `json:"topic"`
	Key        string            `json:"key,omitempty"`
	Value      any               `json:"value"`
	MessageID  string            `json:"messageId"`
	Properties map[string]string `json:"properties,omitempty"`
	EventTime  int64             `json:"eventTime,omitempty"`
}

// write appends recs to the current file and fsyncs it: acknowledged records are on disk.
// A retried batch after a failed write may repeat lines (at-least-once).
func (s *sink) write(_ context.Context, recs []*connector.Record) error {
	if s.f == nil || s.size >= s.maxSize {
		if err := s.roll(); err != nil {
			return err
		}
	}
	s.buf = s.buf[:0]
	for _, r := range recs {
		if s.format == "json" {
			l := jsonLine{Topic: r.Topic, Key: r.Key, MessageID: r.MessageID, Properties: r.Properties}
			if !r.EventTime.IsZero() {
				l.EventTime = r.EventTime.UnixMilli()
			}
			switch {
			case json.Valid(r.Value):
				l.Value = json.RawMessage(r.Value)
			case utf8.Valid(r.Value):
				l.Value = string(r.Value)
			default:
				l.Value = base64.StdEncoding.EncodeToString(r.Value)
			}
			b, err := json.Marshal(l)
			if err != nil {
				return connector.Permanent(err)
			}
			s.buf = append(append(s.buf, b...), '\n')
		} else {
			s.buf = append(append(s.buf, r.Value...), '\n')
		}
	}
	n, err := s.f.Write(s.buf)
	s.size += int64(n)
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		// Start a fresh file: the tail of this one may be torn.
		_ = s.f.Close()
		s.f = nil
		return fmt.Errorf("file sink: %w", err)
	}
	return nil
}

func (s *sink) roll() error {
	if s.f != nil {
		if err := s.f.Close(); err != nil {
			return err
		}
	}
	name := fmt.Sprintf("%s-%d-%s.%s", s.prefix, s.sc.InstanceID(), time.Now().UTC().Format("20060102T150405.000000000"), map[string]string{"line": "txt", "json": "jsonl"}[s.format])
	f, err := os.OpenFile(filepath.Join(s.dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	s.f, s.size = f, 0
	return nil
}

func (s *sink) Close() error {
	if s.b == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.b.Close(ctx)
	if s.f != nil {
		return s.f.Close()
	}
	return nil
}
