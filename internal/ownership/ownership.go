package ownership

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// Errors of this package.
var (
	// ErrNotOwner: the bundle is owned by another broker, or this one cannot take it now.
	ErrNotOwner = errors.New("ownership: bundle not owned by this broker")
	// ErrNoBroker: no live broker can take the bundle.
	ErrNoBroker = errors.New("ownership: no live broker available")
	// ErrClosed: the manager is shutting down.
	ErrClosed = errors.New("ownership: closed")
)

// Key prefixes of the records this package owns (doc.go; the cluster's whole layout is
// resources/keys.go).
const (
	BrokersPrefix   = resources.BrokersPrefix
	OwnershipPrefix = resources.BundleOwnershipPrefix
	LeaderElection  = resources.LeaderElectionKey
)

// BrokerInfo is a live broker's registration value.
type BrokerInfo struct {
	PulsarServiceURL    string      `json:"pulsarServiceUrl"`
	PulsarServiceURLTLS string      `json:"pulsarServiceUrlTls,omitempty"`
	WebServiceURL       string      `json:"webServiceUrl"`
	WebServiceURLTLS    string      `json:"webServiceUrlTls,omitempty"`
	Instance            string      `json:"instance"`
	Load                *LoadReport `json:"load,omitempty"`
	// Protocols are the other protocols the broker serves, by name, with the address
	// clients use (Pulsar's LocalBrokerData.protocols: "kafka" -> "PLAINTEXT://host:port").
	Protocols map[string]string `json:"protocols,omitempty"`
}

// OwnerData is a bundle ownership value (Pulsar's NamespaceEphemeralData plus instance).
type OwnerData struct {
	NativeURL    string `json:"nativeUrl"`
	NativeURLTLS string `json:"nativeUrlTls"`
	HTTPURL      string `json:"httpUrl"`
	HTTPURLTLS   string `json:"httpUrlTls"`
	Disabled     bool   `json:"disabled"`
	Instance     string `json:"instance"`
}

// Unloader closes the topics this broker serves (the broker implements it).
type Unloader interface {
	// UnloadTopics unloads every loaded topic for which match(full name) is true: clients
	// are told to reconnect (and look the topic up again), logs are closed.
	UnloadTopics(ctx context.Context, match func(topic string) bool) error
}

// Options configure a Manager.
type Options struct {
	Store     metadata.Store
	Resources *resources.Resources
	// BrokerURL (pulsar://host:port) and HTTPURL (http://host:port) are what other brokers
	// redirect clients to.
	BrokerURL string
	HTTPURL   string
	// BrokerURLTLS (pulsar+ssl://) and HTTPURLTLS (https://) are the TLS listeners' URLs
	// ("": none), given to TLS clients in redirects.
	BrokerURLTLS, HTTPURLTLS string
	// TTL of the session that holds the registration and every ownership key.
	TTL time.Duration
	// LoadReportInterval is how often the load report is refreshed (0: 10 s).
	LoadReportInterval time.Duration
	// ShedInterval is how often the leader checks for a broker to shed a bundle from
	// (shed.go); 0 disables shedding.
	ShedInterval time.Duration
	// Shed is the load rule of shedding (shed.go).
	Shed ShedConfig
	// Split limits for automatic splits of held bundles, checked after each load report.
	Split SplitLimits
	// Probe checks that an owner at host:port is up before clients are sent there (nil: a
	// TCP dial; tests replace it).
	Probe func(ctx context.Context, hostPort string) error
	// Score weighs load reports for assignment and shedding (loadscore.go; zero fields take
	// DefaultScoreConfig's values).
	Score ScoreConfig
	// AskLeader asks the leader at its webServiceUrl which broker should take a free bundle
	// (nil: HTTP, assign.go; tests replace it).
	AskLeader func(ctx context.Context, leaderHTTPURL string, b resources.Bundle) (BrokerInfo, error)
	// HTTPClient is how this broker calls other brokers' admin API (asking the leader,
	// shedding): with their TLS trust and this broker's credentials once security is on
	// (nil: http.DefaultClient).
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Protocols go into the registration (BrokerInfo.Protocols); SetProtocol adds one
	// later, for a front end that learns its address only once it listens.
	Protocols map[string]string
}

