package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// Definitions are http (source and sink) and netty (the source, Pulsar's name for it).
func Definitions() []*connector.Definition {
	srcFields := []connector.Field{
		{Name: "host", TypeName: "String", Attributes: map[string]string{"defaultValue": "127.0.0.1"}},
		{Name: "port", TypeName: "int", Attributes: map[string]string{"defaultValue": "10999"}},
		{Name: "type", TypeName: "String", Attributes: map[string]string{"defaultValue": "http"}},
		{Name: "path", TypeName: "String", Attributes: map[string]string{"defaultValue": "/"}},
	}
	return []*connector.Definition{
		{Name: "http", Description: "Writes data to an HTTP server (webhook); a webhook endpoint as source",
			SinkClass: "org.apache.pulsar.io.http.HttpSink", SourceClass: "org.apache.pulsar.io.netty.NettySource",
			NewSink: func() connector.Sink { return &sink{} }, NewSource: func() connector.Source { return &source{} },
			SourceFields: srcFields, SingleInstance: true,
			SinkFields: []connector.Field{
				{Name: "url", TypeName: "String", Attributes: map[string]string{"required": "true"}},
				{Name: "headers", TypeName: "Map", Attributes: map[string]string{"help": "extra request headers"}},
			}},
		{Name: "netty", Description: "Netty source (type tcp, udp, or http: a webhook endpoint)", SourceClass: "org.apache.pulsar.io.netty.NettySource",
			NewSource: func() connector.Source { return &source{} }, SourceFields: srcFields, SingleInstance: true},
	}
}

type sink struct {
	url     string
	headers map[string]string
	client  *http.Client
	backoff connector.Backoff
	sc      connector.Context
}

func (s *sink) Validate(c connector.Config) error {
	s.url = c.Required("url")
	if s.url != "" {
		u, err := url.Parse(s.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("configs: url: %q is not an http:// or https:// URL", s.url)
		}
	}
	s.headers = map[string]string{}
	for k, v := range c.Map("headers") {
		s.headers[k] = fmt.Sprint(v)
	}
	s.client = &http.Client{Timeout: c.Millis("timeoutMs", 30*time.Second)}
	return nil
}

func (s *sink) Open(_ context.Context, sc connector.Context) error {
	s.sc = sc
	s.backoff = connector.Backoff{Initial: 100 * time.Millisecond, Max: 10 * time.Second}
	return nil
}

// Write posts rec, retrying what may succeed later; messages go one at a time, in order.
func (s *sink) Write(ctx context.Context, rec *connector.Record) error {
	err := connector.Retry(ctx, s.backoff, func(err error) { s.sc.Logger().Warn("http sink: POST failed; retrying", "err", err) },
		func(ctx context.Context) error { return s.post(ctx, rec) })
	if err != nil {
		rec.Fail(err)
		return nil
	}
	rec.Ack()
	return nil
}

func (s *sink) post(ctx context.Context, rec *connector.Record) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(rec.Value))
	if err != nil {
		return connector.Permanent(err)
	}
	ct := "application/octet-stream"
	if json.Valid(rec.Value) {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	h := req.Header
	h.Set("PulsarTopic", rec.Topic)
	if rec.Key != "" {
		h.Set("PulsarKey", rec.Key)
	}
	if !rec.EventTime.IsZero() {
		h.Set("PulsarEventTime", strconv.FormatInt(rec.EventTime.UnixMilli(), 10))
	}
	if !rec.PublishTime.IsZero() {
		h.Set("PulsarPublishTime", strconv.FormatInt(rec.PublishTime.UnixMilli(), 10))
	}
	h.Set("PulsarMessageId", rec.MessageID)
	h.Set("PulsarRedeliveryCount", strconv.FormatUint(uint64(rec.RedeliveryCount), 10))
	for k, v := range rec.Properties {
		h.Set("PulsarProperties-"+k, v)
	}
	for k, v := range s.headers {
		h.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("http sink: %w", err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return nil
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return fmt.Errorf("http sink: %s answered %s: %s", s.url, resp.Status, bytes.TrimSpace(body))
	default:
		return connector.Permanentf("http sink: %s answered %s: %s", s.url, resp.Status, bytes.TrimSpace(body))
	}
}

func (s *sink) Close() error {
	if s.client != nil {
		s.client.CloseIdleConnections()
	}
	return nil
}
