package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/schema"
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

// Server is the broker's binary-protocol service: it accepts client connections and owns
// the topics opened through them.
type Server struct {
	cfg   config.BrokerConfig
	store metadata.Store
	logs  logStorage
	log   *slog.Logger
	m     *metrics
	// schemas is the schema registry (cmd_schema.go).
	schemas *schema.Registry
	dyn     *dynamicConfig     // runtime-tunable settings (dynconfig.go)
	stop    context.CancelFunc // ends the dynamic-configuration watch

	maxFrame    int
	publishMem  *byteLimiter // broker-wide pending publish bytes
	nameID      string       // random per process, part of generated producer names
	producerSeq atomic.Int64

	mu        sync.Mutex
	closed    bool
	listeners []net.Listener
	conns     map[*conn]struct{}
	topics    map[string]*topicFuture
	advertise string    // host:port in lookup answers, fixed by the first Serve
	own       Ownership // nil: standalone, serves every topic
	wg        sync.WaitGroup

	pol *policyManager // policy watches and periodic checks (policies.go)
}

// topicFuture is a topic being loaded or loaded; concurrent users wait on done.
type topicFuture struct {
	done chan struct{}
	t    *topic
	err  error
}

// Deps are the broker's collaborators.
type Deps struct {
	// Store holds topic records (partitioned-topic metadata, topic existence).
	Store metadata.Store
	// Ledgers opens topic logs (managed ledgers) for persistent topics.
	Ledgers *managedledger.Factory
	// Logger is the parent logger (nil: discard).
	Logger *slog.Logger
	// Registerer receives the broker's metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Ownership decides which topics this broker serves in a cluster (nil: all; cluster.go).
	Ownership Ownership
}

// New builds a broker; call Serve with a listener, and Close to stop.
func New(cfg config.BrokerConfig, deps Deps) (*Server, error) {
	if deps.Ledgers == nil {
		return nil, fmt.Errorf("%w: a managed ledger factory is required", ErrBadConfig)
	}
	s, err := newServer(cfg, deps.Store, mlStorage{deps.Ledgers}, deps.Logger, deps.Registerer)
	if s != nil {
		s.own = deps.Ownership
	}
	return s, err
}

func newServer(cfg config.BrokerConfig, store metadata.Store, logs logStorage, logger *slog.Logger, reg prometheus.Registerer) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if store == nil || logs == nil {
		return nil, fmt.Errorf("%w: a metadata store and topic storage are required", ErrBadConfig)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var id [3]byte
	_, _ = rand.Read(id[:])
	s := &Server{
		cfg:        cfg,
		store:      store,
		logs:       logs,
		log:        logger.With("component", "broker"),
		maxFrame:   cfg.MaxMessageSize + 10*1024,
		publishMem: newByteLimiter(cfg.MaxMessagePublishBufferSizeMB << 20),
		nameID:     hex.EncodeToString(id[:]),
		conns:      map[*conn]struct{}{},
		topics:     map[string]*topicFuture{},
		dyn:        newDynamicConfig(&cfg),
	}
	s.schemas = schema.New(store, cfg.Schema, logger)
	m, err := newMetrics(s, reg)
	if err != nil {
		return nil, fmt.Errorf("broker: metrics: %w", err)
	}
	s.m = m
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go s.watchDynamic(ctx)
	s.pol = startPolicies(s)
	return s, nil
}

// Addr is the advertised host:port (set once Serve has been called).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.advertise
}

// ServiceURL is the pulsar:// URL clients are sent to in lookups.
func (s *Server) ServiceURL() string { return "pulsar://" + s.Addr() }

// Serve accepts connections on ln until ln fails or the server closes. It returns nil
// after Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ln.Close()
		return ErrClosed
	}
	s.listeners = append(s.listeners, ln)
	if s.advertise == "" {
		s.advertise = s.advertisedAddr(ln.Addr())
	}
	s.mu.Unlock()
	s.log.Info("serving the Pulsar binary protocol", "listen", ln.Addr().String(), "advertised", s.ServiceURL())
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
		s.mu.Unlock()
		s.log.Warn("refusing connection", "remote", nc.RemoteAddr().String(), "reason", "closed or too many connections")
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

// Close stops accepting, closes every connection (clients reconnect elsewhere or later)
// and closes every topic, waiting for in-flight appends to finish or ctx to end.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.stop()
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
	s.pol.stop()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("broker: close: %w", ctx.Err())
	}
	var errs []error
	for _, t := range s.loadedTopics() {
		if err := t.close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Server) loadedTopics() []*topic {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*topic
	for _, f := range s.topics {
		select {
		case <-f.done:
			if f.t != nil {
				out = append(out, f.t)
			}
		default:
		}
	}
	return out
}

// nextProducerName generates a name unique in this cluster for producers that bring none.
func (s *Server) nextProducerName() string {
	return s.cfg.ClusterName + "-" + s.nameID + "-" + strconv.FormatInt(s.producerSeq.Add(1)-1, 10)
}