// Result answers a lookup.
type Result struct {
	// Self: this broker owns the bundle now; serve the topic.
	Self bool
	// Otherwise the broker to redirect to, and whether it must take the bundle when free.
	BrokerURL, HTTPURL       string
	BrokerURLTLS, HTTPURLTLS string
	Authoritative            bool
}

// Manager holds this broker's bundle ownerships and its registration.
type Manager struct {
	store        metadata.Store
	res          *resources.Resources
	self         OwnerData
	key          string // registration key
	ttl          time.Duration
	interval     time.Duration
	log          *slog.Logger
	stats        func() LoadStats
	probe        func(ctx context.Context, hostPort string) error
	shedInterval time.Duration
	shed         ShedConfig
	split        SplitLimits
	score        ScoreConfig
	askLeader    func(ctx context.Context, leaderHTTPURL string, b resources.Bundle) (BrokerInfo, error)
	httpc        *http.Client

	mu        sync.Mutex
	protocols map[string]string
	sess      metadata.Session // nil while lost and not yet renewed
	renewed   chan struct{}    // signalled (buffer 1) when a new session replaced a lost one
	owned     map[string]resources.Bundle
	bounds    map[string][]uint32                // namespace -> boundaries (bundles are never split yet)
	dialed    map[string]time.Time               // broker host:port -> last successful dial (reachable)
	taking    map[resources.Bundle]chan struct{} // takes in progress, closed when done
	unloader  Unloader
	closing   bool
	released  chan struct{} // closed when a graceful release has finished
	leader    metadata.Leadership
	assigned  map[string]assignment // leader only: bundle -> broker it was recently assigned to

	stop chan struct{}
	wg   sync.WaitGroup
}

