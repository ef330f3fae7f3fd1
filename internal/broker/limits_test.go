package broker

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/ledger/memledger"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Hostile clients over real TCP against the bounds of limits.go and the policy limits:
// each is refused with Pulsar's error code, or paused, and nobody else is disturbed.

// startBrokerOnLedgers is startBrokerOn's in-memory variant over the given ledgers.
func startBrokerOnLedgers(t *testing.T, ledgers ledger.Client, mutate func(*config.BrokerConfig)) *testBroker {
	t.Helper()
	logger := testLogger(t)
	store := memstore.New(memstore.DefaultOptions())
	bootstrapNamespaces(t, store)
	f := newTestFactory(t, store, ledgers, logger)
	s := newTestServer(t, testBrokerConfig(mutate), store, f, logger, prometheus.NewRegistry(), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = closeServer(ctx, s)
		_ = f.Close(ctx)
	})
	return &testBroker{s: s, url: "pulsar://" + ln.Addr().String(), ln: ln, store: store, f: f}
}

func (r *rawClient) producer(topic string, pid, rid uint64) *pb.BaseCommand {
	r.t.Helper()
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{
		Topic: proto.String(topic), ProducerId: proto.Uint64(pid), RequestId: proto.Uint64(rid)}})
	return r.answer(rid)
}

func (r *rawClient) subscribe(topic, sub string, cid, rid uint64) *pb.BaseCommand {
	r.t.Helper()
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
		Topic: proto.String(topic), Subscription: proto.String(sub), SubType: pb.CommandSubscribe_Shared.Enum(),
		ConsumerId: proto.Uint64(cid), RequestId: proto.Uint64(rid)}})
	return r.answer(rid)
}

// answer reads frames until the answer to request rid (skipping pings and messages).
func (r *rawClient) answer(rid uint64) *pb.BaseCommand {
	r.t.Helper()
	for {
		f, err := r.next()
		if err != nil {
			r.t.Fatalf("waiting for the answer to %d: %v", rid, err)
		}
		c := f.Cmd
		switch {
		case c.ProducerSuccess != nil && c.GetProducerSuccess().GetRequestId() == rid,
			c.Success != nil && c.GetSuccess().GetRequestId() == rid,
			c.Error != nil && c.GetError().GetRequestId() == rid:
			return c
		}
	}
}

func sendFrame(t *testing.T, producerName string, pid, seq uint64, payload []byte) []byte {
	t.Helper()
	md := &pb.MessageMetadata{ProducerName: proto.String(producerName), SequenceId: proto.Uint64(seq), PublishTime: proto.Uint64(1)}
	entry, err := wire.AppendEntry(nil, md, payload)
	if err != nil {
		t.Fatal(err)
	}
	f, err := wire.AppendPayloadCommand(nil, &pb.BaseCommand{Type: pb.BaseCommand_SEND.Enum(),
		Send: &pb.CommandSend{ProducerId: proto.Uint64(pid), SequenceId: proto.Uint64(seq)}}, nil, entry)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// brokerConnOf finds the broker side of a raw client's connection.
func brokerConnOf(t *testing.T, b *testBroker, r *rawClient) *conn {
	t.Helper()
	var found *conn
	waitUntil(t, "the broker's side of the connection", func() bool {
		b.s.mu.Lock()
		defer b.s.mu.Unlock()
		for c := range b.s.conns {
			if c.remote == r.nc.LocalAddr().String() {
				found = c
				return true
			}
		}
		return false
	})
	return found
}

// brokerMaxConnections: the connection over the limit gets ERROR NotAllowed and is closed;
// once one closes, a new one is served.
func TestMaxConnectionsRefused(t *testing.T) {
	b := startBrokerOn(t, false, func(c *config.BrokerConfig) { c.MaxConnections = 2 })
	first, second := dialRaw(t, b), dialRaw(t, b)
	first.connect()
	second.connect()
	third := dialRaw(t, b)
	f, err := third.next()
	if err != nil || f.Cmd.GetType() != pb.BaseCommand_ERROR || f.Cmd.GetError().GetError() != pb.ServerError_NotAllowedError {
		t.Fatalf("third connection: %v %v, want ERROR NotAllowed", f.Cmd, err)
	}
	third.expectClosed()
	second.ping()
	_ = first.nc.Close()
	waitUntil(t, "a free connection slot", func() bool {
		b.s.mu.Lock()
		defer b.s.mu.Unlock()
		return len(b.s.conns) < 2
	})
	fourth := dialRaw(t, b)
	fourth.connect()
	fourth.ping()
}

// maxConcurrentLookupRequest: with every slot taken, LOOKUP and PARTITIONED_METADATA fail
// with TooManyRequests (the clients retry them); with a slot free they are answered.
func TestLookupsBeyondTheLimit(t *testing.T) {
	b := startBrokerOn(t, false, func(c *config.BrokerConfig) { c.MaxConcurrentLookupRequest = 1 })
	r := dialRaw(t, b)
	r.connect()
	const topic = "persistent://public/default/lookups"
	lookup := func(rid uint64) *pb.CommandLookupTopicResponse {
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{Topic: proto.String(topic), RequestId: proto.Uint64(rid)}})
		return r.expect(pb.BaseCommand_LOOKUP_RESPONSE).GetLookupTopicResponse()
	}
	meta := func(rid uint64) *pb.CommandPartitionedTopicMetadataResponse {
		r.send(&pb.BaseCommand{Type: pb.BaseCommand_PARTITIONED_METADATA.Enum(), PartitionMetadata: &pb.CommandPartitionedTopicMetadata{Topic: proto.String(topic), RequestId: proto.Uint64(rid)}})
		return r.expect(pb.BaseCommand_PARTITIONED_METADATA_RESPONSE).GetPartitionMetadataResponse()
	}
	b.s.lookups <- struct{}{} // another lookup in progress holds the only slot
	if l := lookup(1); l.GetResponse() != pb.CommandLookupTopicResponse_Failed || l.GetError() != pb.ServerError_TooManyRequests {
		t.Fatalf("lookup over the limit: %v", l)
	}
	if m := meta(2); m.GetResponse() != pb.CommandPartitionedTopicMetadataResponse_Failed || m.GetError() != pb.ServerError_TooManyRequests {
		t.Fatalf("partitioned metadata over the limit: %v", m)
	}
	<-b.s.lookups
	if l := lookup(3); l.GetResponse() != pb.CommandLookupTopicResponse_Connect {
		t.Fatalf("lookup with a free slot: %v", l)
	}
	if m := meta(4); m.GetResponse() != pb.CommandPartitionedTopicMetadataResponse_Success {
		t.Fatalf("partitioned metadata with a free slot: %v", m)
	}
}

