package topics

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// drain collects what c delivers until it has been quiet for a while.
func (c *fakeConsumer) drain() []delivery {
	var out []delivery
	for {
		select {
		case d := <-c.got:
			out = append(out, d)
		case <-time.After(300 * time.Millisecond):
			return out
		}
	}
}

// A subscription's type is its first consumer's. Entries a Key_Shared dispatcher held back
// for a consumer without permits are not lost when every consumer leaves and the next one
// subscribes with another type: the switch rewinds, and the Shared consumer gets them.
func TestDispatcherSwitchKeepsHeldEntries(t *testing.T) {
	svc := newMemBackend(t).start(t, nil)
	ctx := ctxT(t)
	tp, err := svc.Topic(ctx, mustName(t, "persistent://public/default/switch"), Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := tp.AddProducer(ctx, ProducerSpec{Name: "p"}, &fakeProducer{})
	if err != nil {
		t.Fatal(err)
	}
	ks := func(id uint64) (*Consumer, *fakeConsumer) {
		fc := newFakeConsumer()
		c, err := tp.Subscribe(ctx, ConsumerSpec{ID: id, Name: fmt.Sprint("c", id), Subscription: "s", Type: KeyShared, Durable: true,
			InitialEarliest: true, KeyShared: &KeySharedPolicy{Mode: AutoSplit}}, fc)
		if err != nil {
			t.Fatal(err)
		}
		return c, fc
	}
	a, fa := ks(1)
	b, _ := ks(2) // never gets permits: entries of its keys are held back
	const n = 40
	for i := 0; i < n; i++ {
		publish(t, p, MessageSpec{Payload: []byte(fmt.Sprint(i)), Key: fmt.Sprint("key-", i), ProducerName: "p", SequenceID: int64(i)})
	}
	a.Flow(1000)
	got := fa.drain()
	if len(got) == 0 || len(got) == n {
		t.Fatalf("consumer a got %d of %d: the keys did not split between the two consumers", len(got), n)
	}
	ids := make([]AckID, len(got))
	for i, d := range got {
		ids[i] = AckID{Position: d.e.Position}
	}
	if err := a.Ack(ctx, ids, false); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "acks applied", func() bool { return tp.Stats().Subscriptions["s"].MsgBacklog == int64(n-len(got)) })
	a.Close()
	b.Close()

	fc := newFakeConsumer()
	c, err := tp.Subscribe(ctx, ConsumerSpec{ID: 3, Name: "c3", Subscription: "s", Type: Shared, Durable: true}, fc)
	if err != nil {
		t.Fatal(err)
	}
	c.Flow(1000)
	rest := fc.drain()
	if len(got)+len(rest) != n {
		t.Fatalf("a got %d, the Shared consumer after it %d, of %d", len(got), len(rest), n)
	}
	seen := map[string]bool{}
	for _, d := range append(got, rest...) {
		seen[d.e.Position.String()] = true
	}
	if len(seen) != n {
		keys := make([]string, 0, len(seen))
		for k := range seen {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Fatalf("%d distinct entries delivered, want %d: %v", len(seen), n, keys)
	}
	if k := tp.Subscription("s").Type(); k != Shared {
		t.Fatalf("subscription type %s after the switch", k)
	}
}
