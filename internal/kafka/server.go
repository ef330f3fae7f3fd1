package kafka

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
	"github.com/magnetar-io/magnetar/internal/kafka/group"
)

// Options configure a Server.
type Options struct {
	Config  config.KafkaConfig
	Backend Backend
	// NodeID is this broker's Kafka node id (Metadata's leader ids); ClusterID the id
	// Metadata and DescribeCluster report.
	NodeID    int32
	ClusterID string
	// MaxMessageSize bounds one stored entry (the broker's maxMessageSize).
	MaxMessageSize int
	Logger         *slog.Logger
	Registerer     prometheus.Registerer
	// Auth authenticates SASL clients (nil or disabled: every client is admitted);
	// Authorizer decides each request (nil or disabled: everything is allowed).
	Auth       *auth.Service
	Authorizer *auth.Authorizer
	// AuthzCacheTTL is how long a connection trusts an authorization decision
	// (authorizationRecheckIntervalSeconds; default 30 s).
	AuthzCacheTTL time.Duration
}

// Server is the Kafka protocol front end of one broker.
type Server struct {
	cfg     config.KafkaConfig
	be      Backend
	log     *slog.Logger
	nodeID  int32
	cluster string
	maxMsg  int
	namer   Namer

	topics   topicCache
	records  groupRecords
	auth     *auth.Service
	authz    *auth.Authorizer
	authzTTL time.Duration
	groups   *group.Coordinator
	sessions *fetchSessions
	metrics  *metrics
	txnLocks txnLocks
	txnCache txnCache
	quotas   quotaEnforcer

	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[*conn]struct{}
	logs      map[string]*partition // opened partition logs by Pulsar name
	wg        sync.WaitGroup
}

// New builds a server; Listen (or Serve) starts it.
func New(o Options) (*Server, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Backend == nil {
		return nil, errors.New("kafka: no backend")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.AuthzCacheTTL <= 0 {
		o.AuthzCacheTTL = 30 * time.Second
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = 5 << 20
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg: o.Config, be: o.Backend, log: o.Logger.With("component", "kafka"),
		nodeID: o.NodeID, cluster: o.ClusterID, maxMsg: o.MaxMessageSize,
		ctx: ctx, cancel: cancel, auth: o.Auth, authz: o.Authorizer, authzTTL: o.AuthzCacheTTL,
		conns: map[*conn]struct{}{}, logs: map[string]*partition{},
		topics:  topicCache{m: map[string]cachedTopic{}},
		records: groupRecords{m: map[string]*groupRecord{}},
		groups: group.New(group.Config{
			MinSessionTimeout:     time.Duration(o.Config.GroupMinSessionTimeoutMs) * time.Millisecond,
			MaxSessionTimeout:     time.Duration(o.Config.GroupMaxSessionTimeoutMs) * time.Millisecond,
			InitialRebalanceDelay: time.Duration(o.Config.GroupInitialRebalanceDelayMs) * time.Millisecond,
			MaxSize:               o.Config.GroupMaxSize,
			MaxGroups:             o.Config.MaxGroups,
		}),
		sessions: newFetchSessions(o.Config.MaxFetchSessions),
	}
	s.namer = Namer{Tenant: o.Config.Tenant, Namespace: o.Config.Namespace,
		NamespaceExists: func(t, n string) bool { return s.be.NamespaceExists(s.ctx, t, n) }}
	m, err := newMetrics(s, o.Registerer)
	if err != nil {
		cancel()
		return nil, err
	}
	s.metrics = m
	return s, nil
}

// Listen binds every configured listener and serves them; it returns once they are bound.
func (s *Server) Listen() error {
	ls, err := config.ParseKafkaListeners("kafkaListeners", s.cfg.Listeners)
	if err != nil {
		return err
	}
	for _, l := range ls {
		nl, err := net.Listen("tcp", l.Addr())
		if err != nil {
			_ = s.Close()
			return fmt.Errorf("kafka: listen %s://%s: %w", l.Name, l.Addr(), err)
		}
		s.Serve(nl)
	}
	return nil
}

// Serve accepts connections on l in the background until Close.
func (s *Server) Serve(l net.Listener) {
	s.mu.Lock()
	s.listeners = append(s.listeners, l)
	s.mu.Unlock()
	s.log.Info("kafka protocol listening", "addr", l.Addr().String())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := l.Accept()
			if err != nil {
				if s.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
					s.log.Error("kafka accept failed; listener stops", "addr", l.Addr().String(), "err", err)
				}
				return
			}
			if tc, ok := nc.(*net.TCPConn); ok {
				_ = tc.SetNoDelay(true)
			}
			c := newConn(s, nc)
			s.mu.Lock()
			if s.ctx.Err() != nil {
				s.mu.Unlock()
				_ = nc.Close()
				return
			}
			s.conns[c] = struct{}{}
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				c.serve()
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
			}()
		}
	}()
}

// Addrs are the bound listener addresses (useful with port 0).
func (s *Server) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]net.Addr, len(s.listeners))
	for i, l := range s.listeners {
		out[i] = l.Addr()
	}
	return out
}

// Close stops listening, closes every connection and waits for them.
func (s *Server) Close() error {
	s.cancel()
	s.mu.Lock()
	for _, l := range s.listeners {
		_ = l.Close()
	}
	for c := range s.conns {
		_ = c.nc.Close()
	}
	s.mu.Unlock()
	s.groups.Close()
	s.wg.Wait()
	s.mu.Lock()
	logs := s.logs
	s.logs = map[string]*partition{}
	s.mu.Unlock()
	for _, p := range logs {
		if c, ok := p.log.(closableLog); ok {
			c.Close()
		}
	}
	return nil
}