// gatedLedgers holds every append until open is called (in order, per writer).
type gatedLedgers struct {
	ledger.Client
	mu   sync.Mutex
	gate chan struct{}
}

func (g *gatedLedgers) Create(ctx context.Context, opts ledger.CreateOptions) (ledger.Writer, error) {
	w, err := g.Client.Create(ctx, opts)
	if err != nil {
		return nil, err
	}
	gw := &gatedWriter{Writer: w, g: g, q: make(chan func(), 1<<16)}
	go gw.run()
	return gw, nil
}

func (g *gatedLedgers) wait() {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	<-gate
}

func (g *gatedLedgers) open() { g.mu.Lock(); close(g.gate); g.mu.Unlock() }

type gatedWriter struct {
	ledger.Writer
	g *gatedLedgers
	q chan func()
}

func (w *gatedWriter) AppendAsync(data []byte, done func(int64, error)) {
	w.q <- func() { w.g.wait(); w.Writer.AppendAsync(data, done) }
}

func (w *gatedWriter) run() {
	for f := range w.q {
		f()
	}
}

// maxPendingPublishRequestsPerConnection: a producer whose SENDs storage has not finished
// makes the broker stop reading its connection at the limit (its PING waits too); when
// storage catches up every SEND gets its receipt, in order.
func TestPendingPublishRequestsPauseReading(t *testing.T) {
	g := &gatedLedgers{Client: memledger.New(), gate: make(chan struct{})}
	b := startBrokerOnLedgers(t, g, func(c *config.BrokerConfig) { c.MaxPendingPublishRequestsPerConnection = 2 })
	r := dialRaw(t, b)
	r.connect()
	ok := r.producer("persistent://public/default/pending", 1, 1)
	name := ok.GetProducerSuccess().GetProducerName()
	if name == "" {
		t.Fatalf("PRODUCER: %v", ok)
	}
	for seq := range 5 {
		r.write(sendFrame(t, name, 1, uint64(seq), []byte(fmt.Sprint("m", seq))))
	}
	r.send(&pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
	c := brokerConnOf(t, b, r)
	waitUntil(t, "two SENDs pending", func() bool { return c.publishReqs.inUse() == 2 })
	_ = r.nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if f, err := r.rd.ReadFrame(); err == nil {
		t.Fatalf("the broker answered %s while at its pending-publish limit", f.Cmd.GetType())
	}
	r.rd = wire.NewReader(bufio.NewReader(r.nc), 0) // the timed-out read may have left a partial frame
	bystander := dialRaw(t, b)
	bystander.connect()
	bystander.ping()
	g.open()
	// Every receipt in order and the PONG (read after the SENDs, answered before the
	// later ones are stored).
	seq, pong := 0, false
	for seq < 5 || !pong {
		f, err := r.next()
		if err != nil {
			t.Fatalf("after %d receipts: %v", seq, err)
		}
		switch f.Cmd.GetType() {
		case pb.BaseCommand_PONG:
			pong = true
		case pb.BaseCommand_SEND_RECEIPT:
			if got := f.Cmd.GetSendReceipt().GetSequenceId(); got != uint64(seq) {
				t.Fatalf("receipt %d for seq %d", got, seq)
			}
			seq++
		default:
			t.Fatalf("after %d receipts: got %s", seq, f.Cmd.GetType())
		}
	}
}

// maxPendingWriteBytesPerConnection: a consumer that grants a million permits and reads
// nothing holds at most the limit (plus a frame) of broker memory while a producer on
// another connection publishes many times that; its own commands wait; when it reads
// again it gets every message in order, then the answer to its PING.
func TestClientThatDoesNotReadIsBounded(t *testing.T) {
	const limit = 64 << 10
	b := startBrokerOn(t, false, func(c *config.BrokerConfig) { c.MaxPendingWriteBytesPerConnection = limit })
	const topic = "persistent://public/default/not-reading"
	lazy := dialRaw(t, b)
	lazy.connect()
	if a := lazy.subscribe(topic, "s", 1, 1); a.Success == nil {
		t.Fatalf("SUBSCRIBE: %v", a)
	}
	lazy.send(&pb.BaseCommand{Type: pb.BaseCommand_FLOW.Enum(), Flow: &pb.CommandFlow{ConsumerId: proto.Uint64(1), MessagePermits: proto.Uint32(1 << 20)}})
	lc := brokerConnOf(t, b, lazy)

	prod := dialRaw(t, b)
	prod.connect()
	name := prod.producer(topic, 1, 1).GetProducerSuccess().GetProducerName()
	const n, size = 1500, 16 << 10 // 24 MiB: far past the limit and the sockets' buffers
	payload := make([]byte, size)
	var peak int64
	for seq := range n {
		prod.write(sendFrame(t, name, 1, uint64(seq), payload))
		prod.expect(pb.BaseCommand_SEND_RECEIPT)
		peak = max(peak, lc.pendingWrite.Load())
	}
	lazy.send(&pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
	if bound := int64(limit + b.s.maxFrame); peak > bound {
		t.Fatalf("a client that does not read made the broker queue %d bytes (bound %d)", peak, bound)
	}
	waitUntil(t, "dispatch paused at the limit", func() bool { return !lc.writable() })
	prod.ping() // another client is served meanwhile
	// Reading again: every message in order, and the PONG (once the broker reads the PING,
	// it may come between messages).
	seq, pong := 0, false
	for seq < n || !pong {
		f, err := lazy.next()
		if err != nil {
			t.Fatalf("after %d messages: %v", seq, err)
		}
		switch f.Cmd.GetType() {
		case pb.BaseCommand_PONG:
			pong = true
		case pb.BaseCommand_MESSAGE:
			if id := f.Cmd.GetMessage().GetMessageId(); id.GetEntryId() != uint64(seq) {
				t.Fatalf("message %d has entry id %d", seq, id.GetEntryId())
			}
			seq++
		case pb.BaseCommand_PING:
		default:
			t.Fatalf("after %d messages: got %s", seq, f.Cmd.GetType())
		}
	}
}

// The per-topic and per-namespace limits over TCP with Pulsar's codes: maxProducersPerTopic
// (ProducerBusy), maxSubscriptionsPerTopic (NotAllowed), maxConsumersPerSubscription
// (ConsumerBusy), maxTopicsPerNamespace (NotAllowed for an auto-created topic).
func TestTopicAndNamespaceLimitsOverTCP(t *testing.T) {
	b := startBrokerOn(t, false, func(c *config.BrokerConfig) {
		c.Policies.MaxProducersPerTopic, c.Policies.MaxSubscriptionsPerTopic = 2, 2
		c.Policies.MaxConsumersPerSubscription, c.Policies.MaxTopicsPerNamespace = 1, 2
	})
	r := dialRaw(t, b)
	r.connect()
	const topic = "persistent://public/default/limits"
	code := func(c *pb.BaseCommand) pb.ServerError {
		if c.Error == nil {
			return -1
		}
		return c.GetError().GetError()
	}
	for i := range uint64(2) {
		if c := r.producer(topic, i, 10+i); c.ProducerSuccess == nil {
			t.Fatalf("producer %d: %v", i, c)
		}
	}
	if c := r.producer(topic, 2, 12); code(c) != pb.ServerError_ProducerBusy {
		t.Fatalf("third producer: %v, want ProducerBusy", c)
	}
	for i, sub := range []string{"a", "b"} {
		if c := r.subscribe(topic, sub, uint64(i), 20+uint64(i)); c.Success == nil {
			t.Fatalf("subscription %s: %v", sub, c)
		}
	}
	if c := r.subscribe(topic, "c", 2, 22); code(c) != pb.ServerError_NotAllowedError {
		t.Fatalf("third subscription: %v, want NotAllowed", c)
	}
	if c := r.subscribe(topic, "a", 3, 23); code(c) != pb.ServerError_ConsumerBusy {
		t.Fatalf("second consumer of a: %v, want ConsumerBusy", c)
	}
	if c := r.producer("persistent://public/default/limits-2", 4, 24); c.ProducerSuccess == nil {
		t.Fatalf("second topic: %v", c)
	}
	if c := r.producer("persistent://public/default/limits-3", 5, 25); code(c) != pb.ServerError_NotAllowedError {
		t.Fatalf("third topic of the namespace: %v, want NotAllowed", c)
	}
	r.ping()
}