// Start opens the ownership session and begins watching it. Call Register once the broker
// serves, so no client is sent here before it listens.
func Start(ctx context.Context, o Options) (*Manager, error) {
	if o.Store == nil || o.Resources == nil || o.BrokerURL == "" || o.HTTPURL == "" {
		return nil, fmt.Errorf("ownership: store, resources and URLs are required")
	}
	if o.TTL <= 0 {
		o.TTL = 30 * time.Second
	}
	if o.LoadReportInterval <= 0 {
		o.LoadReportInterval = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Probe == nil {
		o.Probe = dialProbe
	}
	o.Score = o.Score.withDefaults()
	var id [8]byte
	_, _ = rand.Read(id[:])
	u, err := url.Parse(o.BrokerURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("ownership: bad broker URL %q", o.BrokerURL)
	}
	m := &Manager{
		store: o.Store, res: o.Resources, ttl: o.TTL, interval: o.LoadReportInterval, probe: o.Probe, shedInterval: o.ShedInterval, split: o.Split,
		self:  OwnerData{NativeURL: o.BrokerURL, NativeURLTLS: o.BrokerURLTLS, HTTPURL: o.HTTPURL, HTTPURLTLS: o.HTTPURLTLS, Instance: hex.EncodeToString(id[:])},
		key:   BrokersPrefix + u.Host,
		log:   o.Logger.With("component", "ownership"),
		owned: map[string]resources.Bundle{}, bounds: map[string][]uint32{}, dialed: map[string]time.Time{}, taking: map[resources.Bundle]chan struct{}{},
		score: o.Score, shed: o.Shed.withDefaults(), assigned: map[string]assignment{}, protocols: maps.Clone(o.Protocols),
		renewed: make(chan struct{}, 1), released: make(chan struct{}), stop: make(chan struct{}),
	}
	sess, err := m.store.NewSession(ctx, m.ttl)
	if err != nil {
		return nil, fmt.Errorf("ownership: session: %w", err)
	}
	m.askLeader = o.AskLeader
	m.httpc = o.HTTPClient
	if m.httpc == nil {
		m.httpc = http.DefaultClient
	}
	if m.askLeader == nil {
		m.askLeader = m.askLeaderHTTP
	}
	m.sess = sess
	m.wg.Add(1)
	go m.watchSession(sess)
	return m, nil
}

// SetProtocol adds a protocol to the registration (BrokerInfo.Protocols) from the next
// publish on; call it before Register.
func (m *Manager) SetProtocol(name, addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.protocols == nil {
		m.protocols = map[string]string{}
	}
	m.protocols[name] = addr
}

// SetUnloader tells the manager how to close topics whose bundle it lost.
func (m *Manager) SetUnloader(u Unloader) {
	m.mu.Lock()
	m.unloader = u
	m.mu.Unlock()
}

// Self is this broker's ownership value.
func (m *Manager) Self() OwnerData { return m.self }

// ownerKey is the ownership key of a bundle.
func ownerKey(b resources.Bundle) string { return OwnershipPrefix + b.String() }

// NamespaceOf returns "tenant/ns" of a full topic name "domain://tenant/ns/local".
func NamespaceOf(topic string) (string, bool) {
	_, rest, ok := strings.Cut(topic, "://")
	if !ok {
		return "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 3 || parts[0] == "" || parts[1] == "" {
		return "", false
	}
	return parts[0] + "/" + parts[1], true
}

// BundleOf returns the bundle of a full topic name, recording the namespace's bundles in
// its policies when an older namespace has none.
func (m *Manager) BundleOf(ctx context.Context, topic string) (resources.Bundle, error) {
	ns, ok := NamespaceOf(topic)
	if !ok {
		return resources.Bundle{}, fmt.Errorf("%w: bad topic name %q", resources.ErrInvalid, topic)
	}
	m.mu.Lock()
	b, ok := m.bounds[ns]
	m.mu.Unlock()
	if !ok {
		var err error
		if b, err = m.loadBoundaries(ctx, ns); err != nil {
			return resources.Bundle{}, err
		}
		m.mu.Lock()
		m.bounds[ns] = b
		m.mu.Unlock()
	}
	return resources.FindBundle(ns, b, resources.TopicHash(topic)), nil
}

func (m *Manager) loadBoundaries(ctx context.Context, ns string) ([]uint32, error) {
	tenant, name, _ := strings.Cut(ns, "/")
	p, err := m.res.Namespace(ctx, tenant, name)
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", ns, err)
	}
	if p.Bundles == nil || len(p.Bundles.Boundaries) == 0 {
		// A namespace created before bundles were recorded: fix its split now, once, so
		// every broker agrees on it whatever its own default.
		def, err := resources.DefaultBundles(resources.DefaultNumBundles)
		if err != nil {
			return nil, err
		}
		err = m.res.UpdateNamespace(ctx, tenant, name, func(p *resources.Policies) error {
			if p.Bundles == nil || len(p.Bundles.Boundaries) == 0 {
				p.Bundles = def
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("namespace %s: recording bundles: %w", ns, err)
		}
		if p, err = m.res.Namespace(ctx, tenant, name); err != nil {
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	return resources.ParseBoundaries(p.Bundles.Boundaries)
}

// Owned tells whether this broker holds the bundle now.
func (m *Manager) Owned(b resources.Bundle) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.owned[b.String()]
	return ok
}

// Holds tells, without I/O, whether this broker holds the bundle of topic now (false when
// the namespace's bundles were never read here).
func (m *Manager) Holds(topic string) bool {
	ns, ok := NamespaceOf(topic)
	if !ok {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.bounds[ns]
	if !ok {
		return false
	}
	_, held := m.owned[resources.FindBundle(ns, b, resources.TopicHash(topic)).String()]
	return held && !m.closing
}

// OwnedBundles lists the bundles this broker holds, sorted.
func (m *Manager) OwnedBundles() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.owned))
	for k := range m.owned {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Acquire makes sure this broker owns the topic's bundle, taking it when no broker does;
// ErrNotOwner when another broker owns it.
func (m *Manager) Acquire(ctx context.Context, topic string) error {
	r, err := m.lookup(ctx, topic, true, true)
	if err != nil {
		return err
	}
	if !r.Self {
		return fmt.Errorf("%w: %s is served by %s", ErrNotOwner, topic, r.BrokerURL)
	}
	return nil
}

// maxLookupRounds bounds the retries of one lookup when ownership changes under it.
const maxLookupRounds = 5

// Lookup says who serves topic: this broker (it owns the bundle, or took it because nobody
// did and either authoritative is set or this broker is the least loaded), or another broker
// to redirect to.
func (m *Manager) Lookup(ctx context.Context, topic string, authoritative bool) (Result, error) {
	return m.lookup(ctx, topic, authoritative, false)
}

// lookup is Lookup; with verify, a bundle we believe we hold is checked against the store
// first. A broker that has not noticed yet that its session was lost (paused, partitioned)
// must not load a topic on a stale belief: its managed-ledger open would fence the new
// owner's ledger. Topic loads verify; plain LOOKUPs do not (the load that follows does).
func (m *Manager) lookup(ctx context.Context, topic string, authoritative, verify bool) (Result, error) {
	for range maxLookupRounds {
		// Inside the loop: a take that finds the namespace split meanwhile refreshes the
		// cached boundaries, and the next round must use them.
		b, err := m.BundleOf(ctx, topic)
		if err != nil {
			return Result{}, err
		}
		key := ownerKey(b)
		m.mu.Lock()
		closing, released := m.closing, m.released
		_, mine := m.owned[b.String()]
		m.mu.Unlock()
		if mine && !closing {
			if !verify {
				return Result{Self: true}, nil
			}
			held, err := m.verifyHeld(ctx, b)
			if err != nil {
				return Result{}, err
			}
			if held {
				return Result{Self: true}, nil
			}
			continue
		}
		if mine && closing {
			// Being released: wait until our keys are gone, then send the client on.
			if err := waitCh(ctx, released, m.ttl); err != nil {
				return Result{}, err
			}
			continue
		}
		kv, err := m.store.Get(ctx, key)
		switch {
		case err == nil:
			var od OwnerData
			if err := json.Unmarshal(kv.Value, &od); err != nil {
				return Result{}, fmt.Errorf("ownership: corrupt owner of %s: %w", b, err)
			}
			if od.Instance == m.self.Instance && m.waitTaking(ctx, b) {
				continue // another request of ours is taking it right now: look again
			}
			if od.Instance == m.self.Instance || od.NativeURL == m.self.NativeURL {
				// Ours but not held (a lost session whose lease has not run out yet), or a
				// predecessor on our address: wait for the key to expire, then take it.
				if err := m.waitGone(ctx, key, kv.Version); err != nil {
					return Result{}, err
				}
				continue
			}
			if !m.reachable(ctx, od.NativeURL) {
				// The owner is down (refused connection) but its lease still runs: rather
				// than send the client there to fail and back off, wait here for the key to
				// expire and take the bundle (failover then costs the lease, not the
				// client's growing retry delays). A partitioned-but-alive owner keeps its
				// key: after the wait, redirect to it anyway.
				if m.waitGone(ctx, key, kv.Version) == nil {
					continue
				}
			}
			return Result{BrokerURL: od.NativeURL, HTTPURL: od.HTTPURL, BrokerURLTLS: od.NativeURLTLS, HTTPURLTLS: od.HTTPURLTLS, Authoritative: true}, nil
		case !errors.Is(err, metadata.ErrNotFound):
			return Result{}, fmt.Errorf("ownership: reading owner of %s: %w", b, err)
		}
		if !authoritative || closing {
			cand, err := m.chooseOwner(ctx, b, closing)
			if err != nil {
				return Result{}, err
			}
			if cand.Instance != m.self.Instance {
				return Result{BrokerURL: cand.PulsarServiceURL, HTTPURL: cand.WebServiceURL,
					BrokerURLTLS: cand.PulsarServiceURLTLS, HTTPURLTLS: cand.WebServiceURLTLS, Authoritative: true}, nil
			}
		}
		ok, err := m.take(ctx, b)
		if err != nil {
			return Result{}, err
		}
		if ok {
			return Result{Self: true}, nil
		}
	}
	return Result{}, fmt.Errorf("%w: ownership of %s keeps changing", ErrNotOwner, topic)
}

// verifyHeld reads a bundle's key: true when it still carries our instance. Otherwise the
// bundle was lost without our noticing (the key expired or another broker holds it): it is
// forgotten and its topics are unloaded in the background.
func (m *Manager) verifyHeld(ctx context.Context, b resources.Bundle) (bool, error) {
	kv, err := m.store.Get(ctx, ownerKey(b))
	if err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return false, fmt.Errorf("ownership: reading owner of %s: %w", b, err)
	}
	var od OwnerData
	if err == nil && json.Unmarshal(kv.Value, &od) == nil && od.Instance == m.self.Instance {
		return true, nil
	}
	m.mu.Lock()
	delete(m.owned, b.String())
	u := m.unloader
	m.mu.Unlock()
	m.log.Warn("bundle lost without notice (its key expired or another broker holds it); unloading its topics", "bundle", b.String())
	if u != nil {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = u.UnloadTopics(ctx, func(topic string) bool {
				tb, err := m.BundleOf(ctx, topic)
				return err == nil && tb == b
			})
		}()
	}
	return false, nil
}

// take tries to create the bundle's ownership key through our session; false when another
// broker got there first.
func (m *Manager) take(ctx context.Context, b resources.Bundle) (bool, error) {
	m.mu.Lock()
	sess, closing := m.sess, m.closing
	m.mu.Unlock()
	if closing {
		return false, fmt.Errorf("%w: broker shutting down", ErrClosed)
	}
	if sess == nil {
		return false, fmt.Errorf("%w: metadata session lost, renewing", ErrNotOwner)
	}
	m.mu.Lock()
	if ch, ok := m.taking[b]; ok {
		m.mu.Unlock()
		select { // another request of ours is taking it: wait, then look again
		case <-ch:
		case <-ctx.Done():
		}
		return false, nil
	}
	done := make(chan struct{})
	m.taking[b] = done
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.taking, b)
		m.mu.Unlock()
		close(done)
	}()
	v, _ := json.Marshal(m.self)
	ver, err := sess.PutEphemeral(ctx, ownerKey(b), v, metadata.NotExists)
	if errors.Is(err, metadata.ErrBadVersion) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%w: taking %s: %w", ErrNotOwner, b, err)
	}
	if ok, err := m.stillABundle(ctx, b, ver); !ok || err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sess != sess {
		// The session ended while we wrote: the key dies with it.
		return false, fmt.Errorf("%w: metadata session lost while taking %s", ErrNotOwner, b)
	}
	m.owned[b.String()] = b
	m.log.Info("bundle acquired", "bundle", b.String())
	return true, nil
}

