package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-io/magnetar/pkg/pf/pfpb"
	"github.com/magnetar-io/magnetar/pkg/pf/pfstats"
)

// Validator is implemented by connectors that can check their configs without connecting:
// the admin API calls it on create and update, so a bad key is a 400 naming it rather than
// an instance that never starts.
type Validator interface {
	Validate(cfg Config) error
}

// Validate checks that archive names a built-in of kind and that its configs are good.
func Validate(reg *Registry, kind Kind, archive string, configs, secrets map[string]any, guarantee string) error {
	d, err := reg.Lookup(archive)
	if err != nil {
		return err
	}
	var c any
	switch kind {
	case KindSource:
		if d.NewSource == nil {
			return fmt.Errorf("%w: %s is a sink, not a source", ErrUnknownConnector, d.Name)
		}
		c = d.NewSource()
	case KindSink:
		if d.NewSink == nil {
			return fmt.Errorf("%w: %s is a source, not a sink", ErrUnknownConnector, d.Name)
		}
		if guarantee == EffectivelyOnce && !d.EffectivelyOnceSink {
			return fmt.Errorf("processingGuarantees: the %s sink cannot write effectively once (its writes are not idempotent); use ATLEAST_ONCE", d.Name)
		}
		c = d.NewSink()
	}
	if v, ok := c.(Validator); ok {
		cfg := NewConfig(configs, secrets)
		if err := v.Validate(cfg); err != nil {
			return err
		}
		return cfg.Err()
	}
	return nil
}

// Instance is one running source or sink instance. Its methods are the worker's
// RunningInstance contract.
type Instance struct {
	spec    Spec
	def     *Definition
	log     *slog.Logger
	stats   pfstats.Stats
	running atomic.Bool
	cancel  context.CancelFunc
	done    chan struct{}

	mu  sync.Mutex
	err error
}

// Start builds the connector named by spec.Archive and runs it until Stop or a failure.
func Start(reg *Registry, spec Spec) (*Instance, error) {
	if err := spec.normalize(); err != nil {
		return nil, err
	}
	d, err := reg.Lookup(spec.Archive)
	if err != nil {
		return nil, err
	}
	if (spec.Kind == KindSource && d.NewSource == nil) || (spec.Kind == KindSink && d.NewSink == nil) {
		return nil, fmt.Errorf("%w: %s cannot run as this kind", ErrUnknownConnector, d.Name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &Instance{spec: spec, def: d, cancel: cancel, done: make(chan struct{}),
		log: spec.Logger.With("connector", d.Name, "instance", spec.FQFN()+":"+fmt.Sprint(spec.InstanceID))}
	in.stats.SetUserMetric("deadLetteredTotal", 0) // reported from the start, as before any dead letter
	go in.run(ctx)
	return in, nil
}

func (in *Instance) run(ctx context.Context) {
	defer close(in.done)
	in.running.Store(true)
	defer in.running.Store(false)
	client, err := pulsar.NewClient(in.clientOptions())
	if err == nil {
		defer client.Close()
		if in.spec.Kind == KindSource {
			err = in.runSource(ctx, client)
		} else {
			err = in.runSink(ctx, client)
		}
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		err = nil
	}
	if err != nil {
		in.stats.SetFailure(err)
		in.log.Warn("connector instance failed", "err", err)
	}
	in.mu.Lock()
	in.err = err
	in.mu.Unlock()
}

func (in *Instance) clientOptions() pulsar.ClientOptions {
	o := pulsar.ClientOptions{
		URL: in.spec.BrokerServiceURL, ConnectionTimeout: 10 * time.Second, OperationTimeout: 30 * time.Second,
		Logger:                     plog.NewLoggerWithSlog(slog.New(warnOnly{in.log.Handler()})),
		TLSTrustCertsFilePath:      in.spec.TLSTrustCertsFilePath,
		TLSAllowInsecureConnection: in.spec.TLSAllowInsecureConnection,
	}
	if in.spec.AuthPlugin != "" {
		if a, err := pulsar.NewAuthentication(in.spec.AuthPlugin, in.spec.AuthParams); err == nil {
			o.Authentication = a
		} else {
			in.log.Warn("client authentication plugin not usable; connecting without", "plugin", in.spec.AuthPlugin, "err", err)
		}
	}
	return o
}

// warnOnly keeps the Pulsar client's chatter out of the worker's log.
type warnOnly struct{ slog.Handler }

func (h warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

// Status is the instance's status (FunctionStatus shape; see stats).
func (in *Instance) Status(context.Context) (*pfpb.FunctionStatus, error) {
	return in.stats.Status(in.running.Load(), in.spec.InstanceID, in.spec.WorkerID), nil
}

// Metrics are the instance's counters.
func (in *Instance) Metrics(_ context.Context, reset bool) (*pfpb.MetricsData, error) {
	return in.stats.Metrics(reset), nil
}

// Health is always good while the instance runs: a connector waiting for its target to come
// back is retrying, not hung, and reports that in status.
func (in *Instance) Health(context.Context) error { return nil }

// Done is closed when the instance has ended.
func (in *Instance) Done() <-chan struct{} { return in.done }

// Err is why it ended (nil after Stop).
func (in *Instance) Err() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.err
}

// MemoryBytes is 0: the instance runs inside the worker.
func (in *Instance) MemoryBytes() int64 { return 0 }

// Stop ends the instance and waits for it (bounded by ctx).
func (in *Instance) Stop(ctx context.Context) error {
	in.cancel()
	select {
	case <-in.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// ictx is the Context both runners give their connector.
type ictx struct {
	in  *Instance
	cfg Config
}

func (c *ictx) Config() Config          { return c.cfg }
func (c *ictx) Logger() *slog.Logger    { return c.in.log }
func (c *ictx) InstanceID() int         { return c.in.spec.InstanceID }
func (c *ictx) NumInstances() int       { return c.in.spec.NumInstances }
func (c *ictx) Name() string            { return c.in.spec.FQFN() }
func (c *ictx) Offsets() OffsetStore    { return c.in.spec.Offsets }
func (c *ictx) EffectivelyOnce() bool   { return c.in.spec.ProcessingGuarantees == EffectivelyOnce }
func (c *ictx) SourceException(e error) { c.in.stats.AddUserException(e) }

// MemoryOffsets is an OffsetStore in memory (tests, local runs).
type MemoryOffsets struct {
	mu sync.Mutex
	b  []byte
}

// Load returns the saved bytes.
func (m *MemoryOffsets) Load(context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]byte(nil), m.b...), nil
}

// Save keeps b.
func (m *MemoryOffsets) Save(_ context.Context, b []byte) error {
	m.mu.Lock()
	m.b = append([]byte(nil), b...)
	m.mu.Unlock()
	return nil
}
