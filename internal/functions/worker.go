package functions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/functions/wasm"
	"github.com/magnetar-io/magnetar/internal/io/builtin"
	"github.com/magnetar-io/magnetar/internal/io/connector"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/pkg/pf"
)

// Options are what a worker runs on.
type Options struct {
	Config config.FunctionsWorkerConfig
	Store  metadata.Store
	// Packages stores packages (pkgstore.Ledgers in the compositions).
	Packages Blobs
	// Resources checks that a function's tenant and namespace exist (nil: not checked).
	Resources   *resources.Resources
	ClusterName string
	// BrokerServiceURL is what instances connect to (pulsar://host:port); WebServiceURL
	// is where this worker's Handler is served (http://host:port), which other workers
	// forward to and instances read state from.
	BrokerServiceURL string
	WebServiceURL    string
	// DataDir holds package caches, virtualenvs and logs when downloadDirectory is empty.
	DataDir string
	Logger  *slog.Logger
	// BrokerWebServiceURL is the brokers' admin REST (http://host:port), where the leader
	// deletes the input subscriptions of a deleted function or sink (cleanupSubscription,
	// cleanup.go); empty: they stay, with a warning.
	BrokerWebServiceURL string
	// HTTPClient carries the worker's own credentials (brokerClient*) to the brokers' admin
	// REST and to other workers (nil: http.DefaultClient, as without authentication).
	HTTPClient *http.Client
	// InstanceAuthPlugin and InstanceAuthParams are the worker's own client credentials,
	// which every instance connects with (the seam for internal/auth).
	InstanceAuthPlugin, InstanceAuthParams string
	// InstanceTLSTrustCertsFile and InstanceTLSVerifyHostname are how instances (and
	// connectors) check a pulsar+ssl:// broker's certificate (brokerClientTrustCertsFilePath,
	// tlsHostnameVerificationEnabled).
	InstanceTLSTrustCertsFile string
	InstanceTLSVerifyHostname bool
	// Authorize, when set, admits each REST request: tenant and namespace are the
	// function's ("" for the worker endpoints, which need a superuser). It returns an error
	// wrapping ErrUnauthenticated (401) or ErrForbidden (403); nil admits everything. The
	// compositions (standalone, brokerd, `magnetar functions-worker`) leave it nil and put
	// admin.Secure in front of the handler instead, which applies the broker's rules.
	Authorize func(r *http.Request, tenant, namespace string) error
	// AuthorizePackage, when set, admits a function:// package URL at create or update: the
	// request's caller (in ctx) needs the packages permission on tenant/namespace. It
	// returns an error to refuse (403); nil admits every one.
	AuthorizePackage func(ctx context.Context, tenant, namespace string) error
	// Registerer, when set, gets the instances' metrics under Pulsar's names
	// (pulsar_function_*, pulsar_source_*, pulsar_sink_*; metrics.go).
	Registerer prometheus.Registerer
	// Connectors are the built-in sources and sinks (nil: every one compiled in,
	// builtin.Registry).
	Connectors *connector.Registry
}

// Errors Options.Authorize wraps.
var (
	ErrUnauthenticated = errors.New("functions: unauthenticated")
	ErrForbidden       = errors.New("functions: not authorized")
)

// Worker is a running functions worker.
type Worker struct {
	cfg    config.FunctionsWorkerConfig
	opts   Options
	log    *slog.Logger
	store  metadata.Store
	meta   metaStore
	pkgs   *packageStore
	state  stateStore
	info   WorkerInfo
	dir    string
	token  string
	reg    *metadata.Registration
	leader atomic.Bool

	process    *processRuntime
	wasm       *wasm.Engine
	connectors *connector.Registry

	mu        sync.Mutex
	instances map[string]*supervisor // by assignment key
	kick      chan struct{}          // reconcile assignments now

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	http   http.Handler

	collector prometheus.Collector // nil without Options.Registerer
}

