package ledger

import (
	"context"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

func newTestAuditor(t testing.TB, store metadata.Store, bk bookieproto.Client, name string) *Auditor {
	t.Helper()
	a, err := NewAuditor(context.Background(), AuditorOptions{Config: testConfig(), Store: store, Bookies: bk,
		Logger: testLogger(t), Registerer: prometheus.NewRegistry(), Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// fullyReplicated reports whether every entry of a closed ledger is on every bookie of its
// write set, none of which is in gone.
func fullyReplicated(fc testCluster, m *ledgerMetadata, id int64, gone map[string]bool) bool {
	for e := int64(0); e <= m.LastEntryID; e++ {
		ens := m.ensembleFor(e)
		for _, pos := range writeSet(e, m.EnsembleSize, m.WriteQuorum) {
			if gone[ens[pos]] || !fc.hasEntry(ens[pos], id, e) {
				return false
			}
		}
	}
	return true
}

func writeClosedLedger(t *testing.T, c Client, e, qw, qa int, n int64) int64 {
	t.Helper()
	ctx := testCtx(t)
	w, err := c.Create(ctx, CreateOptions{EnsembleSize: e, WriteQuorum: qw, AckQuorum: qa, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := w.Append(ctx, entryData(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return w.ID()
}

// (d) A bookie is lost for good: the elected auditor brings every fragment back to Qw
// copies on live bookies.
func TestAuditorReplicatesLostBookie(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addBookies(5)
	testAuditorReplicatesLostBookie(t, fc)
}

// testAuditorReplicatesLostBookie needs five bookies.
func testAuditorReplicatesLostBookie(t *testing.T, fc testCluster) {
	c := newTestClient(t, fc.metaStore(), fc.newBookieClient())
	var ids []int64
	for i := range 6 {
		qa := 2
		if i%2 == 0 {
			qa = 1 // a slow third copy would otherwise make copying races; Qa does not matter here
		}
		ids = append(ids, writeClosedLedger(t, c, 3, 2+i%2, qa, 40))
	}
	lost := mustMeta(t, fc.metaStore(), ids[0]).Fragments[0].Ensemble[0]
	// Every third copy must have landed before the kill, so that "lost" means only lost.
	for _, id := range ids {
		m := mustMeta(t, fc.metaStore(), id)
		waitFor(t, func() bool { return fullyReplicated(fc, m, id, nil) })
	}
	fc.kill(lost)

	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	a1 := newTestAuditor(t, fc.metaStore(), fc.newBookieClient(), "a1")
	a2 := newTestAuditor(t, fc.metaStore(), fc.newBookieClient(), "a2")
	done := make(chan struct{}, 2)
	for _, a := range []*Auditor{a1, a2} {
		go func() { a.Run(ctx); done <- struct{}{} }()
	}
	gone := map[string]bool{lost: true}
	waitFor(t, func() bool {
		for _, id := range ids {
			if !fullyReplicated(fc, mustMeta(t, fc.metaStore(), id), id, gone) {
				return false
			}
		}
		return true
	})
	// (On a cluster shared with earlier scenarios, their ledgers may have lost every copy;
	// only this scenario's ledgers must be healthy.)
	under, err := UnderReplicated(ctx, fc.metaStore())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range under {
		if slices.Contains(ids, u.LedgerID) {
			t.Fatalf("ledger %d under-replicated after audit: %v", u.LedgerID, u.Missing)
		}
	}
	waitFor(t, func() bool {
		return a1.UnderReplicatedCount()+a2.UnderReplicatedCount() == int64(len(under))
	})
	for _, id := range ids {
		checkReadsBack(t, c, id, 39)
	}
	cancel()
	<-done
	<-done
}

func TestUnderReplicatedAndDecommission(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addBookies(4)
	c := newTestClient(t, fc.store, fc.client())
	id := writeClosedLedger(t, c, 3, 3, 3, 25)
	m := mustMeta(t, fc.store, id)
	ctx := testCtx(t)
	under, err := UnderReplicated(ctx, fc.store)
	if err != nil || len(under) != 0 {
		t.Fatalf("healthy cluster: %v %v", under, err)
	}
	// A bookie whose registration is gone makes the ledger under-replicated at once, and
	// the auditor's gauge says so, while the grace period has not passed.
	victim := m.Fragments[0].Ensemble[2]
	fc.kill(victim)
	under, err = UnderReplicated(ctx, fc.store)
	if err != nil || len(under) != 1 || under[0].LedgerID != id || !slices.Equal(under[0].Missing, []string{victim}) {
		t.Fatalf("after kill: %+v %v", under, err)
	}
	a := newTestAuditor(t, fc.store, fc.client(), "a")
	a.c.cfg.LostBookieRecoveryDelay = 1 << 62 // never on its own
	if err := a.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if got := a.UnderReplicatedCount(); got != 1 {
		t.Fatalf("gauge %v, want 1", got)
	}
	if m2 := mustMeta(t, fc.store, id); !slices.Equal(m2.Fragments[0].Ensemble, m.Fragments[0].Ensemble) {
		t.Fatal("auditor moved a fragment inside the grace period")
	}
	// Decommissioning takes the same path without waiting; a live bookie can be
	// decommissioned too.
	live := m.Fragments[0].Ensemble[0]
	for _, addr := range []string{victim, live} {
		if err := Decommission(ctx, fc.store, addr); err != nil {
			t.Fatal(err)
		}
	}
	st, err := ListBookies(ctx, fc.store)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, b := range st {
		if b.Decommissioned {
			states[b.Address] = b.State
		}
	}
	if len(states) != 2 || states[victim] != "gone" || states[live] != resources.BookieWritable {
		t.Fatalf("ListBookies: %+v", st)
	}
	// New ensembles avoid a decommissioned bookie even while it is writable.
	waitFor(t, func() bool { return !c.placement().bookies[live].Writable })
	for range 10 {
		w, err := c.Create(ctx, CreateOptions{EnsembleSize: 2, WriteQuorum: 2, AckQuorum: 2})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(mustMeta(t, fc.store, w.ID()).Fragments[0].Ensemble, live) {
			t.Fatal("new ensemble on a decommissioned bookie")
		}
		_ = c.Delete(ctx, w.ID())
	}
	if err := a.Check(ctx); err == nil {
		// Two of four bookies out with E=3: only one spare exists.
		t.Fatal("expected not enough bookies for two replacements")
	}
	fc.addBookie("127.0.0.1:4000", "")
	waitFor(t, func() bool { return a.c.bookies.isRegistered("127.0.0.1:4000") })
	if err := a.Check(ctx); err != nil {
		t.Fatal(err)
	}
	m3 := mustMeta(t, fc.store, id)
	if slices.Contains(m3.Fragments[0].Ensemble, victim) || slices.Contains(m3.Fragments[0].Ensemble, live) {
		t.Fatalf("fragment still on decommissioned bookies: %v", m3.Fragments[0].Ensemble)
	}
	if !fullyReplicated(fc, m3, id, map[string]bool{victim: true}) {
		t.Fatal("not fully replicated after decommission")
	}
	if err := Recommission(ctx, fc.store, live); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return c.placement().bookies[live].Writable })
}

// The auditor repairs an older fragment of a ledger that is still being written; the
// writer's own ensemble changes and close go through CAS conflicts with it and lose nothing.
func TestAuditorAndWriterShareOpenLedger(t *testing.T) {
	fc := newFakeCluster(t)
	fc.addBookies(6)
	c := newTestClient(t, fc.store, fc.client())
	ctx := testCtx(t)
	w, err := c.Create(ctx, CreateOptions{EnsembleSize: 3, WriteQuorum: 3, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	next := int64(0)
	appendN := func(n int64) {
		for range n {
			if _, err := w.Append(ctx, entryData(next)); err != nil {
				t.Fatal(err)
			}
			next++
		}
	}
	appendN(50)
	first := mustMeta(t, fc.store, w.ID()).Fragments[0].Ensemble
	waitFor(t, func() bool {
		return fullyReplicated(fc, closedView(mustMeta(t, fc.store, w.ID()), next-1), w.ID(), nil)
	})
	fc.kill(first[0])
	appendN(50) // the writer moves to a second fragment
	a := newTestAuditor(t, fc.store, fc.client(), "a")
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	go a.Run(actx)
	// While the auditor copies fragment 0, the writer keeps going and changes ensembles again.
	m := mustMeta(t, fc.store, w.ID())
	fc.kill(m.Fragments[len(m.Fragments)-1].Ensemble[2])
	appendN(100)
	waitFor(t, func() bool {
		m := mustMeta(t, fc.store, w.ID())
		return !slices.Contains(m.Fragments[0].Ensemble, first[0])
	})
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkReadsBack(t, c, w.ID(), next-1)
}

// closedView is m as if closed at last, for checks on an open ledger.
func closedView(m *ledgerMetadata, last int64) *ledgerMetadata {
	c := m.clone()
	c.State, c.LastEntryID = stateClosed, last
	return c
}
