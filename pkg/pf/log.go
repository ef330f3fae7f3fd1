package pf

import (
	"bytes"
	"context"
	"errors"
	"log/slog"

	"github.com/apache/pulsar-client-go/pulsar"
)

// teeHandler sends records to two handlers.
type teeHandler struct{ a, b slog.Handler }

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	return errors.Join(t.a.Handle(ctx, r.Clone()), t.b.Handle(ctx, r))
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{t.a.WithAttrs(as), t.b.WithAttrs(as)}
}

func (t teeHandler) WithGroup(g string) slog.Handler {
	return teeHandler{t.a.WithGroup(g), t.b.WithGroup(g)}
}

// topicLogHandler publishes each record as one text line to the function's logTopic,
// asynchronously and best effort (a log line never blocks or fails the function), with the
// properties Pulsar's instances set: "fqn" and "loglevel".
type topicLogHandler struct {
	p     pulsar.Producer
	fqfn  string
	attrs []slog.Attr
	group string
}

func (h *topicLogHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *topicLogHandler) Handle(_ context.Context, r slog.Record) error {
	var buf bytes.Buffer
	th := slog.NewTextHandler(&buf, nil)
	var hh slog.Handler = th
	if len(h.attrs) > 0 {
		hh = hh.WithAttrs(h.attrs)
	}
	if h.group != "" {
		hh = hh.WithGroup(h.group)
	}
	_ = hh.Handle(context.Background(), r)
	h.p.SendAsync(context.Background(), &pulsar.ProducerMessage{
		Payload:    bytes.TrimRight(buf.Bytes(), "\n"),
		Properties: map[string]string{"fqn": h.fqfn, "loglevel": r.Level.String()},
	}, func(pulsar.MessageID, *pulsar.ProducerMessage, error) {})
	return nil
}

func (h *topicLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

func (h *topicLogHandler) WithGroup(g string) slog.Handler {
	c := *h
	c.group = g
	return &c
}

// discardBelowWarn keeps the Pulsar client's own chatter out of the instance log.
type discardBelowWarn struct{ slog.Handler }

func (d discardBelowWarn) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && d.Handler.Enabled(ctx, l)
}

func (d discardBelowWarn) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return nil
	}
	return d.Handler.Handle(ctx, r)
}

func (d discardBelowWarn) WithAttrs(as []slog.Attr) slog.Handler {
	return discardBelowWarn{d.Handler.WithAttrs(as)}
}

func (d discardBelowWarn) WithGroup(g string) slog.Handler {
	return discardBelowWarn{d.Handler.WithGroup(g)}
}