// Start registers the worker, campaigns for leadership and starts running the instances
// assigned to it. Serve Handler on WebServiceURL.
func Start(ctx context.Context, o Options) (*Worker, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Store == nil || o.BrokerServiceURL == "" || o.WebServiceURL == "" {
		return nil, errors.New("functions: worker needs a metadata store, a broker service URL and its web service URL")
	}
	u, err := url.Parse(o.WebServiceURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("functions: web service URL %q: want http://host:port", o.WebServiceURL)
	}
	host, portStr, _ := net.SplitHostPort(u.Host)
	port, _ := strconv.Atoi(portStr)
	if o.Config.WorkerHostname != "" {
		host = o.Config.WorkerHostname
	}
	id := o.Config.WorkerID
	if id == "" {
		id = "c-" + o.ClusterName + "-fw-" + host + "-" + portStr
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dir := o.Config.DownloadDirectory
	if dir == "" {
		dir = filepath.Join(o.DataDir, "functions")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("functions: downloadDirectory: %w", err)
	}
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	w := &Worker{
		cfg: o.Config, opts: o, log: logger.With("component", "functions-worker", "workerId", id), store: o.Store,
		meta: metaStore{o.Store}, state: stateStore{store: o.Store, maxValue: o.Config.MaxStateValueBytes},
		pkgs: &packageStore{blobs: o.Packages, dir: dir},
		info: WorkerInfo{WorkerID: id, WorkerHostname: host, Port: port, URL: o.WebServiceURL},
		dir:  dir, token: hex.EncodeToString(tok), instances: map[string]*supervisor{}, kick: make(chan struct{}, 1),
		process: &processRuntime{python: &pythonEnvs{interpreter: o.Config.PythonInterpreter, clientVersion: o.Config.PythonPulsarClientVersion}},
	}
	w.wasm = wasm.NewEngine(wasm.Limits{
		MaxMemoryBytes: o.Config.WasmMaxMemoryMB << 20, MaxInvocation: time.Duration(o.Config.WasmMaxInvocationMs) * time.Millisecond,
		Interpreter: !o.Config.WasmCompiler,
	}, w.log)
	w.connectors = o.Connectors
	if w.connectors == nil {
		w.connectors = builtin.Registry()
	}
	w.http = w.routes()
	if o.Registerer != nil {
		w.collector = metricsCollector{w: w}
		if err := o.Registerer.Register(w.collector); err != nil {
			return nil, fmt.Errorf("functions: registering metrics: %w", err)
		}
	}
	infoJSON, _ := json.Marshal(w.info)
	regOpts := metadata.DefaultRegistrationOptions()
	regOpts.TTL = time.Duration(o.Config.SessionTimeoutMs) * time.Millisecond
	if w.reg, err = metadata.Register(ctx, o.Store, prefixWorkers+id, infoJSON, regOpts, w.log); err != nil {
		return nil, fmt.Errorf("functions: registering worker: %w", err)
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.wg.Add(2)
	go w.campaign(infoJSON)
	go w.runAssignments()
	w.log.Info("functions worker started", "url", o.WebServiceURL, "dir", dir)
	return w, nil
}

// ID is the worker's id.
func (w *Worker) ID() string { return w.info.WorkerID }

// IsLeader reports whether this worker leads now.
func (w *Worker) IsLeader() bool { return w.leader.Load() }

// Handler serves /admin/v3/functions, /admin/v2/worker and /admin/v2/worker-stats.
func (w *Worker) Handler() http.Handler { return w.http }

// Close stops every instance, resigns leadership and deregisters.
func (w *Worker) Close() error {
	w.cancel()
	w.wg.Wait()
	w.mu.Lock()
	sups := make([]*supervisor, 0, len(w.instances))
	for _, s := range w.instances {
		sups = append(sups, s)
	}
	w.instances = map[string]*supervisor{}
	w.mu.Unlock()
	stopAll(sups)
	w.wasm.Close()
	if w.collector != nil {
		w.opts.Registerer.Unregister(w.collector)
	}
	return w.reg.Close()
}

func stopAll(sups []*supervisor) {
	var wg sync.WaitGroup
	for _, s := range sups {
		wg.Add(1)
		go func() { defer wg.Done(); s.stop() }()
	}
	wg.Wait()
}

// campaign keeps running for leader; while it leads it schedules.
func (w *Worker) campaign(value []byte) {
	defer w.wg.Done()
	ttl := time.Duration(w.cfg.SessionTimeoutMs) * time.Millisecond
	for w.ctx.Err() == nil {
		sess, err := w.store.NewSession(w.ctx, ttl)
		if err != nil {
			w.sleep(time.Second)
			continue
		}
		lead, err := sess.Campaign(w.ctx, electionLeader, value)
		if err != nil {
			_ = sess.Close()
			w.sleep(time.Second)
			continue
		}
		w.leader.Store(true)
		w.log.Info("functions worker is the leader")
		w.lead(lead, sess)
		w.leader.Store(false)
		_ = sess.Close()
		w.log.Info("functions worker is no longer the leader")
	}
}

func (w *Worker) sleep(d time.Duration) {
	select {
	case <-w.ctx.Done():
	case <-time.After(d):
	}
}

// lead schedules until leadership or the session ends.
func (w *Worker) lead(lead metadata.Leadership, sess metadata.Session) {
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	for _, p := range []string{prefixMeta, prefixWorkers, prefixAssignments} {
		go func() {
			for ctx.Err() == nil {
				ch, err := w.store.Watch(ctx, p, true)
				if err != nil {
					w.sleep(time.Second)
					continue
				}
				for range ch {
					poke()
				}
			}
		}()
	}
	check := time.NewTicker(time.Duration(w.cfg.FailureCheckFreqMs) * time.Millisecond)
	defer check.Stop()
	goneSince := map[string]time.Time{}
	poke()
	for {
		select {
		case <-lead.Done():
			return
		case <-sess.Done():
			return
		case <-ctx.Done():
			return
		case <-check.C:
		case <-trigger:
			// Let a burst of changes (a function with many instances) settle into one pass.
			w.sleep(50 * time.Millisecond)
		}
		if err := w.scheduleOnce(ctx, lead, goneSince); err != nil && ctx.Err() == nil {
			w.log.Warn("scheduling failed; retrying", "err", err)
		}
	}
}

func (w *Worker) scheduleOnce(ctx context.Context, lead metadata.Leadership, goneSince map[string]time.Time) error {
	metas, err := w.meta.list(ctx, "")
	if err != nil {
		return err
	}
	workers, err := listWorkers(ctx, w.store)
	if err != nil {
		return err
	}
	current, err := listAssignments(ctx, w.store)
	if err != nil {
		return err
	}
	now := time.Now()
	live := map[string]bool{}
	for id := range workers {
		live[id] = true
		delete(goneSince, id)
	}
	for _, a := range current {
		if !live[a.WorkerID] {
			if _, ok := goneSince[a.WorkerID]; !ok {
				goneSince[a.WorkerID] = now
			}
		}
	}
	fns := map[string]*FunctionMeta{}
	for _, m := range metas {
		fns[m.Config.FQFN] = m
	}
	puts, dels := schedule(schedInput{functions: fns, current: current, live: live, goneSince: goneSince, now: now,
		reschedule: time.Duration(w.cfg.RescheduleTimeoutMs) * time.Millisecond})
	for key, a := range puts {
		select {
		case <-lead.Done():
			return nil
		default:
		}
		b, _ := json.Marshal(a)
		if _, err := w.store.Put(ctx, key, b, metadata.AnyVersion); err != nil {
			return err
		}
		if cur, ok := current[key]; ok && cur.WorkerID != a.WorkerID {
			w.log.Info("instance moved", "instance", key, "from", cur.WorkerID, "to", a.WorkerID)
		}
	}
	for _, key := range dels {
		if err := w.store.Delete(ctx, key, metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
			return err
		}
	}
	return nil
}

// runAssignments keeps this worker's instances in line with the assignment table.
func (w *Worker) runAssignments() {
	defer w.wg.Done()
	go func() {
		for w.ctx.Err() == nil {
			ch, err := w.store.Watch(w.ctx, prefixAssignments, true)
			if err != nil {
				w.sleep(time.Second)
				continue
			}
			for range ch {
				w.kickReconcile()
			}
		}
	}()
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-w.kick:
		case <-t.C:
		}
		if err := w.reconcile(w.ctx); err != nil && w.ctx.Err() == nil {
			w.log.Warn("running assignments failed; retrying", "err", err)
		}
	}
}

