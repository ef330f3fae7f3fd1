package txn

import (
	"fmt"
	"testing"
)

// TestReadViewHidesWhatTheBufferHides: the View of a read-only snapshot of a topic's log,
// rebuilt from its state log and entries, hides exactly what the topic's own buffer keeps
// from consumers: markers, an aborted transaction's entries (ended before and after the
// buffer's last snapshot), and everything from an open transaction's first entry on.
func TestReadViewHidesWhatTheBufferHides(t *testing.T) {
	cl := newCluster(t)
	tp := openTopic(t, cl, func(o *TopicStateOptions) { o.Config.BufferSnapshotMaxTransactionCount = 2 })
	ctx := ctxT(t)
	hidden := func() (map[Position]bool, *View) {
		t.Helper()
		snap, err := tp.f.OpenSnapshot(ctx, topicLog)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = snap.Close() }()
		v, err := ReadView(ctx, tp.f, snap)
		if err != nil {
			t.Fatal(err)
		}
		out := map[Position]bool{}
		err = readSnapshot(ctx, snap, Position{LedgerID: -1, EntryID: -1}, func(p Position, data []byte) error {
			out[p] = v.Hidden(p, ParseEntryInfo(data))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out, v
	}
	plain := tp.mustPublish(nil)
	if _, v := hidden(); v != nil {
		t.Fatalf("a topic without transactions has a view: %+v", v)
	}
	c, a, o, d := ID{1, 1}, ID{1, 2}, ID{1, 3}, ID{1, 4}
	c1, a1 := tp.mustPublish(&c), tp.mustPublish(&a)
	for _, e := range []struct {
		id     ID
		action Action
	}{{c, Commit}, {a, Abort}} {
		if err := tp.st.Buffer().End(ctx, e.id, e.action, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Two ends: the buffer writes a snapshot (maxRead past a's marker, a aborted).
	b := tp.st.Buffer()
	eventually(t, "a buffer snapshot after both ends", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.endedSinceSnap == 0 && !b.snapping
	})
	p1 := tp.mustPublish(nil)
	d1 := tp.mustPublish(&d)
	if err := b.End(ctx, d, Abort, 0); err != nil { // after the snapshot: found by the replay
		t.Fatal(err)
	}
	o1 := tp.mustPublish(&o)
	p2 := tp.mustPublish(nil)

	got, v := hidden()
	visible := map[Position]bool{plain: true, c1: true, p1: true}
	for p, h := range got {
		if h == visible[p] {
			t.Errorf("entry %s: hidden %v, want %v", p, h, !visible[p])
		}
	}
	if len(got) != 10 { // 7 messages and 3 markers
		t.Errorf("%d entries in the snapshot: %v", len(got), got)
	}
	if lim, ok := v.Limit(); !ok || lim != o1 {
		t.Errorf("limit %s (%v), want %s", lim, ok, o1)
	}
	for _, p := range []Position{a1, d1, o1, p2} {
		if !got[p] {
			t.Errorf("%s is visible", p)
		}
	}

	// Once o commits, its entry and what followed it show.
	if err := b.End(ctx, o, Commit, 0); err != nil {
		t.Fatal(err)
	}
	got, v = hidden()
	if _, ok := v.Limit(); ok || got[o1] || got[p2] || !got[a1] || !got[d1] {
		t.Fatalf("after the commit: %s", fmt.Sprint(got))
	}
}
