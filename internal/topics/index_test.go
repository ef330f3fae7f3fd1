package topics

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// publishBatch stores one entry of n messages (a Pulsar batch) and returns its position and
// the index of its last message. Odd sequence ids go in an EntryBuffer, as the Pulsar front
// end passes them, so both ways of storing the broker entry metadata are read back.
func publishBatch(t *testing.T, p *Producer, seq int64, n int) (Position, int64) {
	t.Helper()
	var body []byte
	for i := 0; i < n; i++ {
		var err error
		body, err = wire.AppendBatchMessage(body, &pb.SingleMessageMetadata{}, []byte(fmt.Sprint("m", i)))
		if err != nil {
			t.Fatal(err)
		}
	}
	md := &pb.MessageMetadata{ProducerName: proto.String(p.Name()), SequenceId: proto.Uint64(uint64(seq)), PublishTime: proto.Uint64(1),
		NumMessagesInBatch: proto.Int32(int32(n))}
	data, err := wire.AppendEntry(nil, md, body)
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		pos Position
		idx int64
		err error
	}
	done := make(chan res, 1)
	var buf []byte
	if seq%2 == 1 {
		data, buf = EntryBuffer(data)
	}
	if err := p.PublishIndexed(Message{Data: data, Buf: buf, Meta: MetaOf(md), SequenceID: seq, HighestSequenceID: seq},
		func(pos Position, idx int64, err error) { done <- res{pos, idx, err} }); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.pos, r.idx
}

// Indexes (PIP-70): every stored entry carries the index of its last message, counted over
// the topic's messages; they survive a restart, are found by a bounded search, readers and
// dispatch see the entry behind its block, and a commit moves a subscription back and forth
// with its properties.
func TestEntryIndexes(t *testing.T) {
	be := newMemBackend(t)
	svc := be.start(t, nil)
	ctx := ctxT(t)
	name := mustName(t, "persistent://public/default/indexed")
	tp, err := svc.Topic(ctx, name, Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if hw := tp.HighWatermark(); hw != 0 {
		t.Fatalf("empty topic high watermark %d", hw)
	}
	wait := tp.WaitIndex(0)
	p, err := tp.AddProducer(ctx, ProducerSpec{ID: 1, Name: "p"}, &fakeProducer{})
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{1, 5, 1, 3}
	var ps []Position
	var lasts []int64
	want := int64(-1)
	for i, n := range sizes {
		pos, last := publishBatch(t, p, int64(i), n)
		want += int64(n)
		if last != want {
			t.Fatalf("entry %d: index %d, want %d", i, last, want)
		}
		ps, lasts = append(ps, pos), append(lasts, last)
	}
	select {
	case <-wait:
	default:
		t.Fatal("WaitIndex(0) not closed after a store")
	}
	if hw := tp.HighWatermark(); hw != 10 {
		t.Fatalf("high watermark %d, want 10", hw)
	}
	select {
	case <-tp.WaitIndex(10):
		t.Fatal("WaitIndex(10) closed before message 10 exists")
	default:
	}
	for i, off := range []int64{0, 1, 5, 6, 7, 9} {
		e := []int{0, 1, 1, 2, 3, 3}[i]
		got, err := tp.SearchIndex(ctx, off)
		if err != nil || got != ps[e] {
			t.Fatalf("SearchIndex(%d) = %v %v, want %v", off, got, err, ps[e])
		}
	}
	if start, err := tp.StartIndex(ctx); err != nil || start != 0 {
		t.Fatalf("StartIndex %d %v", start, err)
	}
	// Readers and the metadata parser see the entry behind its block.
	r, err := tp.NewReader(ctx, Earliest)
	if err != nil {
		t.Fatal(err)
	}
	es, err := r.Read(ctx, 10)
	r.Close()
	if err != nil || len(es) != len(sizes) {
		t.Fatalf("read %d entries: %v", len(es), err)
	}
	for i, e := range es {
		last, bt, ok := EntryIndex(e)
		if !ok || last != lasts[i] || bt <= 0 || e.Meta.Count != sizes[i] {
			t.Fatalf("entry %d: index %d broker time %d ok %v meta %+v", i, last, bt, ok, e.Meta)
		}
	}

	// Commit a subscription forward, back, forward, with properties.
	for _, md := range []Position{ps[2], ps[0], ps[3]} {
		if err := tp.CommitSubscription(ctx, "group", md, map[string]int64{"kafka.offset": int64(md.EntryID)}); err != nil {
			t.Fatal(err)
		}
		got, props, ok := tp.SubscriptionState("group")
		if !ok || got != md || props["kafka.offset"] != int64(md.EntryID) {
			t.Fatalf("after commit at %v: %v %v %v", md, got, props, ok)
		}
	}
	if st := tp.Stats(); st.Subscriptions["group"].MsgBacklog != 0 {
		t.Fatalf("committed subscription's backlog %d", st.Subscriptions["group"].MsgBacklog)
	}
	if _, _, ok := tp.SubscriptionState(dedupCursorName); ok {
		t.Fatal("the dedup cursor shows as a subscription")
	}

	// A restart recovers the next index from the last entry, and the committed state.
	svc.stop()
	svc = be.start(t, nil)
	tp, err = svc.Topic(ctx, name, Load{})
	if err != nil {
		t.Fatal(err)
	}
	if hw := tp.HighWatermark(); hw != 10 {
		t.Fatalf("high watermark after restart %d", hw)
	}
	if got, props, ok := tp.SubscriptionState("group"); !ok || got != ps[3] || props["kafka.offset"] != int64(ps[3].EntryID) {
		t.Fatalf("subscription after restart: %v %v %v", got, props, ok)
	}
	p, err = tp.AddProducer(ctx, ProducerSpec{ID: 1, Name: "p"}, &fakeProducer{})
	if err != nil {
		t.Fatal(err)
	}
	if _, last := publishBatch(t, p, 9, 2); last != 11 {
		t.Fatalf("first entry after restart has index %d, want 11", last)
	}
	// TrimBeforeIndex moves a subscription behind the entry up to it.
	if err := tp.CommitSubscription(ctx, "slow", Position{LedgerID: ps[0].LedgerID, EntryID: -1}, nil); err != nil {
		t.Fatal(err)
	}
	pos, err := tp.TrimBeforeIndex(ctx, 6)
	if err != nil || pos != ps[2] {
		t.Fatalf("TrimBeforeIndex(6) = %v %v, want %v", pos, err, ps[2])
	}
	if md, _, _ := tp.SubscriptionState("slow"); md != ps[1] {
		t.Fatalf("slow subscription at %v after the trim, want %v", md, ps[1])
	}
}

// roomBefore finds the room EntryBuffer leaves, and only when data is the tail of buf.
func TestRoomBefore(t *testing.T) {
	data, buf := EntryBuffer([]byte("entry"))
	room, ok := roomBefore(data, buf)
	if !ok || len(room) != wire.MaxBrokerEntryMetadataSize || &room[len(room)-1] != &buf[wire.MaxBrokerEntryMetadataSize-1] {
		t.Fatalf("EntryBuffer's room: ok %v len %d", ok, len(room))
	}
	if string(data) != "entry" {
		t.Fatalf("EntryBuffer data %q", data)
	}
	for name, c := range map[string]struct{ data, buf []byte }{
		"no buffer":     {data, nil},
		"not its tail":  {data[:3], buf},
		"too little":    {buf[2:], buf},
		"another slice": {[]byte("entry"), buf},
		"empty":         {buf[len(buf):], buf},
	} {
		if _, ok := roomBefore(c.data, c.buf); ok {
			t.Errorf("%s: room found", name)
		}
	}
}
