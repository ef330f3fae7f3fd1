package topics

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/schema"
)

// Errors of the service itself (the classes front ends translate are in errors.go).
var (
	ErrClosed    = errors.New("topics: closed")
	ErrBadConfig = errors.New("topics: bad configuration")
)

// opTimeout bounds the service's own background storage and metadata work (unloading after
// a storage failure, applying changed policies, a deduplication replay read), matching the
// Go client's default operation timeout.
const opTimeout = 30 * time.Second

// Options are the topic service's collaborators.
type Options struct {
	// Config is the broker configuration: policies, delivery, dispatch limits, cluster name.
	Config config.BrokerConfig
	// Store holds topic records, policies, schemas and the dynamic configuration.
	Store metadata.Store
	// Ledgers opens the topics' logs (managed ledgers).
	Ledgers *managedledger.Factory
	// Logger is the parent logger (nil: discard).
	Logger *slog.Logger
	// Registerer receives the service's metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Ownership decides which topics this broker serves in a cluster (nil: all).
	Ownership Ownership
	// Authorizer decides what a principal may do (nil: everything is allowed; auth.go).
	Authorizer Authorizer
}

// Service is the topic service of one broker process: it owns the topics loaded here.
type Service struct {
	cfg     config.BrokerConfig
	store   metadata.Store
	res     *resources.Resources
	ledgers *managedledger.Factory
	log     *slog.Logger
	m       *metrics
	// schemas is the schema registry (schema.go).
	schemas *schema.Registry
	dyn     *dynamicConfig     // runtime-tunable settings (dynconfig.go)
	stop    context.CancelFunc // ends the dynamic-configuration watch
	own     Ownership          // nil: standalone, serves every topic
	authz   Authorizer

	nameID      string // random per process, part of generated producer names
	producerSeq atomic.Int64

	mu     sync.Mutex
	closed bool
	topics map[string]*topicFuture

	pol *policyManager // policy watches and periodic checks (policies.go)
}

// topicFuture is a topic being loaded or loaded; concurrent users wait on done.
type topicFuture struct {
	done chan struct{}
	t    *Topic
	err  error
}

// New starts the topic service; Close stops it.
func New(o Options) (*Service, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if o.Store == nil || o.Ledgers == nil {
		return nil, fmt.Errorf("%w: a metadata store and a managed ledger factory are required", ErrBadConfig)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var id [3]byte
	_, _ = rand.Read(id[:])
	s := &Service{
		cfg:     o.Config,
		store:   o.Store,
		res:     resources.New(o.Store),
		ledgers: o.Ledgers,
		log:     logger.With("component", "topics"),
		nameID:  hex.EncodeToString(id[:]),
		topics:  map[string]*topicFuture{},
		dyn:     newDynamicConfig(&o.Config),
		own:     o.Ownership,
		authz:   o.Authorizer,
	}
	// Entries read back from bookies get their dispatch metadata parsed once, on the way
	// into the cache; entries published here carry it from the publish.
	o.Ledgers.SetMetaParser(ParseEntryMeta)
	s.schemas = schema.New(o.Store, o.Config.Schema, logger)
	m, err := newMetrics(s, o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("topics: metrics: %w", err)
	}
	s.m = m
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go s.watchDynamic(ctx)
	if s.authz != nil {
		go s.recheckAuthorization(ctx, o.Config.Security.Authz.RecheckInterval()) // reauth.go
	}
	s.pol = startPolicies(s)
	return s, nil
}

// Config is the broker configuration the service runs with.
func (s *Service) Config() config.BrokerConfig { return s.cfg }

// now is the time on the broker's clock (managedledger.FactoryOptions.Clock): delayed
// delivery, expiry by age and broker entry timestamps read it, so an injected clock moves
// them with retention, TTL and transaction timeouts.
func (s *Service) now() time.Time { return s.ledgers.Clock().Now() }

// Close closes every loaded topic (their subscriptions' dispatchers stop, logs close),
// waiting for in-flight appends to finish or ctx to end. Front ends close their
// connections first.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.pol.stop()
	var errs []error
	for _, t := range s.LoadedTopics() {
		if err := t.close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// LoadedTopics lists the topics loaded on this broker.
func (s *Service) LoadedTopics() []*Topic {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Topic
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

// Loaded returns the topic if it is loaded on this broker (nil otherwise), without loading it.
func (s *Service) Loaded(name Name) *Topic {
	s.mu.Lock()
	f := s.topics[name.String()]
	s.mu.Unlock()
	if f == nil {
		return nil
	}
	select {
	case <-f.done:
		return f.t
	default:
		return nil
	}
}

// NewProducerName generates a name unique in this cluster for a producer that brings none.
func (s *Service) NewProducerName() string {
	return s.cfg.ClusterName + "-" + s.nameID + "-" + strconv.FormatInt(s.producerSeq.Add(1)-1, 10)
}
