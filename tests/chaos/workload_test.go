package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

// op is one entry of the history (Jepsen's invoke / ok / fail / info).
type op struct {
	Kind     string // "send", "recv"
	Type     string // "ok", "info" (indeterminate: may or may not have happened)
	Topic    string
	Producer string
	Seq      int64
	Sub      string
	ID       string // message id "ledger:entry:batch"
	Invoke   time.Time
	Done     time.Time
}

// history is the recorded operations of a run.
type history struct {
	mu  sync.Mutex
	ops []op
}

func (h *history) add(o op) {
	h.mu.Lock()
	h.ops = append(h.ops, o)
	h.mu.Unlock()
}

func (h *history) snapshot() []op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]op(nil), h.ops...)
}

// subscriptions of every topic: one per subscription type.
var subscriptions = []struct {
	name      string
	typ       pulsar.SubscriptionType
	consumers int
}{
	{"exclusive", pulsar.Exclusive, 1},
	{"failover", pulsar.Failover, 2},
	{"shared", pulsar.Shared, 2},
	{"keyshared", pulsar.KeyShared, 2},
}

// workload drives producers and consumers until stopped.
type workload struct {
	t        testing.TB
	url      string
	topics   []string
	hist     history
	acked    atomic.Int64
	stop     chan struct{} // ends the consumers
	stopSend chan struct{} // ends the producers
	wg       sync.WaitGroup
	sendWG   sync.WaitGroup
	rng      *rand.Rand
	rngMu    sync.Mutex
	inflight int

	mu        sync.Mutex
	consumers []*consumerLoop
}

func msgID(id pulsar.MessageID) string {
	return fmt.Sprintf("%d:%d:%d", id.LedgerID(), id.EntryID(), id.BatchIdx())
}

func newWorkload(t testing.TB, url string, topics []string, seed uint64) *workload {
	return &workload{t: t, url: url, topics: topics, stop: make(chan struct{}), stopSend: make(chan struct{}), rng: rand.New(rand.NewPCG(seed, 3)), inflight: 64}
}

func (w *workload) client() pulsar.Client {
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: w.url, OperationTimeout: 30 * time.Second, ConnectionTimeout: 5 * time.Second,
		Logger: plog.DefaultNopLogger()})
	if err != nil {
		w.t.Fatal(err)
	}
	return cl
}

// start subscribes every subscription first (so each sees every message), then starts the
// producers: producersPerTopic per topic, each with a fixed name (dedup keys on it).
func (w *workload) start(producersPerTopic int) {
	for _, topic := range w.topics {
		for _, s := range subscriptions {
			for i := range s.consumers {
				cl := &consumerLoop{w: w, topic: topic, sub: s.name, typ: s.typ, name: fmt.Sprintf("%s-%d", s.name, i)}
				cl.subscribe()
				w.mu.Lock()
				w.consumers = append(w.consumers, cl)
				w.mu.Unlock()
				w.wg.Add(1)
				go cl.run()
			}
		}
	}
	for ti, topic := range w.topics {
		for i := range producersPerTopic {
			name := fmt.Sprintf("p%d-%d", ti, i)
			w.sendWG.Add(1)
			go w.produce(topic, name)
		}
	}
}

