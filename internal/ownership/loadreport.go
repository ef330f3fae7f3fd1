package ownership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// LoadStats are the broker-side counts a load report carries (the broker supplies them).
type LoadStats struct {
	Topics      int     `json:"numTopics"`
	Producers   int     `json:"numProducers"`
	Consumers   int     `json:"numConsumers"`
	Connections int     `json:"numConnections"`
	MsgRateIn   float64 `json:"msgRateIn"`
	MsgRateOut  float64 `json:"msgRateOut"`
	BytesIn     float64 `json:"msgThroughputIn"`
	BytesOut    float64 `json:"msgThroughputOut"`
	// Running totals the rates are computed from (the broker supplies these, the report
	// fills the rates above from two samples).
	MsgsInTotal, MsgsOutTotal, BytesInTotal, BytesOutTotal int64 `json:"-"`
}

// LoadReport is what a broker publishes in its registration (a subset of Pulsar's
// LocalBrokerData): its counts, rates, CPU and memory, and its bundle count.
type LoadReport struct {
	LoadStats
	Bundles    int     `json:"numBundles"`
	CPUPercent float64 `json:"cpuUsagePercent"` // process CPU time over wall time since the last report, per core
	MemoryMB   float64 `json:"memoryUsageMB"`   // Go heap and runtime memory in use
	LastUpdate int64   `json:"lastUpdate"`      // ms since the epoch
	// BundleStats: rates and counts of each held bundle with loaded topics, by bundle name
	// (bundlestats.go); the leader sheds from these.
	BundleStats map[string]BundleStats `json:"bundleStats,omitempty"`
}

// Register publishes this broker as live, refreshes its load report every
// LoadReportInterval through the ownership session (a new session re-registers at once), and
// campaigns for leadership. stats may be nil.
func (m *Manager) Register(ctx context.Context, stats func() LoadStats) error {
	m.mu.Lock()
	m.stats = stats
	m.mu.Unlock()
	if err := m.publish(ctx); err != nil {
		return err
	}
	m.wg.Add(2)
	go m.reportLoop()
	go m.leaderLoop()
	return nil
}

// cpuSample remembers the process CPU seconds and the message totals at the last report.
type cpuSample struct {
	at    time.Time
	cpu   float64
	stats LoadStats
}

// rate is the per-second increase of a running total (0 when it went down: a topic with its
// counts was unloaded).
func rate(now, before int64, secs float64) float64 {
	if secs <= 0 || now < before {
		return 0
	}
	return float64(now-before) / secs
}

var cpuMetric = []metrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/memory/classes/total:bytes"}}

func (m *Manager) report(prev *cpuSample) *LoadReport {
	r := &LoadReport{LastUpdate: time.Now().UnixMilli()}
	m.mu.Lock()
	stats := m.stats
	r.Bundles = len(m.owned)
	m.mu.Unlock()
	if stats != nil {
		r.LoadStats = stats()
	}
	s := make([]metrics.Sample, len(cpuMetric))
	copy(s, cpuMetric)
	metrics.Read(s)
	now := time.Now()
	wall := now.Sub(prev.at).Seconds()
	if prev.at.IsZero() {
		wall = 0
	}
	if wall > 0 {
		r.MsgRateIn = rate(r.MsgsInTotal, prev.stats.MsgsInTotal, wall)
		r.MsgRateOut = rate(r.MsgsOutTotal, prev.stats.MsgsOutTotal, wall)
		r.BytesIn = rate(r.BytesInTotal, prev.stats.BytesInTotal, wall)
		r.BytesOut = rate(r.BytesOutTotal, prev.stats.BytesOutTotal, wall)
	}
	if s[0].Value.Kind() == metrics.KindFloat64 {
		cpu := s[0].Value.Float64()
		if wall > 0 {
			r.CPUPercent = 100 * (cpu - prev.cpu) / wall / float64(runtime.GOMAXPROCS(0))
		}
		prev.cpu = cpu
	}
	prev.at, prev.stats = now, r.LoadStats
	if s[1].Value.Kind() == metrics.KindUint64 {
		r.MemoryMB = float64(s[1].Value.Uint64()) / (1 << 20)
	}
	return r
}

// publish writes the registration with a fresh load report through the current session.
func (m *Manager) publish(ctx context.Context) error {
	var prev cpuSample
	return m.publishReport(ctx, m.report(&prev))
}

func (m *Manager) publishReport(ctx context.Context, r *LoadReport) error {
	m.mu.Lock()
	sess := m.sess
	protocols := maps.Clone(m.protocols)
	m.mu.Unlock()
	if sess == nil {
		return fmt.Errorf("%w: no metadata session", ErrNotOwner)
	}
	v, _ := json.Marshal(BrokerInfo{PulsarServiceURL: m.self.NativeURL, PulsarServiceURLTLS: m.self.NativeURLTLS,
		WebServiceURL: m.self.HTTPURL, WebServiceURLTLS: m.self.HTTPURLTLS, Instance: m.self.Instance, Load: r, Protocols: protocols})
	if _, err := sess.PutEphemeral(ctx, m.key, v, metadata.AnyVersion); err != nil {
		return fmt.Errorf("ownership: registering %s: %w", m.key, err)
	}
	return nil
}

func (m *Manager) reportLoop() {
	defer m.wg.Done()
	var prev cpuSample
	var bprev bundleSample
	m.report(&prev)
	m.sampleBundles(context.Background(), &bprev)
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		case <-m.renewed:
			// A renewed session: register again at once.
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.ttl)
		r := m.report(&prev)
		r.BundleStats = m.sampleBundles(ctx, &bprev)
		if err := m.publishReport(ctx, r); err != nil && !errors.Is(err, ErrNotOwner) {
			m.log.Warn("publishing the load report", "err", err)
		}
		cancel()
		ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		m.autoSplit(ctx, r.BundleStats)
		cancel()
	}
}

// leaderLoop campaigns for the brokers' leadership with every session it gets. The leader
// sheds load (shed.go), assigns free bundles (assign.go) and is what
// /admin/v2/brokers/leaderBroker reports.
func (m *Manager) leaderLoop() {
	defer m.wg.Done()
	for {
		m.mu.Lock()
		sess := m.sess
		m.mu.Unlock()
		if sess == nil {
			select {
			case <-m.stop:
				return
			case <-time.After(100 * time.Millisecond):
				continue
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-m.stop:
			case <-sess.Done():
			case <-ctx.Done():
			}
			cancel()
		}()
		l, err := sess.Campaign(ctx, LeaderElection, []byte(m.self.HTTPURL))
		if err == nil {
			m.mu.Lock()
			m.leader = l
			m.mu.Unlock()
			m.log.Info("this broker is the leader")
			shedCtx, shedCancel := context.WithCancel(ctx)
			shedDone := make(chan struct{})
			go func() { defer close(shedDone); m.shedLoop(shedCtx) }()
			select {
			case <-l.Done():
			case <-ctx.Done():
			}
			shedCancel()
			<-shedDone
			m.mu.Lock()
			m.leader = nil
			m.mu.Unlock()
		}
		cancel()
		select {
		case <-m.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Leader returns the leader broker's webServiceUrl.
func (m *Manager) Leader(ctx context.Context) (string, error) {
	kv, err := metadata.Leader(ctx, m.store, LeaderElection)
	if err != nil {
		return "", err
	}
	return string(kv.Value), nil
}

// stopBackground waits for the report and leader loops after stop was closed.
func (m *Manager) stopBackground() {
	m.mu.Lock()
	l := m.leader
	m.mu.Unlock()
	if l != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = l.Resign(ctx)
		cancel()
	}
}