func (w *Worker) kickReconcile() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

type runKey struct {
	a    Assignment
	fqfn string
	id   int
}

func (w *Worker) reconcile(ctx context.Context) error {
	all, err := listAssignments(ctx, w.store)
	if err != nil {
		return err
	}
	want := map[string]runKey{}
	for key, a := range all {
		fqfn, id, ok := parseAssignmentKey(key)
		if ok && a.WorkerID == w.info.WorkerID && !a.Stopped {
			want[key] = runKey{a, fqfn, id}
		}
	}
	w.mu.Lock()
	var stop []*supervisor
	for key, s := range w.instances {
		if rk, ok := want[key]; !ok || rk.a != s.assignment {
			stop = append(stop, s)
			delete(w.instances, key)
		}
	}
	w.mu.Unlock()
	stopAll(stop)
	for key, rk := range want {
		w.mu.Lock()
		_, running := w.instances[key]
		w.mu.Unlock()
		if running {
			continue
		}
		m, _, err := w.meta.get(ctx, rk.fqfn)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				continue // deleted meanwhile; the leader removes the assignment
			}
			return err
		}
		w.startInstance(key, rk, m)
	}
	return nil
}

func (w *Worker) startInstance(key string, rk runKey, m *FunctionMeta) {
	ctx, cancel := context.WithCancel(w.ctx)
	s := &supervisor{
		log: w.log, fqfn: rk.fqfn, id: rk.id, workerID: w.info.WorkerID, assignment: rk.a, component: m.ComponentType,
		liveness: time.Duration(w.cfg.InstanceLivenessCheckFreqMs) * time.Millisecond,
		maxWait:  time.Duration(w.cfg.MaxRestartBackoffMs) * time.Millisecond,
		cancel:   cancel, done: make(chan struct{}),
	}
	if m.Config.Runtime != RuntimeWasm && m.Config.Resources != nil {
		s.ramLimit = m.Config.Resources.RAM
	}
	s.start = func(ctx context.Context) (RunningInstance, error) {
		if m.ComponentType == ComponentSource || m.ComponentType == ComponentSink {
			return w.startConnector(m, rk.id)
		}
		path, err := w.pkgs.local(ctx, m.Package)
		if err != nil {
			return nil, err
		}
		spec := InstanceSpec{Meta: m, InstanceID: rk.id, Package: path, Conf: w.instanceConf(m, rk.id), Dir: w.dir}
		if m.Config.Runtime == RuntimeWasm {
			return w.startWasm(ctx, spec)
		}
		return w.process.Start(ctx, spec)
	}
	w.mu.Lock()
	w.instances[key] = s
	w.mu.Unlock()
	w.log.Info("starting function instance", "function", rk.fqfn, "instance", rk.id, "runtime", m.Config.Runtime, "componentType", m.ComponentType)
	go s.run(ctx)
}

