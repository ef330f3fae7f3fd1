package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/txn"
)

// Errors of the broker itself (protocol-level classes are wire.Err*).
var (
	ErrClosed    = errors.New("broker: closed")
	ErrBadConfig = errors.New("broker: bad configuration")
)

// ServerVersion is sent in CONNECTED.
const ServerVersion = "Magnetar Pulsar-compatible broker"

// maxProtocolVersion is the newest protocol version we speak.
const maxProtocolVersion = 20

// Server is the Pulsar binary protocol front end: it accepts client connections and serves
// their commands with the topic service (internal/topics), which owns the topics.
type Server struct {
	cfg    config.BrokerConfig
	topics *topics.Service
	log    *slog.Logger
	m      *metrics

	maxFrame   int
	publishMem *byteLimiter  // broker-wide pending publish bytes
	lookups    chan struct{} // slots of maxConcurrentLookupRequest (limits.go)

	// Security (auth.go): who clients are, and the TLS listener's certificate checks.
	authn *auth.Service
	tls   *auth.ServerTLS

	mu           sync.Mutex
	closed       bool
	listeners    []net.Listener
	conns        map[*conn]struct{}
	advertise    string // host:port in lookups, fixed by the first Serve
	advertiseTLS string // host:port of the TLS listener in lookups, fixed by the first ServeTLS
	wg           sync.WaitGroup

	// txn are the transaction coordinators, txnPeers the connections to other brokers'
	// transaction buffers (txn.go); nil with transactions off.
	txn      *txn.Coordinators
	txnPeers *peerPool
}

// Deps are the front end's collaborators.
type Deps struct {
	// Topics is the topic service the commands act on (its configuration is cfg's).
	Topics *topics.Service
	// Logger is the parent logger (nil: discard).
	Logger *slog.Logger
	// Registerer receives the front end's metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Authn authenticates clients on CONNECT (nil: authentication off).
	Authn *auth.Service
	// TLS is the TLS listener's configuration, for client certificates (nil: no TLS).
	TLS *auth.ServerTLS
}

// New builds the front end; call Serve with a listener, and Close to stop. Closing the
// topic service is its owner's business, after Close.
func New(cfg config.BrokerConfig, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if deps.Topics == nil {
		return nil, fmt.Errorf("%w: a topic service is required", ErrBadConfig)
	}
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:        cfg,
		topics:     deps.Topics,
		log:        logger.With("component", "broker"),
		maxFrame:   cfg.MaxMessageSize + 10*1024,
		publishMem: newByteLimiter(cfg.MaxMessagePublishBufferSizeMB << 20),
		lookups:    make(chan struct{}, cfg.MaxConcurrentLookupRequest),
		conns:      map[*conn]struct{}{},
		authn:      deps.Authn,
		tls:        deps.TLS,
	}
	m, err := newMetrics(deps.Registerer)
	if err != nil {
		return nil, fmt.Errorf("broker: metrics: %w", err)
	}
	s.m = m
	if cfg.Transaction.CoordinatorEnabled {
		if err := s.startTxn(deps.Registerer); err != nil { // txn.go
			return nil, err
		}
	} else {
		s.recordAssignTopic() // txn.go
	}
	return s, nil
}

// Topics is the topic service the front end serves.
func (s *Server) Topics() *topics.Service { return s.topics }

// Addr is the advertised host:port (set once Serve has been called).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.advertise
}

// ServiceURL is the pulsar:// URL clients are sent to in lookups ("" with no plaintext
// listener).
func (s *Server) ServiceURL() string {
	if a := s.Addr(); a != "" {
		return "pulsar://" + a
	}
	return ""
}

// ServiceURLTLS is the pulsar+ssl:// URL of the TLS listener ("" without one).
func (s *Server) ServiceURLTLS() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.advertiseTLS == "" {
		return ""
	}
	return "pulsar+ssl://" + s.advertiseTLS
}

// Serve accepts connections on ln until ln fails or the server closes. It returns nil
// after Close.
func (s *Server) Serve(ln net.Listener) error { return s.serve(ln, false) }

// ServeTLS is Serve for the TLS listener (brokerServicePortTls): ln must hand out TLS
// connections (tls.NewListener with Deps.TLS's config).
func (s *Server) ServeTLS(ln net.Listener) error { return s.serve(ln, true) }

func (s *Server) serve(ln net.Listener, isTLS bool) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ln.Close()
		return ErrClosed
	}
	s.listeners = append(s.listeners, ln)
	if isTLS && s.advertiseTLS == "" {
		s.advertiseTLS = s.advertisedAddr(ln.Addr())
	} else if !isTLS && s.advertise == "" {
		s.advertise = s.advertisedAddr(ln.Addr())
	}
	s.mu.Unlock()
	s.log.Info("serving the Pulsar binary protocol", "listen", ln.Addr().String(), "tls", isTLS,
		"advertised", s.ServiceURL(), "advertisedTLS", s.ServiceURLTLS())
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Out of file descriptors and the like: back off rather than spin.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "in", delay)
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("broker: accept: %w", err)
		}
		delay = 0
		s.accept(nc)
	}
}

// advertisedAddr builds host:port for lookups: the configured advertised address, else the
// bind address unless it is a wildcard, else localhost; the port is the listener's.
func (s *Server) advertisedAddr(a net.Addr) string { return AdvertisedAddr(s.cfg, a) }

func (s *Server) accept(nc net.Conn) {
	s.mu.Lock()
	if s.closed || (s.cfg.MaxConnections > 0 && len(s.conns) >= s.cfg.MaxConnections) {
		closed := s.closed
		s.mu.Unlock()
		s.log.Warn("refusing connection", "remote", nc.RemoteAddr().String(), "reason", "closed or too many connections")
		if !closed {
			refuseConnection(nc) // limits.go
		}
		_ = nc.Close()
		return
	}
	c := newConn(s, nc)
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	s.m.connections.Inc()
	go func() {
		defer s.wg.Done()
		c.serve()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.m.connections.Dec()
	}()
}

// Close stops accepting and closes every connection (clients reconnect elsewhere or later),
// waiting for their handlers to finish or ctx to end; their producers and consumers leave
// their topics.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	lns := s.listeners
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, ln := range lns {
		_ = ln.Close()
	}
	for _, c := range conns {
		c.close("broker shutting down")
	}
	s.publishMem.close()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("broker: close: %w", ctx.Err())
	}
	return s.closeTxn(ctx) // txn.go
}

// Connections is the number of client connections open now.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