// waitTaking waits for a take of b by another request of ours, if one is running; true if
// it waited. Without it, a lookup that reads our fresh key before that take has recorded the
// bundle would mistake it for a key of a lost session and wait for it to expire.
func (m *Manager) waitTaking(ctx context.Context, b resources.Bundle) bool {
	m.mu.Lock()
	ch, ok := m.taking[b]
	m.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
	return true
}

// waitGone waits until the key at version seen is gone: deleted (its lease expired) or
// replaced, at most ttl plus a margin. Replaced counts: when the lease runs out and another
// broker takes the bundle before our watch starts, the watch only ever shows that broker's
// live key, and waiting for it to vanish would fail a lookup the next round answers.
func (m *Manager) waitGone(ctx context.Context, key string, seen metadata.Version) error {
	ctx, cancel := context.WithTimeout(ctx, m.ttl+2*time.Second)
	defer cancel()
	ch, err := m.store.Watch(ctx, key, false)
	if err != nil {
		return fmt.Errorf("ownership: watching %s: %w", key, err)
	}
	exists := false
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return fmt.Errorf("%w: waiting for the previous owner's key %s: %w", ErrNotOwner, key, context.Cause(ctx))
			}
			exists = ev.Type == metadata.EventPut
			if !exists || ev.Version != seen {
				return nil
			}
		case <-time.After(50 * time.Millisecond):
			// The watch delivers the current state first; no event means no key.
			if !exists {
				kv, err := m.store.Get(ctx, key)
				if errors.Is(err, metadata.ErrNotFound) || (err == nil && kv.Version != seen) {
					return nil
				}
				exists = true
			}
		}
	}
}

