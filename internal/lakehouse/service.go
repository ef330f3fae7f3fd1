package lakehouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/schema"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// Table properties the writers keep (doc.go).
const (
	propTopic         = "magnetar.topic"
	propSchemaVersion = "magnetar.schema-version"
)

// ErrPolicy marks a bad icebergPolicies value.
var ErrPolicy = errors.New("lakehouse: invalid iceberg policy")

// Policy is a topic's effective iceberg policy.
type Policy struct {
	Enabled         bool
	Partitioning    string
	RetentionHours  int // -1: forever
	DeadLetterTopic string
}

// mergePolicies applies the topic's fields over the namespace's.
func mergePolicies(ns, topic *resources.IcebergPolicies) Policy {
	p := Policy{Partitioning: "hour", RetentionHours: -1}
	for _, q := range []*resources.IcebergPolicies{ns, topic} {
		if q == nil {
			continue
		}
		if q.Enabled != nil {
			p.Enabled = *q.Enabled
		}
		if q.Partitioning != "" {
			p.Partitioning = q.Partitioning
		}
		if q.RetentionHours != nil {
			p.RetentionHours = *q.RetentionHours
		}
		if q.DeadLetterTopic != "" {
			p.DeadLetterTopic = q.DeadLetterTopic
		}
	}
	return p
}

// ValidatePolicies checks a policy value before it is stored.
func ValidatePolicies(p resources.IcebergPolicies) error {
	switch p.Partitioning {
	case "", "hour", "day", "month", "year", "none":
	default:
		return fmt.Errorf("%w: partitioning %q: want hour, day, month, year or none", ErrPolicy, p.Partitioning)
	}
	if p.RetentionHours != nil && *p.RetentionHours < -1 {
		return fmt.Errorf("%w: retentionHours %d: -1 (forever) or more", ErrPolicy, *p.RetentionHours)
	}
	if p.DeadLetterTopic != "" {
		if _, err := topics.ParseName(p.DeadLetterTopic); err != nil {
			return fmt.Errorf("%w: deadLetterTopic: %w", ErrPolicy, err)
		}
	}
	return nil
}

// Options are what the lakehouse runs on.
type Options struct {
	Config    config.IcebergConfig
	Topics    *topics.Service
	Resources *resources.Resources
	Logger    *slog.Logger
	// Registerer receives the lakehouse's metrics (nil: not registered).
	Registerer prometheus.Registerer
}

// Service writes the topics whose policies enable it into their tables and serves the
// catalog (rest.go) and the admin endpoints (admin.go).
type Service struct {
	cfg    config.IcebergConfig
	topics *topics.Service
	res    *resources.Resources
	cat    *Catalog
	log    *slog.Logger
	m      *metrics

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	writers map[string]*running // by partition name
	stats   map[string]*tableStats
	maint   map[string]time.Time // last maintenance by table
}

type running struct {
	cancel context.CancelFunc
	done   chan struct{}
	pol    Policy
}

