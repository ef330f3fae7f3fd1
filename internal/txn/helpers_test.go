package txn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger/memledger"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// cluster is the storage that outlives brokers: bookies (memledger) and metadata
// (memstore). Each factory() is one broker's managed ledgers on it; opening a log another
// factory has open fences that one, as a new owner does after a crash.
type cluster struct {
	t     *testing.T
	lc    *memledger.Client
	store metadata.Store
	cfg   config.ManagedLedgerConfig
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	cfg := config.DefaultManagedLedgerConfig()
	cfg.EnsembleSize, cfg.WriteQuorum, cfg.AckQuorum = 1, 1, 1
	cfg.MinLedgerRolloverTimeMinutes = 0
	cfg.MarkDeleteRateLimit = 1000
	cfg.CacheSizeMB = 16
	return &cluster{t: t, lc: memledger.New(), store: memstore.New(memstore.DefaultOptions()), cfg: cfg}
}

func (c *cluster) factory() *managedledger.Factory {
	c.t.Helper()
	f, err := managedledger.NewFactory(managedledger.FactoryOptions{Ledger: c.lc, Store: c.store, Config: c.cfg, DisableBackground: true})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = f.Close(context.Background()) })
	return f
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds or a generous deadline passes (a hang, not a
// timing assertion).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// call is one participant call seen by fakeParticipants.
type call struct {
	topic, sub string
	id         ID
	action     Action
}

// fakeParticipants records calls; fail makes calls fail while it returns an error; block
// holds calls until released.
type fakeParticipants struct {
	mu    sync.Mutex
	calls []call
	fail  func(call) error
	block chan struct{}
}

func (f *fakeParticipants) do(ctx context.Context, c call) error {
	f.mu.Lock()
	fail, block := f.fail, f.block
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if fail != nil {
		if err := fail(c); err != nil {
			return err
		}
	}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	return nil
}

func (f *fakeParticipants) EndPartition(ctx context.Context, topic string, id ID, action Action, _ uint64) error {
	return f.do(ctx, call{topic: topic, id: id, action: action})
}

func (f *fakeParticipants) EndSubscription(ctx context.Context, s Subscription, id ID, action Action, _ uint64) error {
	return f.do(ctx, call{topic: s.Topic, sub: s.Name, id: id, action: action})
}

func (f *fakeParticipants) seen() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func (f *fakeParticipants) count(id ID, action Action) int {
	n := 0
	for _, c := range f.seen() {
		if c.id == id && c.action == action {
			n++
		}
	}
	return n
}

// errRetriable is a participant failure worth retrying (the owner is moving).
var errRetriable = fmt.Errorf("%w: owner moving", wire.ErrServiceNotReady)

func txnConfig() config.TransactionConfig {
	c := config.DefaultTransactionConfig()
	c.CoordinatorEnabled = true
	return c
}

func openCoord(t *testing.T, f *managedledger.Factory, p Participants, mod func(*CoordinatorOptions)) *Coordinator {
	t.Helper()
	o := CoordinatorOptions{ID: 3, Ledgers: f, Participants: p, Config: txnConfig()}
	if mod != nil {
		mod(&o)
	}
	c, err := OpenCoordinator(ctxT(t), o)
	if err != nil {
		t.Fatalf("open coordinator: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func isErr(err, class error) bool { return errors.Is(err, class) }
