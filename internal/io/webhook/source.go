package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

type source struct {
	kind       string // http, tcp or udp (netty.go)
	addr, path string
	maxBody    int64
	maxConns   int64 // type tcp: connections served at once (maxConnections)
}

func (s *source) Validate(c connector.Config) error {
	s.kind = c.OneOf("type", "http", "http", "tcp", "udp")
	c.IntRange("numberOfThreads", 1, 1, 1<<10) // Pulsar's netty thread count: goroutines here
	host := c.String("host", "127.0.0.1")
	port := c.IntRange("port", 10999, 0, 65535)
	s.addr = net.JoinHostPort(host, strconv.FormatInt(port, 10))
	s.path = c.String("path", "/")
	if !strings.HasPrefix(s.path, "/") {
		return fmt.Errorf("configs: path: %q does not start with /", s.path)
	}
	s.maxBody = c.IntRange("maxBodyBytes", 5<<20, 1, 1<<30)
	s.maxConns = c.IntRange("maxConnections", 256, 1, 1<<16)
	return nil
}

func (s *source) Run(ctx context.Context, sc connector.SourceContext) error {
	switch s.kind {
	case "tcp":
		return s.runTCP(ctx, sc)
	case "udp":
		return s.runUDP(ctx, sc)
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("http source: listen on %s: %w", s.addr, err)
	}
	sc.Logger().Info("http source: serving", "addr", ln.Addr().String(), "path", s.path)
	mux := http.NewServeMux()
	mux.HandleFunc(s.path, func(w http.ResponseWriter, r *http.Request) { s.serve(ctx, sc, w, r) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		return nil
	case err := <-done:
		return fmt.Errorf("http source: %w", err)
	}
}

func (s *source) serve(ctx context.Context, sc connector.SourceContext, w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		w.Header().Set("Allow", "POST, PUT")
		http.Error(w, "POST or PUT a message body", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("the body is over maxBodyBytes (%d)", s.maxBody), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	rec := &connector.Record{Key: r.Header.Get("PulsarKey"), Value: body, EventTime: time.Now()}
	for k, v := range r.Header {
		if name, ok := strings.CutPrefix(k, "Pulsarproperties-"); ok && len(v) > 0 {
			if rec.Properties == nil {
				rec.Properties = map[string]string{}
			}
			rec.Properties[strings.ToLower(name)] = v[0]
		}
	}
	acked := make(chan struct{})
	rec.OnAck = func() { close(acked) }
	if err := sc.Emit(r.Context(), rec); err != nil {
		http.Error(w, "not published: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	select {
	case <-acked:
		w.WriteHeader(http.StatusOK)
	case <-r.Context().Done():
	case <-ctx.Done():
		http.Error(w, "the source is stopping; retry", http.StatusServiceUnavailable)
	}
}

func (s *source) Close() error { return nil }
