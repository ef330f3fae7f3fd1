package txn

import (
	"context"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/clock"
	"github.com/magnetar-io/magnetar/internal/managedledger"
)

// factoryOn is cluster.factory with the broker's clock injected.
func (c *cluster) factoryOn(clk clock.Clock) *managedledger.Factory {
	c.t.Helper()
	f, err := managedledger.NewFactory(managedledger.FactoryOptions{Ledger: c.lc, Store: c.store, Config: c.cfg, DisableBackground: true, Clock: clk})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = f.Close(context.Background()) })
	return f
}

// TestCoordinatorTimeoutOnInjectedClock: timeouts run on the coordinator's clock (by
// default its factory's, a clock.Fake here), so a test jumps an hour instead of sleeping
// through it. The transaction is not aborted a millisecond before its timeout and is at it;
// a coordinator opened (after a crash) once another transaction's timeout has passed on
// the clock aborts that one during recovery.
func TestCoordinatorTimeoutOnInjectedClock(t *testing.T) {
	cl := newCluster(t)
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	fp := &fakeParticipants{}
	c := openCoord(t, cl.factoryOn(clk), fp, nil)
	ctx := ctxT(t)
	id, err := c.New(ctx, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddPartitions(ctx, id, []string{"persistent://t/n/a"}); err != nil {
		t.Fatal(err)
	}
	keep, err := c.New(ctx, 3*time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddPartitions(ctx, keep, []string{"persistent://t/n/b"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the timeout timer to be armed", func() bool { return clk.Pending() == 1 })
	clk.Advance(time.Hour - time.Millisecond)
	if clk.Pending() != 1 {
		t.Fatal("the timeout timer ran before the timeout")
	}
	if md, ok := c.Get(id); !ok || md.Status != Open {
		t.Fatalf("a millisecond before its timeout: %+v %v, want open", md, ok)
	}
	clk.Advance(time.Millisecond)
	eventually(t, "the timed-out transaction to be aborted", func() bool { return fp.count(id, Abort) == 1 })
	eventually(t, "it to be forgotten", func() bool { _, ok := c.Get(id); return !ok })
	if err := c.End(ctx, id, Commit); !isErr(err, ErrNotFound) {
		t.Fatalf("commit after the timeout: %v, want ErrNotFound", err)
	}
	if md, ok := c.Get(keep); !ok || md.Status != Open {
		t.Fatalf("the three-hour transaction after one hour: %+v %v", md, ok)
	}

	// The broker dies with keep open; by the time another opens the log, keep's timeout
	// has passed on the clock: recovery aborts it without waiting for any timer.
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Hour)
	next := openCoord(t, cl.factoryOn(clk), fp, nil)
	eventually(t, "recovery to abort the expired transaction", func() bool { return fp.count(keep, Abort) == 1 })
	eventually(t, "it to be forgotten", func() bool { _, ok := next.Get(keep); return !ok })
	if fp.count(keep, Commit) != 0 {
		t.Fatal("an expired transaction was committed")
	}
}