// reachableFor is how long a successful dial of a broker is trusted: short, because a
// broker that just died must be noticed by the next lookup, not seconds later.
const reachableFor = 250 * time.Millisecond

// reachable tells whether the broker at a pulsar:// URL accepts TCP connections, remembering
// successes for reachableFor so lookups do not dial every time.
func (m *Manager) reachable(ctx context.Context, brokerURL string) bool {
	u, err := url.Parse(brokerURL)
	if err != nil || u.Host == "" {
		return true // not ours to judge; the client will find out
	}
	m.mu.Lock()
	ok := time.Since(m.dialed[u.Host]) < reachableFor
	m.mu.Unlock()
	if ok {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if m.probe(ctx, u.Host) != nil {
		return false
	}
	m.mu.Lock()
	m.dialed[u.Host] = time.Now()
	m.mu.Unlock()
	return true
}

func dialProbe(ctx context.Context, hostPort string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", hostPort)
	if err != nil {
		return err
	}
	return c.Close()
}

func waitCh(ctx context.Context, ch <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return fmt.Errorf("%w: bundle release did not finish", ErrNotOwner)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// LiveBrokers lists the registered brokers by registration key.
func (m *Manager) LiveBrokers(ctx context.Context) (map[string]BrokerInfo, error) {
	kvs, err := m.store.List(ctx, BrokersPrefix)
	if err != nil {
		return nil, fmt.Errorf("ownership: listing brokers: %w", err)
	}
	out := make(map[string]BrokerInfo, len(kvs))
	for _, kv := range kvs {
		var bi BrokerInfo
		if json.Unmarshal(kv.Value, &bi) == nil && bi.PulsarServiceURL != "" {
			out[strings.TrimPrefix(kv.Key, BrokersPrefix)] = bi
		}
	}
	return out, nil
}

// Owners lists every bundle ownership of the cluster: bundle ("tenant/ns/0x.._0x..") -> owner.
func (m *Manager) Owners(ctx context.Context) (map[string]OwnerData, error) {
	kvs, err := m.store.List(ctx, OwnershipPrefix)
	if err != nil {
		return nil, fmt.Errorf("ownership: listing owners: %w", err)
	}
	out := make(map[string]OwnerData, len(kvs))
	for _, kv := range kvs {
		var od OwnerData
		if json.Unmarshal(kv.Value, &od) == nil {
			out[strings.TrimPrefix(kv.Key, OwnershipPrefix)] = od
		}
	}
	return out, nil
}

// watchSession waits for the session to end; unless we are shutting down that is a loss:
// every bundle is given up and its topics unloaded, then a new session is opened.
func (m *Manager) watchSession(sess metadata.Session) {
	defer m.wg.Done()
	select {
	case <-sess.Done():
	case <-m.stop:
		return
	}
	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		return
	}
	lost := len(m.owned)
	m.owned = map[string]resources.Bundle{}
	m.sess = nil
	u := m.unloader
	m.mu.Unlock()
	m.log.Warn("metadata session lost: giving up every bundle and unloading its topics", "bundles", lost)
	if u != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := u.UnloadTopics(ctx, func(string) bool { return true }); err != nil {
			m.log.Warn("unloading topics after session loss", "err", err)
		}
		cancel()
	}
	delay := 100 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(context.Background(), m.ttl)
		ns, err := m.store.NewSession(ctx, m.ttl)
		cancel()
		if err == nil {
			m.mu.Lock()
			if m.closing {
				m.mu.Unlock()
				_ = ns.Close()
				return
			}
			m.sess = ns
			m.mu.Unlock()
			select {
			case m.renewed <- struct{}{}:
			default:
			}
			m.log.Info("metadata session renewed")
			m.wg.Add(1)
			go m.watchSession(ns)
			return
		}
		m.log.Warn("renewing the metadata session failed; retrying", "err", err, "in", delay)
		select {
		case <-time.After(delay):
		case <-m.stop:
			return
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// Release gives every bundle up for a graceful shutdown: lookups stop choosing this broker,
// topics are unloaded (clients look them up again and go elsewhere), then the ownership keys
// are deleted by ending the session. Call it before closing the broker.
func (m *Manager) Release(ctx context.Context) error {
	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		return nil
	}
	m.closing = true
	u, sess := m.unloader, m.sess
	m.mu.Unlock()
	close(m.stop)
	m.stopBackground()
	var errs []error
	if err := m.store.Delete(ctx, m.key, metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
		errs = append(errs, fmt.Errorf("ownership: deregistering: %w", err))
	}
	if u != nil {
		errs = append(errs, u.UnloadTopics(ctx, func(string) bool { return true }))
	}
	if sess != nil {
		errs = append(errs, sess.Close()) // revokes the lease: every ownership key goes at once
	}
	m.mu.Lock()
	n := len(m.owned)
	m.owned = map[string]resources.Bundle{}
	m.mu.Unlock()
	close(m.released)
	m.wg.Wait()
	m.log.Info("bundles released", "bundles", n)
	return errors.Join(errs...)
}
