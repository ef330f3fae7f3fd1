package txn

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

const topicLog = "public/default/persistent/t"

// topic is a topic's log and its transaction state on one "broker" (factory).
type topic struct {
	t   *testing.T
	f   *managedledger.Factory
	ml  *managedledger.ManagedLedger
	st  *TopicState
	sub *managedledger.Cursor
	seq int
}

func openTopic(t *testing.T, cl *cluster, mod func(*TopicStateOptions)) *topic {
	t.Helper()
	f := cl.factory()
	ctx := ctxT(t)
	ml, err := f.Open(ctx, topicLog, f.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	sub, err := ml.OpenCursor(ctx, "sub", managedledger.InitialPositionEarliest)
	if err != nil {
		t.Fatal(err)
	}
	o := TopicStateOptions{Topic: "persistent://public/default/t", Log: ml, Ledgers: f, Config: txnConfig()}
	if mod != nil {
		mod(&o)
	}
	st, err := OpenTopicState(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	return &topic{t: t, f: f, ml: ml, st: st, sub: sub}
}

// entry builds a message entry, in transaction id when not nil.
func (tp *topic) entry(id *ID) []byte {
	tp.seq++
	md := &pb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(uint64(tp.seq)), PublishTime: proto.Uint64(1)}
	e, err := wire.AppendEntry(nil, md, []byte(fmt.Sprintf("m%d", tp.seq)))
	if err != nil {
		tp.t.Fatal(err)
	}
	if id != nil {
		if e, err = StampEntry(e, md, *id); err != nil {
			tp.t.Fatal(err)
		}
	}
	return e
}

// publish appends one message (in id if not nil) the way the topic service does.
func (tp *topic) publish(id *ID) (Position, error) {
	tp.t.Helper()
	data := tp.entry(id)
	if id != nil {
		if err := tp.st.Prepare(ctxT(tp.t)); err != nil {
			return Position{}, err
		}
		if err := tp.st.Buffer().BeforeAppend(*id); err != nil {
			return Position{}, err
		}
	}
	ch := make(chan Position, 1)
	errCh := make(chan error, 1)
	err := tp.ml.AddEntry(data, func(p Position, err error) {
		if id != nil {
			tp.st.Buffer().Appended(*id, p, err)
		}
		if err != nil {
			errCh <- err
			return
		}
		ch <- p
	})
	if err != nil {
		return Position{}, err
	}
	select {
	case p := <-ch:
		return p, nil
	case err := <-errCh:
		return Position{}, err
	}
}

func (tp *topic) mustPublish(id *ID) Position {
	tp.t.Helper()
	p, err := tp.publish(id)
	if err != nil {
		tp.t.Fatal(err)
	}
	return p
}

// visible drains the subscription and returns what it may read: messages, markers and
// entries of aborted transactions told apart as dispatch does.
func (tp *topic) visible() (msgs []Position, skipped int) {
	tp.t.Helper()
	for {
		es, err := tp.sub.ReadEntries(ctxT(tp.t), 100, 0)
		if err != nil {
			tp.t.Fatal(err)
		}
		if len(es) == 0 {
			return msgs, skipped
		}
		for _, e := range es {
			info := ParseEntryInfo(e.Data)
			if info.Marker != 0 || (info.InTxn && tp.st.Buffer().Aborted(info.Txn)) {
				skipped++
				continue
			}
			msgs = append(msgs, e.Position)
		}
	}
}

func TestBufferHidesOpenTransactionsUntilCommit(t *testing.T) {
	cl := newCluster(t)
	tp := openTopic(t, cl, nil)
	ctx := ctxT(t)
	t1, t2 := ID{1, 1}, ID{1, 2}

	plain := tp.mustPublish(nil)
	a := tp.mustPublish(&t1)
	after := tp.mustPublish(nil) // published after t1's first entry: waits for t1
	b := tp.mustPublish(&t2)
	a2 := tp.mustPublish(&t1)
	if got, _ := tp.visible(); len(got) != 1 || got[0] != plain {
		t.Fatalf("visible %v, want only %v", got, plain)
	}
	if mr := tp.st.Buffer().MaxRead(); mr != plain {
		t.Fatalf("max read %v, want %v", mr, plain)
	}
	// Committing t2 first shows nothing: t1 is still open before it.
	if err := tp.st.Buffer().End(ctx, t2, Commit, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := tp.visible(); len(got) != 0 {
		t.Fatalf("visible after committing t2: %v", got)
	}
	if err := tp.st.Buffer().End(ctx, t1, Commit, 0); err != nil {
		t.Fatal(err)
	}
	got, markers := tp.visible()
	want := []Position{a, after, b, a2}
	if fmt.Sprint(got) != fmt.Sprint(want) || markers != 2 {
		t.Fatalf("visible %v (%d skipped), want %v and 2 markers", got, markers, want)
	}
	// A committed transaction takes no more entries; a commit again is a no-op.
	if _, err := tp.publish(&t1); !isErr(err, ErrNotAllowed) {
		t.Fatalf("late append of a committed transaction: %v", err)
	}
	if err := tp.st.Buffer().End(ctx, t1, Commit, 0); err != nil {
		t.Fatal(err)
	}
	if st := tp.st.Buffer().Stats(); st.Ongoing != 0 || st.Committed != 2 || st.State != "Ready" {
		t.Fatalf("stats %+v", st)
	}
}

func TestBufferAbortedEntriesAreNeverDelivered(t *testing.T) {
	cl := newCluster(t)
	tp := openTopic(t, cl, nil)
	ctx := ctxT(t)
	t1 := ID{2, 7}
	tp.mustPublish(&t1)
	tp.mustPublish(&t1)
	plain := tp.mustPublish(nil)
	if err := tp.st.Buffer().End(ctx, t1, Abort, 0); err != nil {
		t.Fatal(err)
	}
	got, skipped := tp.visible()
	if len(got) != 1 || got[0] != plain || skipped != 3 {
		t.Fatalf("visible %v, skipped %d; want %v and 3 skipped", got, skipped, plain)
	}
	if _, err := tp.publish(&t1); !isErr(err, ErrNotAllowed) {
		t.Fatalf("append to an aborted transaction: %v", err)
	}
	if err := tp.st.Buffer().End(ctx, t1, Commit, 0); !isErr(err, ErrNotAllowed) {
		t.Fatalf("commit of an aborted transaction: %v", err)
	}
	if err := tp.st.Buffer().End(ctx, t1, Abort, 0); err != nil {
		t.Fatalf("abort again: %v", err)
	}
}

// TestBufferHidesAnAppendBeforeItsPositionIsKnown: the log wakes readers when an entry is
// durable, before the append's callback tells the buffer where it is.
func TestBufferHidesAnAppendBeforeItsPositionIsKnown(t *testing.T) {
	cl := newCluster(t)
	tp := openTopic(t, cl, nil)
	if err := tp.st.Prepare(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	plain := tp.mustPublish(nil)
	id := ID{1, 9}
	if err := tp.st.Buffer().BeforeAppend(id); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	durable := make(chan Position, 1)
	if err := tp.ml.AddEntry(tp.entry(&id), func(p Position, err error) {
		durable <- p
		<-release
		tp.st.Buffer().Appended(id, p, err)
	}); err != nil {
		t.Fatal(err)
	}
	<-durable // in the log, callback not run yet
	if got, _ := tp.visible(); len(got) != 1 || got[0] != plain {
		t.Fatalf("visible %v before the callback", got)
	}
	close(release)
	eventually(t, "the append to be known", func() bool { return tp.st.Buffer().Stats().Ongoing == 1 })
	if got, _ := tp.visible(); len(got) != 0 {
		t.Fatalf("visible %v while open", got)
	}
}

// TestBufferRecovery: a new owner rebuilds the buffer from its snapshot and the topic after
// it: open transactions stay hidden, aborted ones stay aborted, committed ones visible.
func TestBufferRecovery(t *testing.T) {
	cl := newCluster(t)
	snapEvery := func(o *TopicStateOptions) { o.Config.BufferSnapshotMaxTransactionCount = 2 }
	tp := openTopic(t, cl, snapEvery)
	ctx := ctxT(t)
	var committed []Position
	for i := uint64(1); i <= 6; i++ { // three snapshots on the way
		id := ID{1, i}
		p := tp.mustPublish(&id)
		a := Commit
		if i%2 == 0 {
			a = Abort
		} else {
			committed = append(committed, p)
		}
		if err := tp.st.Buffer().End(ctx, id, a, 0); err != nil {
			t.Fatal(err)
		}
	}
	open := ID{3, 1}
	hidden := tp.mustPublish(&open)
	late := tp.mustPublish(nil)
	aborted := ID{3, 2}
	tp.mustPublish(&aborted)
	if err := tp.st.Buffer().End(ctx, aborted, Abort, 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a snapshot", func() bool { return !tp.st.Buffer().Stats().LastSnapshot.IsZero() })

	tp2 := openTopic(t, cl, snapEvery) // fences tp's log
	b := tp2.st.Buffer()
	if st := b.Stats(); st.Ongoing != 1 || st.State != "Ready" {
		t.Fatalf("recovered stats %+v", st)
	}
	got, _ := tp2.visible()
	if fmt.Sprint(got) != fmt.Sprint(committed) {
		t.Fatalf("visible after recovery %v, want %v", got, committed)
	}
	if !b.Aborted(ID{1, 2}) || !b.Aborted(aborted) || b.Aborted(ID{1, 1}) {
		t.Fatal("aborted set not recovered")
	}
	if err := b.End(ctx, open, Commit, 0); err != nil {
		t.Fatal(err)
	}
	got, _ = tp2.visible()
	if len(got) != 2 || got[0] != hidden || got[1] != late {
		t.Fatalf("visible after the commit %v, want %v %v", got, hidden, late)
	}
	if _, err := tp.publish(nil); err == nil {
		t.Fatal("the fenced owner still appends")
	}
}

// TestBufferSnapshotBoundsReplay: with every transaction ended, a recovery replays only
// what came after the last snapshot.
func TestBufferSnapshotBoundsReplay(t *testing.T) {
	cl := newCluster(t)
	cfg := func(o *TopicStateOptions) {
		o.Config.BufferSnapshotMaxTransactionCount = 5
		o.Config.BufferSnapshotMinTimeInMillis = 10
	}
	tp := openTopic(t, cl, cfg)
	ctx := ctxT(t)
	for i := uint64(1); i <= 20; i++ {
		id := ID{1, i}
		tp.mustPublish(&id)
		tp.mustPublish(&id)
		if err := tp.st.Buffer().End(ctx, id, Commit, 0); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the snapshot after the last commit", func() bool {
		b := tp.st.Buffer()
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.endedSinceSnap == 0 && !b.snapping
	})
	tp2 := openTopic(t, cl, cfg)
	if n := tp2.st.Buffer().stats.replayed; n != 0 {
		t.Fatalf("replayed %d entries, want 0 (60 in the topic)", n)
	}
	if got, _ := tp2.visible(); len(got) != 40 {
		t.Fatalf("%d visible, want 40", len(got))
	}
}

func TestBufferLowWaterMark(t *testing.T) {
	cl := newCluster(t)
	tp := openTopic(t, cl, nil)
	ctx := ctxT(t)
	stale := ID{4, 3} // never registered here: its coordinator will not end it here
	tp.mustPublish(&stale)
	// The coordinator ends another transaction and says everything up to 5 ended.
	done := ID{4, 6}
	tp.mustPublish(&done)
	if err := tp.st.Buffer().End(ctx, done, Commit, 5); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stale transaction to be aborted", func() bool { return tp.st.Buffer().Aborted(stale) })
	if _, err := tp.publish(&ID{4, 4}); !isErr(err, ErrNotAllowed) {
		t.Fatalf("append of a transaction below the low water mark: %v", err)
	}
	if _, err := tp.publish(&ID{4, 9}); err != nil {
		t.Fatalf("append of a newer transaction: %v", err)
	}
}

// TestTopicWithoutTransactionsHasNoState: a topic that never saw a transaction gets no
// state log, and its entries are all visible.
func TestTopicWithoutTransactionsHasNoState(t *testing.T) {
	cl := newCluster(t)
	tp := openTopic(t, cl, nil)
	tp.mustPublish(nil)
	if ok, _ := tp.f.Exists(ctxT(t), StateLogName(topicLog)); ok {
		t.Fatal("state log created without a transaction")
	}
	tp2 := openTopic(t, cl, nil)
	if got, _ := tp2.visible(); len(got) != 1 {
		t.Fatalf("visible %v", got)
	}
	if lim, on := tp2.ml.ReadLimit(); on {
		t.Fatalf("read limit %v on a topic without transactions", lim)
	}
}