// New starts the lakehouse: a scan for topics to write every icebergScanIntervalSeconds.
func New(o Options) (*Service, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Topics == nil || o.Resources == nil {
		return nil, errors.New("lakehouse: a topic service and resources are required")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cat, err := NewCatalog(o.Resources.Store(), o.Config)
	if err != nil {
		return nil, err
	}
	s := &Service{
		cfg: o.Config, topics: o.Topics, res: o.Resources, log: log.With("component", "lakehouse"),
		cat:     cat,
		writers: map[string]*running{}, stats: map[string]*tableStats{}, maint: map[string]time.Time{},
	}
	s.m = newMetrics(s, o.Registerer)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.loop()
	return s, nil
}

// Catalog is the service's catalog.
func (s *Service) Catalog() *Catalog { return s.cat }

func (s *Service) commitInterval() time.Duration {
	return time.Duration(s.cfg.CommitIntervalSeconds) * time.Second
}

// Close stops every writer; what they had not committed is written again by the next owner.
func (s *Service) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

func (s *Service) loop() {
	defer s.wg.Done()
	t := time.NewTicker(time.Duration(s.cfg.ScanIntervalSeconds) * time.Second)
	defer t.Stop()
	for {
		s.scan(s.ctx)
		select {
		case <-s.ctx.Done():
			s.stopAll()
			return
		case <-t.C:
		}
	}
}

func (s *Service) stopAll() {
	s.mu.Lock()
	ws := make([]*running, 0, len(s.writers))
	for _, r := range s.writers {
		ws = append(ws, r)
	}
	s.mu.Unlock()
	for _, r := range ws {
		r.cancel()
		<-r.done
	}
}

// scan starts writers for the enabled topics with a schema and stops those whose policy
// was turned off; it also runs table maintenance (maintenance.go).
func (s *Service) scan(ctx context.Context) {
	want := map[string]Policy{}
	off := map[string]bool{}
	tenants, err := s.res.Tenants(ctx)
	if err != nil {
		s.log.Warn("lakehouse scan: listing tenants", "error", err)
		return
	}
	s.log.Debug("lakehouse scan: tenants", "tenants", tenants)
	for _, tenant := range tenants {
		nss, err := s.res.Namespaces(ctx, tenant)
		if err != nil {
			s.log.Debug("lakehouse scan: namespaces", "tenant", tenant, "error", err)
			continue
		}
		for _, ns := range nss { // "tenant/namespace"
			s.scanNamespace(ctx, tenant, strings.TrimPrefix(ns, tenant+"/"), want, off)
		}
	}
	s.mu.Lock()
	for name, r := range s.writers {
		if _, ok := want[name]; !ok {
			r.cancel()
			delete(s.writers, name)
			s.log.Info("iceberg writer stopped: policy off, topic gone or served elsewhere", "topic", name)
			if off[name] {
				go s.dropHold(name)
			}
		}
	}
	for name, pol := range want {
		if _, ok := s.writers[name]; ok || len(s.writers) >= s.cfg.MaxWriters {
			continue
		}
		n, _ := topics.ParseName(name)
		s.startLocked(n, pol)
	}
	s.mu.Unlock()
	s.maintain(ctx, want)
}

func (s *Service) scanNamespace(ctx context.Context, tenant, ns string, want map[string]Policy, off map[string]bool) {
	nsPol, err := s.res.Namespace(ctx, tenant, ns)
	if err != nil {
		s.log.Debug("lakehouse scan: namespace", "namespace", tenant+"/"+ns, "error", err)
		return
	}
	names, err := s.topics.ListTopics(ctx, tenant+"/"+ns, topics.DomainPersistent)
	if err != nil {
		s.log.Debug("lakehouse scan: listing topics", "namespace", tenant+"/"+ns, "error", err)
		return
	}
	s.log.Debug("lakehouse scan", "namespace", tenant+"/"+ns, "topics", names, "policy", nsPol.IcebergPolicies)
	topicPols := map[string]*resources.IcebergPolicies{}
	for _, name := range names {
		n, err := topics.ParseName(name)
		if err != nil || strings.HasSuffix(n.Base().Local, s.cfg.DeadLetterSuffix) {
			continue
		}
		base := n.Base()
		tp, seen := topicPols[base.Local]
		if !seen {
			p, err := s.res.TopicPolicies(ctx, base.Domain, base.Tenant, base.Namespace, base.Local)
			if err == nil {
				tp = p.IcebergPolicies
			}
			topicPols[base.Local] = tp
		}
		pol := mergePolicies(nsPol.IcebergPolicies, tp)
		if !pol.Enabled {
			off[n.String()] = true
			continue
		}
		if _, err := s.topics.Schemas().Latest(ctx, topics.SchemaID(base)); err != nil {
			if !errors.Is(err, schema.ErrNotFound) {
				s.log.Debug("lakehouse scan: schema", "topic", base.String(), "error", err)
			}
			continue // only topics with a schema are tables
		}
		if !s.servedHere(ctx, n) {
			continue
		}
		want[n.String()] = pol
	}
}

// servedHere tells whether this broker serves the topic: loaded here, or loadable (its
// bundle is ours). A cluster broker never opens another owner's topic.
func (s *Service) servedHere(ctx context.Context, n topics.Name) bool {
	if s.topics.Loaded(n) != nil {
		return true
	}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := s.topics.Topic(lctx, n, topics.Load{})
	return err == nil
}

// startLocked starts the writer of partition n; a writer that fails is restarted after a
// pause that grows to a minute.
func (s *Service) startLocked(n topics.Name, pol Policy) {
	base := n.Base()
	st := s.statsLocked(n.String())
	ctx, cancel := context.WithCancel(s.ctx)
	r := &running{cancel: cancel, done: make(chan struct{}), pol: pol}
	s.writers[n.String()] = r
	go func() {
		defer close(r.done)
		backoff := time.Second
		for ctx.Err() == nil {
			w := &writer{
				svc: s, name: n, base: base, pol: pol, st: st,
				ident: Ident{base.Tenant, base.Namespace, base.Local},
				part:  strconv.Itoa(n.Partition),
				log:   s.log.With("topic", n.String()),
			}
			started := time.Now()
			err := w.run(ctx)
			if ctx.Err() != nil {
				return
			}
			st.setError(err)
			if errors.Is(err, ErrPositionMoved) {
				w.log.Info("iceberg writer restarts from the table's position", "error", err)
			} else {
				w.log.Warn("iceberg writer failed; restarting", "error", err, "after", backoff)
			}
			if time.Since(started) > time.Minute {
				backoff = time.Second
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Minute)
		}
	}()
}

func (s *Service) statsLocked(name string) *tableStats {
	st := s.stats[name]
	if st == nil {
		st = &tableStats{committed: none, commitSeconds: observer{s.m.commit}}
		s.stats[name] = st
	}
	return st
}

// dropHold deletes the hold subscription of a topic that is no longer written, so it holds
// nothing back.
func (s *Service) dropHold(name string) {
	n, err := topics.ParseName(name)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	if err := s.topics.DeleteSubscription(ctx, n, HoldSubscription, true); err != nil && !errors.Is(err, topics.ErrSubscriptionNotFound) {
		s.log.Debug("deleting the iceberg hold subscription", "topic", name, "error", err)
	}
}
