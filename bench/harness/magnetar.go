package harness

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

// magnetarSystem runs `magnetar standalone` and drives it with pulsar-client-go.
type magnetarSystem struct {
	name       string // "" is "magnetar"; "magnetar-pulsar" in a Kafka run
	bin        string
	baseArgs   string
	extra      []string
	serviceURL string
	httpURL    string
	noSync     string // flag for D2
	window     int
	gomaxprocs int
}

func (m *magnetarSystem) Name() string {
	if m.name != "" {
		return m.name
	}
	return "magnetar"
}

// Args is the standalone command line for a mode, recorded in the report.
func (m *magnetarSystem) Args(d Durability, dir string, ports map[string]string) []string {
	args := append([]string{"standalone", "--data-dir", dir}, strings.Fields(expandPorts(m.baseArgs, ports))...)
	if d == D2 && m.noSync != "" {
		args = append(args, m.noSync)
	}
	return append(args, m.extra...)
}

func (m *magnetarSystem) Start(ctx context.Context, d Durability, dir string) (*Instance, error) {
	ports, err := freePorts()
	if err != nil {
		return nil, err
	}
	statusURL := ""
	if httpURL := expandPorts(m.httpURL, ports); httpURL != "" {
		statusURL = strings.TrimRight(httpURL, "/") + "/status.html"
	}
	return startPulsarProtocol(ctx, m.bin, m.Args(d, filepath.Join(dir, "data"), ports), []string{"GOMAXPROCS=" + strconv.Itoa(m.gomaxprocs)},
		dir, expandPorts(m.serviceURL, ports), statusURL, ports, m.window)
}

// startPulsarProtocol starts a server that speaks the Pulsar protocol at serviceURL and
// returns once its port accepts, statusURL (if any) answers 200 and a first publish is
// acknowledged; Ready counts from the process start.
func startPulsarProtocol(ctx context.Context, bin string, args, env []string, dir, serviceURL, statusURL string, ports map[string]string, window int) (*Instance, error) {
	u, err := url.Parse(serviceURL)
	if err != nil {
		return nil, fmt.Errorf("%w: service URL: %w", ErrConfig, err)
	}
	if err := portFree(u.Host); err != nil {
		return nil, err
	}
	t0 := time.Now()
	srv, err := startProcess(bin, args, dir, filepath.Join(dir, "server.log"), env)
	if err != nil {
		return nil, fmt.Errorf("%w: start %s: %w", ErrUnavailable, bin, err)
	}
	inst := &Instance{srv: srv, ports: ports}
	if err := waitPort(ctx, srv, u.Host); err != nil {
		inst.Stop()
		return nil, err
	}
	if statusURL != "" {
		if err := waitHTTP(ctx, srv, statusURL); err != nil {
			inst.Stop()
			return nil, err
		}
	}
	drv := &pulsarDriver{url: serviceURL, window: window}
	if err := pulsarFirstAck(ctx, drv, srv); err != nil {
		drv.Close()
		inst.Stop()
		return nil, fmt.Errorf("%w: first publish: %w (server log: %s)", ErrUnavailable, err, srv.tail())
	}
	inst.Ready = time.Since(t0)
	inst.Drv = drv
	return inst, nil
}

