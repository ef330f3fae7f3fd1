package bookie

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/config"
)

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("bookie: server closed")

// Server serves the bookie protocol (internal/bookieproto) over TCP on top of a
// storage.Storage. It does not own the storage: the caller closes it after the server.
type Server struct {
	cfg     config.BookieConfig
	st      storage.Storage
	log     *slog.Logger
	metrics *metrics
	tls     *serverTLS // nil: plaintext (tls.go)

	mu       sync.Mutex
	lns      map[net.Listener]struct{}
	conns    map[*serverConn]struct{}
	closed   bool
	nextConn uint64
	wg       sync.WaitGroup // connection goroutines
}

// NewServer returns a server for st with the limits of cfg (MaxFrameSizeBytes,
// MaxInFlight*PerConnection, MaxConnections, MaxLongPollTimeout, ShutdownTimeout). Metrics
// are registered on reg (nil: not exported).
func NewServer(cfg config.BookieConfig, st storage.Storage, logger *slog.Logger, reg prometheus.Registerer) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, st: st, log: logger.With("component", "bookie-server"), metrics: m,
		lns: map[net.Listener]struct{}{}, conns: map[*serverConn]struct{}{},
	}
	if s.tls, err = newServerTLS(cfg.TLS, s); err != nil {
		return nil, err
	}
	return s, nil
}

// Serve accepts connections on ln until Shutdown or Close, then returns ErrServerClosed.
// It owns ln and closes it.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ln.Close()
		return ErrServerClosed
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("bookie: accept: %w", err)
			}
			// Out of file descriptors and the like: wait and retry rather than stop serving.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed; retrying", "err", err, "in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.accept(nc)
	}
}

func (s *Server) accept(nc net.Conn) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = nc.Close()
		return
	}
	if len(s.conns) >= s.cfg.MaxConnections {
		s.mu.Unlock()
		s.metrics.rejectedConns.Inc()
		s.log.Warn("too many connections; closing the new one", "remote", nc.RemoteAddr().String(), "maxConnections", s.cfg.MaxConnections)
		_ = nc.Close()
		return
	}
	s.nextConn++
	if s.tls != nil {
		nc = tls.Server(nc, s.tls.conf)
	}
	c := newServerConn(s, nc, s.nextConn)
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	s.metrics.connections.Inc()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	} else if tc, ok := nc.(*tls.Conn); ok {
		if raw, ok := tc.NetConn().(*net.TCPConn); ok {
			_ = raw.SetNoDelay(true)
		}
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	go func() {
		defer s.wg.Done()
		c.readLoop()
		<-writerDone
		// Handlers are only started by the read loop, so waiting for them is safe now.
		c.handlers.Wait()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.metrics.connections.Dec()
	}()
}

// stop marks the server closed and closes its listeners; it returns the open connections.
func (s *Server) stop() []*serverConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for ln := range s.lns {
		_ = ln.Close()
	}
	s.lns = map[net.Listener]struct{}{}
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

// Shutdown stops accepting, stops reading new requests, waits until every request already
// read has been answered (or ctx ends, bounded by cfg.ShutdownTimeout), then closes every
// connection. Adds in flight thus get their acknowledgement before the process exits.
func (s *Server) Shutdown(ctx context.Context) error {
	conns := s.stop()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
	defer cancel()
	for _, c := range conns {
		c.drain()
	}
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for _, c := range conns {
		for !c.drained() {
			select {
			case <-ctx.Done():
				s.log.Warn("shutdown timed out with requests in flight; closing connections", "timeout", s.cfg.ShutdownTimeout)
				return s.Close()
			case <-t.C:
			}
		}
	}
	return s.Close()
}

// Close stops accepting and closes every connection at once; requests in flight get no
// response. It waits for the connection goroutines.
func (s *Server) Close() error {
	for _, c := range s.stop() {
		c.close("server closing")
	}
	s.wg.Wait()
	return nil
}
