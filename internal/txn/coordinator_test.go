package txn

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/clock"
)

func TestCoordinatorCommitTellsEveryParticipantThenForgets(t *testing.T) {
	cl := newCluster(t)
	fp := &fakeParticipants{}
	c := openCoord(t, cl.factory(), fp, nil)
	ctx := ctxT(t)

	id, err := c.New(ctx, time.Minute, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if id.Most != 3 || id.Least != 1 {
		t.Fatalf("first id %s, want (3,1)", id)
	}
	if err := c.AddPartitions(ctx, id, []string{"persistent://t/n/a", "persistent://t/n/b"}); err != nil {
		t.Fatal(err)
	}
	// A retried registration logs nothing new and changes nothing.
	if err := c.AddPartitions(ctx, id, []string{"persistent://t/n/a"}); err != nil {
		t.Fatal(err)
	}
	sub := Subscription{Topic: "persistent://t/n/in", Name: "s"}
	if err := c.AddSubscriptions(ctx, id, []Subscription{sub}); err != nil {
		t.Fatal(err)
	}
	md, ok := c.Get(id)
	if !ok || md.Status != Open || md.Owner != "alice" || len(md.Partitions) != 2 || !reflect.DeepEqual(md.Subscriptions, []Subscription{sub}) {
		t.Fatalf("metadata %+v", md)
	}
	if err := c.End(ctx, id, Commit); err != nil {
		t.Fatal(err)
	}
	got := fp.seen()
	slices.SortFunc(got, func(a, b call) int {
		if a.topic+a.sub < b.topic+b.sub {
			return -1
		}
		return 1
	})
	want := []call{
		{topic: "persistent://t/n/a", id: id, action: Commit},
		{topic: "persistent://t/n/b", id: id, action: Commit},
		{topic: "persistent://t/n/in", sub: "s", id: id, action: Commit},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}
	if _, ok := c.Get(id); ok {
		t.Fatal("an ended transaction is still known")
	}
	// Ending again is TransactionNotFound (TestTxn_ImplCommitOrAbort expects it).
	if err := c.End(ctx, id, Commit); !isErr(err, ErrNotFound) {
		t.Fatalf("second commit: %v, want ErrNotFound", err)
	}
	if err := c.AddPartitions(ctx, id, []string{"x"}); !isErr(err, ErrNotFound) {
		t.Fatalf("add after end: %v, want ErrNotFound", err)
	}
	st := c.Stats()
	if st.Created != 1 || st.Committed != 1 || st.Active != 0 || st.Sequence != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestCoordinatorRefusesWhatItCannotDo(t *testing.T) {
	cl := newCluster(t)
	fp := &fakeParticipants{block: make(chan struct{})}
	c := openCoord(t, cl.factory(), fp, func(o *CoordinatorOptions) { o.Config.MaxActivePerCoordinator = 2 })
	ctx := ctxT(t)

	if _, err := c.New(ctx, 0, ""); !isErr(err, ErrNotAllowed) {
		t.Fatalf("zero timeout: %v", err)
	}
	if _, err := c.New(ctx, 365*24*time.Hour, ""); !isErr(err, ErrNotAllowed) {
		t.Fatalf("huge timeout: %v", err)
	}
	a, err := c.New(ctx, time.Minute, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.New(ctx, time.Minute, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.New(ctx, time.Minute, ""); !isErr(err, ErrNotAllowed) {
		t.Fatalf("third open transaction: %v, want ErrNotAllowed", err)
	}
	if err := c.AddPartitions(ctx, ID{99, a.Least}, []string{"t"}); !isErr(err, ErrNotFound) {
		t.Fatalf("other coordinator's id: %v", err)
	}
	if err := c.AddPartitions(ctx, a, []string{"t"}); err != nil {
		t.Fatal(err)
	}
	// a is committing (its participant blocks): no more partitions, no abort.
	endCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := c.End(endCtx, a, Commit); err == nil {
		t.Fatal("commit returned before its participant answered")
	}
	if err := c.AddPartitions(ctx, a, []string{"u"}); !isErr(err, ErrInvalidStatus) {
		t.Fatalf("add while committing: %v", err)
	}
	if err := c.End(ctx, a, Abort); !isErr(err, ErrInvalidStatus) {
		t.Fatalf("abort while committing: %v", err)
	}
	if err := c.AddSubscriptions(ctx, b, []Subscription{{Topic: "", Name: "s"}}); !isErr(err, ErrNotAllowed) {
		t.Fatalf("empty topic: %v", err)
	}
	// A second commit while the first is in progress waits for it and succeeds; if the
	// first one finishes before the second arrives, the second finds nothing to commit
	// (Pulsar's TransactionNotFound, which clients take as done). Which of the two happens
	// depends on scheduling, so both are accepted; anything else is a failure.
	second := make(chan error, 1)
	go func() { second <- c.End(ctx, a, Commit) }()
	close(fp.block)
	if err := <-second; err != nil && !isErr(err, ErrNotFound) {
		t.Fatalf("commit: %v", err)
	}
	if err := c.AddPartitions(ctx, a, []string{"v"}); err == nil {
		t.Fatal("a committed transaction took a partition")
	}
}

func TestCoordinatorAbortsAtTimeout(t *testing.T) {
	cl := newCluster(t)
	fp := &fakeParticipants{}
	c := openCoord(t, cl.factory(), fp, nil)
	ctx := ctxT(t)
	id, err := c.New(ctx, 150*time.Millisecond, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddPartitions(ctx, id, []string{"persistent://t/n/a"}); err != nil {
		t.Fatal(err)
	}
	keep, err := c.New(ctx, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the timed-out transaction to be aborted", func() bool { return fp.count(id, Abort) == 1 })
	eventually(t, "it to be forgotten", func() bool { _, ok := c.Get(id); return !ok })
	if err := c.End(ctx, id, Commit); !isErr(err, ErrNotFound) {
		t.Fatalf("commit after timeout: %v, want ErrNotFound", err)
	}
	if md, ok := c.Get(keep); !ok || md.Status != Open {
		t.Fatalf("the other transaction: %+v %v", md, ok)
	}
	if st := c.Stats(); st.TimedOut != 1 || st.Aborted != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestCoordinatorRetriesParticipants(t *testing.T) {
	cl := newCluster(t)
	var mu sync.Mutex
	failures := 0
	fp := &fakeParticipants{fail: func(c call) error {
		mu.Lock()
		defer mu.Unlock()
		if failures < 3 {
			failures++
			return errRetriable
		}
		return nil
	}}
	c := openCoord(t, cl.factory(), fp, nil)
	ctx := ctxT(t)
	id, _ := c.New(ctx, time.Minute, "")
	if err := c.AddPartitions(ctx, id, []string{"t"}); err != nil {
		t.Fatal(err)
	}
	if err := c.End(ctx, id, Abort); err != nil {
		t.Fatal(err)
	}
	if fp.count(id, Abort) != 1 || failures != 3 {
		t.Fatalf("calls %v after %d failures", fp.seen(), failures)
	}
}

// TestCoordinatorRecovery: a new owner (another factory: another broker) opening the log
// fences the old one and carries on: open transactions stay open with their participants,
// an ending one is ended again, ended ones are gone, and sequences are never reused.
func TestCoordinatorRecovery(t *testing.T) {
	cl := newCluster(t)
	fp := &fakeParticipants{}
	old := openCoord(t, cl.factory(), fp, nil)
	ctx := ctxT(t)

	open, _ := old.New(ctx, time.Hour, "bob")
	if err := old.AddPartitions(ctx, open, []string{"p1", "p2"}); err != nil {
		t.Fatal(err)
	}
	if err := old.AddSubscriptions(ctx, open, []Subscription{{"in", "s"}}); err != nil {
		t.Fatal(err)
	}
	done, _ := old.New(ctx, time.Hour, "")
	_ = old.AddPartitions(ctx, done, []string{"p3"})
	if err := old.End(ctx, done, Commit); err != nil {
		t.Fatal(err)
	}
	ending, _ := old.New(ctx, time.Hour, "")
	_ = old.AddPartitions(ctx, ending, []string{"p4"})
	fp.mu.Lock()
	fp.block = make(chan struct{}) // the commit of ending never reaches its participant
	fp.mu.Unlock()
	endCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_ = old.End(endCtx, ending, Commit)
	cancel()

	fp2 := &fakeParticipants{}
	c := openCoord(t, cl.factory(), fp2, nil)
	md, ok := c.Get(open)
	if !ok || md.Status != Open || md.Owner != "bob" || !reflect.DeepEqual(md.Partitions, []string{"p1", "p2"}) ||
		!reflect.DeepEqual(md.Subscriptions, []Subscription{{"in", "s"}}) {
		t.Fatalf("open transaction after recovery: %+v %v", md, ok)
	}
	if _, ok := c.Get(done); ok {
		t.Fatal("a committed transaction came back")
	}
	eventually(t, "the ending transaction to be committed again", func() bool { return fp2.count(ending, Commit) == 1 })
	if err := c.End(ctx, ending, Commit); err != nil && !isErr(err, ErrNotFound) {
		t.Fatalf("client retry of the commit: %v", err)
	}
	next, err := c.New(ctx, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	if next.Least <= ending.Least {
		t.Fatalf("sequence reused: %s after %s", next, ending)
	}
	// The old owner is fenced: its next write fails and it stops serving. (New answers
	// before its record is durable, so the failure may reach the next request only.)
	stale, err := old.New(ctx, time.Hour, "")
	if err == nil {
		err = old.AddPartitions(ctx, stale, []string{"p5"})
	}
	if !isErr(err, ErrCoordinatorNotFound) {
		t.Fatalf("fenced coordinator's New and AddPartitions: %v", err)
	}
	if old.Err() == nil {
		t.Fatal("the fenced coordinator still claims to serve")
	}
	close(fp.block)
	if err := c.End(ctx, open, Commit); err != nil {
		t.Fatal(err)
	}
	if fp2.count(open, Commit) != 3 {
		t.Fatalf("calls %v", fp2.seen())
	}
}

// TestCoordinatorSequenceSurvivesTrimming: once every record is acknowledged (all
// transactions ended) the sequence still comes back, from the log cursor's properties.
func TestCoordinatorSequenceSurvivesTrimming(t *testing.T) {
	cl := newCluster(t)
	c := openCoord(t, cl.factory(), &fakeParticipants{}, nil)
	ctx := ctxT(t)
	var last ID
	for i := 0; i < 20; i++ {
		id, err := c.New(ctx, time.Hour, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.End(ctx, id, Abort); err != nil {
			t.Fatal(err)
		}
		last = id
	}
	eventually(t, "every record to be acknowledged", func() bool {
		return c.log.cur.Backlog() == 0
	})
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	c2 := openCoord(t, cl.factory(), &fakeParticipants{}, nil)
	id, err := c2.New(ctx, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	// New answers before its record is durable: a crash may lose up to newAhead answered
	// ids, so a recovery hands out none of them again.
	if id.Least <= last.Least+newAhead {
		t.Fatalf("sequence %s after %s: within newAhead (%d) of it", id, last, newAhead)
	}
	if n := len(c2.List()); n != 1 {
		t.Fatalf("%d transactions after recovery, want 1", n)
	}
}

// TestCoordinatorExpiredWhileDown: a transaction whose timeout passed while nobody served
// the coordinator is aborted at recovery.
func TestCoordinatorExpiredWhileDown(t *testing.T) {
	cl := newCluster(t)
	clk := clock.NewFake(time.Now())
	c := openCoord(t, cl.factory(), &fakeParticipants{}, func(o *CoordinatorOptions) { o.Clock = clk })
	ctx := ctxT(t)
	id, _ := c.New(ctx, time.Hour, "")
	_ = c.AddPartitions(ctx, id, []string{"p"})
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour)
	fp := &fakeParticipants{}
	c2 := openCoord(t, cl.factory(), fp, func(o *CoordinatorOptions) { o.Clock = clk })
	eventually(t, "the expired transaction to be aborted", func() bool { return fp.count(id, Abort) == 1 })
	eventually(t, "its stats", func() bool { return c2.Stats().TimedOut == 1 })
}

func TestCoordinatorConcurrentUse(t *testing.T) {
	cl := newCluster(t)
	fp := &fakeParticipants{}
	c := openCoord(t, cl.factory(), fp, nil)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				id, err := c.New(ctx, time.Hour, "")
				if err != nil {
					errs <- err
					return
				}
				if err := c.AddPartitions(ctx, id, []string{fmt.Sprintf("t-%d", g)}); err != nil {
					errs <- err
					return
				}
				a := Commit
				if i%3 == 0 {
					a = Abort
				}
				if err := c.End(ctx, id, a); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := len(fp.seen()); n != 200 {
		t.Fatalf("%d participant calls, want 200", n)
	}
	if st := c.Stats(); st.Created != 200 || st.Committed+st.Aborted != 200 || st.Active != 0 {
		t.Fatalf("stats %+v", st)
	}
}