func waitHTTP(ctx context.Context, s *server, u string) error {
	for {
		if s.exited() {
			return fmt.Errorf("%w: exited (%v): %s", ErrUnavailable, s.werr, s.tail())
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s not ready: %w", ErrUnavailable, u, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// pulsarFirstAck publishes one message and waits for its receipt, retrying while the broker
// finishes starting (lookups may fail for a moment after the port opens).
func pulsarFirstAck(ctx context.Context, d *pulsarDriver, s *server) error {
	var last error
	for ctx.Err() == nil {
		if s.exited() {
			return fmt.Errorf("exited (%v)", s.werr)
		}
		last = func() error {
			c, err := d.client()
			if err != nil {
				return err
			}
			defer c.Close()
			p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/bench-ready", SendTimeout: 10 * time.Second})
			if err != nil {
				return err
			}
			defer p.Close()
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_, err = p.Send(sctx, &pulsar.ProducerMessage{Payload: []byte("x")})
			return err
		}()
		if last == nil {
			return nil
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
	return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
}

// pulsarDriver opens one pulsar.Client (one connection) per producer and per consumer.
type pulsarDriver struct {
	url     string
	window  int
	mu      sync.Mutex
	clients []pulsar.Client
}

func (d *pulsarDriver) client() (pulsar.Client, error) {
	return pulsar.NewClient(pulsar.ClientOptions{
		URL: d.url, ConnectionTimeout: 5 * time.Second, OperationTimeout: 30 * time.Second,
		Logger: plog.DefaultNopLogger(),
	})
}

func (d *pulsarDriver) track() (pulsar.Client, error) {
	c, err := d.client()
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.clients = append(d.clients, c)
	d.mu.Unlock()
	return c, nil
}

func topic(base string, p int) string {
	return "persistent://public/default/" + base + "-" + strconv.Itoa(p)
}

// Prepare does nothing: standalone auto-creates topics on first use.
func (d *pulsarDriver) Prepare(context.Context, string, int) error { return nil }

// Producer batching: 1 ms or 1,000 messages (performance.md §5.4), window = max pending.
// The per-topic producers are created a few at a time in parallel: the scaling workloads
// give one client thousands of topics, and one round trip after the other would make the
// setup, not the run, the long part.
func (d *pulsarDriver) NewProducer(ctx context.Context, base string, parts []int, opts ProducerOpts) (Producer, error) {
	c, err := d.track()
	if err != nil {
		return nil, err
	}
	p := &pulsarProducer{prods: make(map[int]pulsar.Producer, len(parts))}
	var mu sync.Mutex
	err = forEachParallel(len(parts), setupParallelism, func(i int) error {
		pr, err := c.CreateProducer(pulsar.ProducerOptions{
			Topic: topic(base, parts[i]), BatchingMaxPublishDelay: time.Millisecond, BatchingMaxMessages: 1000,
			MaxPendingMessages: d.window, SendTimeout: 30 * time.Second, DisableBatching: opts.NoBatching,
		})
		if err != nil {
			return err
		}
		mu.Lock()
		p.prods[parts[i]] = pr
		mu.Unlock()
		return nil
	})
	if err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

type pulsarProducer struct {
	prods map[int]pulsar.Producer
}

func (p *pulsarProducer) Publish(part int, payload []byte, done func(error)) error {
	pr, ok := p.prods[part]
	if !ok {
		return fmt.Errorf("%w: partition %d not owned by this producer", ErrConfig, part)
	}
	pr.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
		done(err)
	})
	return nil
}

func (p *pulsarProducer) Flush(ctx context.Context) error {
	for _, pr := range p.prods {
		if err := pr.FlushWithCtx(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (p *pulsarProducer) Close() {
	for _, pr := range p.prods {
		pr.Close()
	}
}

// NewConsumer subscribes exclusively from the earliest message; acks are per message and
// grouped by the client (default 100 ms / 1,000 acks).
func (d *pulsarDriver) NewConsumer(ctx context.Context, base, name string, parts []int) (Consumer, error) {
	c, err := d.track()
	if err != nil {
		return nil, err
	}
	opts := pulsar.ConsumerOptions{
		SubscriptionName: name, Type: pulsar.Exclusive,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, ReceiverQueueSize: 1000,
	}
	if len(parts) > manyTopics {
		return d.newManyTopicConsumer(c, opts, base, parts)
	}
	if len(parts) == 1 {
		opts.Topic = topic(base, parts[0])
	} else {
		for _, p := range parts {
			opts.Topics = append(opts.Topics, topic(base, p))
		}
	}
	cons, err := c.Subscribe(opts)
	if err != nil {
		return nil, err
	}
	return &pulsarConsumer{c: cons}, nil
}

// manyTopics is where a consumer of several topics stops being one multi-topic Subscribe:
// the Go client's multi-topic consumer subscribes to its topics one after the other with a
// full receiver queue each, so the scaling workloads' thousands of topics made its setup
// take minutes and its queues hold millions of messages.
const manyTopics = 16

// newManyTopicConsumer subscribes to each topic on its own, setupParallelism at a time, all
// into one message channel, each with a small receiver queue (100): the topics together
// still keep the consumer busy, and memory stays bounded by topics x 100.
func (d *pulsarDriver) newManyTopicConsumer(c pulsar.Client, opts pulsar.ConsumerOptions, base string, parts []int) (Consumer, error) {
	mc := &pulsarManyConsumer{ch: make(chan pulsar.ConsumerMessage, 1000)}
	var mu sync.Mutex
	err := forEachParallel(len(parts), setupParallelism, func(i int) error {
		o := opts
		o.Topic, o.ReceiverQueueSize, o.MessageChannel = topic(base, parts[i]), 100, mc.ch
		cons, err := c.Subscribe(o)
		if err != nil {
			return err
		}
		mu.Lock()
		mc.cons = append(mc.cons, cons)
		mu.Unlock()
		return nil
	})
	if err != nil {
		mc.Close()
		return nil, err
	}
	return mc, nil
}

type pulsarManyConsumer struct {
	ch   chan pulsar.ConsumerMessage
	cons []pulsar.Consumer
}

func (c *pulsarManyConsumer) Run(ctx context.Context, fn func([]byte)) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m := <-c.ch:
			fn(m.Payload())
			_ = m.Consumer.Ack(m.Message)
		}
	}
}

func (c *pulsarManyConsumer) Close() {
	for _, cons := range c.cons {
		cons.Close()
	}
}

type pulsarConsumer struct{ c pulsar.Consumer }

func (c *pulsarConsumer) Run(ctx context.Context, fn func([]byte)) error {
	for {
		m, err := c.c.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		fn(m.Payload())
		_ = c.c.Ack(m)
	}
}

func (c *pulsarConsumer) Close() { c.c.Close() }

func (d *pulsarDriver) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.clients {
		c.Close()
	}
	d.clients = nil
}