// produce sends name:seq payloads with keys k0..k7 until stop, at most inflight at once.
func (w *workload) produce(topic, name string) {
	defer w.sendWG.Done()
	cl := w.client()
	defer cl.Close()
	var prod pulsar.Producer
	for {
		var err error
		// The default batcher: pulsar-client-go v0.19.0's key-based batcher sends key batches
		// with overlapping sequence ranges, which deduplication takes for duplicates: it
		// drops them and the client reports success (docs/reliability.md). Key_Shared then
		// orders per batch key (check.go).
		prod, err = cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: name, SendTimeout: 60 * time.Second,
			BatchingMaxPublishDelay: 2 * time.Millisecond})
		if err == nil {
			break
		}
		select {
		case <-w.stopSend:
			return
		case <-time.After(time.Second):
		}
	}
	defer prod.Close()
	sem := make(chan struct{}, w.inflight)
	var pending sync.WaitGroup
	for seq := int64(0); ; seq++ {
		select {
		case <-w.stopSend:
			pending.Wait()
			return
		case sem <- struct{}{}:
		}
		o := op{Kind: "send", Topic: topic, Producer: name, Seq: seq, Invoke: time.Now()}
		pending.Add(1)
		prod.SendAsync(context.Background(), &pulsar.ProducerMessage{
			Payload: []byte(name + ":" + strconv.FormatInt(seq, 10)), Key: "k" + strconv.FormatInt(seq%8, 10)},
			func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				defer pending.Done()
				defer func() { <-sem }()
				o.Done = time.Now()
				if err != nil {
					o.Type = "info" // a failed send may still have been stored
				} else {
					o.Type, o.ID = "ok", msgID(id)
					w.acked.Add(1)
				}
				w.hist.add(o)
			})
	}
}

// consumerLoop receives and acknowledges (nacking a few on shared subscriptions), and
// resubscribes whenever told to reconnect or its consumer fails.
type consumerLoop struct {
	w          *workload
	topic, sub string
	name       string
	typ        pulsar.SubscriptionType
	mu         sync.Mutex
	cl         pulsar.Client
	cons       pulsar.Consumer
	reconnects atomic.Int64
}

func (c *consumerLoop) subscribe() {
	for {
		cl := c.w.client()
		cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: c.topic, SubscriptionName: c.sub, Type: c.typ, Name: c.name,
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, NackRedeliveryDelay: 100 * time.Millisecond})
		if err == nil {
			c.mu.Lock()
			c.cl, c.cons = cl, cons
			c.mu.Unlock()
			return
		}
		cl.Close()
		select {
		case <-c.w.stop:
			return
		case <-time.After(time.Second):
		}
	}
}

// reconnect closes the consumer (its unacknowledged messages are redelivered) and
// subscribes again.
func (c *consumerLoop) reconnect() { c.reconnects.Add(1) }

func (c *consumerLoop) closeConsumer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cons != nil {
		c.cons.Close()
		c.cl.Close()
		c.cons, c.cl = nil, nil
	}
}

func (c *consumerLoop) run() {
	defer c.w.wg.Done()
	defer c.closeConsumer()
	seen := c.reconnects.Load()
	for {
		select {
		case <-c.w.stop:
			return
		default:
		}
		if n := c.reconnects.Load(); n != seen {
			seen = n
			c.closeConsumer()
			c.subscribe()
		}
		c.mu.Lock()
		cons := c.cons
		c.mu.Unlock()
		if cons == nil {
			c.subscribe()
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		m, err := cons.Receive(ctx)
		cancel()
		if err != nil {
			continue
		}
		name, seq := parsePayload(string(m.Payload()))
		c.w.hist.add(op{Kind: "recv", Type: "ok", Topic: c.topic, Sub: c.topic + "/" + c.sub, Producer: name, Seq: seq, ID: msgID(m.ID()), Done: time.Now()})
		c.w.rngMu.Lock()
		nack := (c.typ == pulsar.Shared) && c.w.rng.IntN(100) == 0
		c.w.rngMu.Unlock()
		if nack {
			cons.Nack(m)
			continue
		}
		_ = cons.Ack(m)
	}
}

func parsePayload(p string) (string, int64) {
	name, seq, ok := strings.Cut(p, ":")
	if !ok {
		return p, -1
	}
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil {
		return p, -1
	}
	return name, n
}

// stopProducers ends the sends (every callback has run when it returns) but keeps the
// consumers draining; finish stops those too.
func (w *workload) stopProducers() {
	close(w.stopSend)
	w.sendWG.Wait()
}

// reconnectConsumers makes about frac percent of the consumers close and subscribe again.
func (w *workload) reconnectConsumers(frac int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.consumers {
		w.rngMu.Lock()
		do := w.rng.IntN(100) < frac
		w.rngMu.Unlock()
		if do {
			c.reconnect()
		}
	}
}

func (w *workload) finish() {
	close(w.stop)
	w.wg.Wait()
}