// instanceConf is the -instance-conf of instance id of m.
func (w *Worker) instanceConf(m *FunctionMeta, id int) *pf.Conf {
	return buildConf(m, id, confEnv{
		brokerURL: w.opts.BrokerServiceURL, webURL: w.opts.WebServiceURL, stateURL: w.opts.WebServiceURL + statePathPrefix,
		stateToken: w.token, cluster: w.opts.ClusterName, workerID: w.info.WorkerID,
		livenessSec: int32(w.cfg.InstanceLivenessCheckFreqMs / 1000), authPlugin: w.opts.InstanceAuthPlugin, authParams: w.opts.InstanceAuthParams,
		tlsTrustCerts: w.opts.InstanceTLSTrustCertsFile, tlsVerifyHostname: w.opts.InstanceTLSVerifyHostname,
	})
}

// confEnv is what an instance configuration takes from where it runs.
type confEnv struct {
	brokerURL, webURL, stateURL, stateToken, cluster, workerID string
	livenessSec                                                int32
	authPlugin, authParams                                     string
	tlsTrustCerts                                              string
	tlsVerifyHostname                                          bool
}

func buildConf(m *FunctionMeta, id int, env confEnv) *pf.Conf {
	c := m.Config
	conf := &pf.Conf{
		PulsarServiceURL: env.brokerURL, PulsarWebServiceURL: env.webURL,
		StateStorageServiceURL: env.stateURL, StateToken: env.stateToken,
		InstanceID: id, FuncID: c.FQFN, FuncVersion: strconv.FormatUint(m.Version, 10), ClusterName: env.cluster,
		Tenant: c.Tenant, NameSpace: c.Namespace, Name: c.Name, ClassName: c.ClassName, LogTopic: c.LogTopic,
		ProcessingGuarantees: guarantees[c.ProcessingGuarantees], AutoACK: c.AutoAck, Parallelism: int32(c.Parallelism),
		SubscriptionName: c.SubName, CleanupSubscription: cleanupOn(c.CleanupSubscription),
		SinkSpecTopic: c.Output, SinkSchemaType: c.OutputSchemaType, DeadLetterTopic: c.DeadLetterTopic,
		WorkerID: env.workerID, ExpectedHealthCheckInterval: env.livenessSec,
		ClientAuthenticationPlugin: env.authPlugin, ClientAuthenticationParameters: env.authParams,
		TLSTrustCertsFilePath: env.tlsTrustCerts, TLSHostnameVerificationEnable: env.tlsVerifyHostname,
	}
	switch c.Runtime {
	case RuntimePython:
		conf.Runtime = 1
	default:
		conf.Runtime = 3
	}
	switch {
	case c.RetainOrdering || c.ProcessingGuarantees == "EFFECTIVELY_ONCE":
		conf.SubscriptionType = pf.SubFailover
	case c.RetainKeyOrdering:
		conf.SubscriptionType = pf.SubKeyShared
	}
	if c.SubscriptionPosition == "Earliest" {
		conf.SubscriptionPosition = 1
	}
	if c.TimeoutMs != nil {
		conf.TimeoutMs = uint64(*c.TimeoutMs)
	}
	if c.MaxMessageRetries != nil {
		conf.MaxMessageRetries = int32(*c.MaxMessageRetries)
	}
	if r := c.Resources; r != nil {
		conf.CPU, conf.RAM, conf.Disk = r.CPU, r.RAM, r.Disk
	}
	conf.SourceInputSpecs = map[string]string{}
	for t, spec := range c.InputSpecs {
		b, _ := json.Marshal(spec)
		conf.SourceInputSpecs[t] = string(b)
	}
	user := map[string]any{}
	for k, v := range c.UserConfig {
		user[k] = v
	}
	if c.WindowConfig != nil {
		user[pf.WindowConfigKey] = c.WindowConfig
	}
	if b, err := json.Marshal(user); err == nil {
		conf.UserConfig = string(b)
	}
	if len(c.Secrets) > 0 {
		b, _ := json.Marshal(c.Secrets)
		conf.SecretsMap = string(b)
	}
	return conf
}

// local returns this worker's supervisor of instance id of fqfn.
func (w *Worker) local(fqfn string, id int) *supervisor {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.instances[assignmentKey(fqfn, id)]
}
