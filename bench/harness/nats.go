package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// EnsureNATS returns the path of nats-server <version>, installing it from the Go module proxy
// into cacheDir/bin (outside the repository) when missing or of another version.
func EnsureNATS(ctx context.Context, cacheDir, version string) (string, error) {
	bin := filepath.Join(cacheDir, "bin", "nats-server")
	if out, err := exec.CommandContext(ctx, bin, "--version").Output(); err == nil && strings.Contains(string(out), version) {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/nats-io/nats-server/v2@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+filepath.Dir(bin), "GOFLAGS=-buildvcs=false")
	cmd.Dir = cacheDir // outside any module, so the repository's go.mod is not consulted
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: go install nats-server@%s: %w: %s", ErrUnavailable, version, err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}

// NATSConfig renders the server config for a durability mode. D1 adds sync_interval: always
// (fsync after every stored message, before the PubAck); D2 keeps the 2-minute default.
func NATSConfig(port int, storeDir string, d Durability) string {
	var b strings.Builder
	fmt.Fprintf(&b, "listen: 127.0.0.1:%d\n", port)
	b.WriteString("jetstream {\n")
	fmt.Fprintf(&b, "  store_dir: %q\n", storeDir)
	if d == D1 {
		b.WriteString("  sync_interval: always\n")
	}
	b.WriteString("  max_memory_store: 1GB\n  max_file_store: 200GB\n}\n")
	return b.String()
}

// ConfigHash is a short sha256 of a config text, recorded with results.
func ConfigHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}

// natsSystem runs nats-server; atomic > 0 publishes in atomic batches of that size.
type natsSystem struct {
	bin, name  string
	port       int
	window     int
	atomic     int
	gomaxprocs int
}

func (n *natsSystem) Name() string { return n.name }

func (n *natsSystem) Start(ctx context.Context, d Durability, dir string) (*Instance, error) {
	port := n.port
	if port == 0 {
		ports, err := freePorts()
		if err != nil {
			return nil, err
		}
		port, _ = strconv.Atoi(ports["port"])
	}
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte(NATSConfig(port, filepath.Join(dir, "js"), d)), 0o644); err != nil {
		return nil, err
	}
	if err := portFree(fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
		return nil, err
	}
	t0 := time.Now()
	srv, err := startProcess(n.bin, []string{"-c", conf}, dir, filepath.Join(dir, "server.log"), []string{"GOMAXPROCS=" + strconv.Itoa(n.gomaxprocs)})
	if err != nil {
		return nil, fmt.Errorf("%w: start nats-server: %w", ErrUnavailable, err)
	}
	inst := &Instance{srv: srv}
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	if err := waitPort(ctx, srv, fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
		inst.Stop()
		return nil, err
	}
	if err := natsFirstAck(ctx, url); err != nil {
		inst.Stop()
		return nil, fmt.Errorf("%w: nats first publish: %w", ErrUnavailable, err)
	}
	inst.Ready = time.Since(t0)
	inst.Drv = &natsDriver{url: url, window: n.window, atomic: n.atomic}
	return inst, nil
}

// natsFirstAck stores one message in a scratch stream and waits for its PubAck.
func natsFirstAck(ctx context.Context, url string) error {
	for {
		nc, err := nats.Connect(url, nats.Timeout(time.Second))
		if err == nil {
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				return err
			}
			for {
				_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "ready", Subjects: []string{"ready"}, Storage: jetstream.FileStorage})
				if err == nil {
					_, err = js.Publish(ctx, "ready", []byte("x"))
				}
				if err == nil {
					return js.DeleteStream(ctx, "ready")
				}
				if ctx.Err() != nil {
					return err
				}
				time.Sleep(5 * time.Millisecond) // JetStream may still be recovering
			}
		}
		if ctx.Err() != nil {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// natsDriver opens one connection per producer and per consumer, like independent clients.
type natsDriver struct {
	url    string
	window int
	atomic int
	mu     sync.Mutex
	conns  []*nats.Conn
}

func (d *natsDriver) connect() (*nats.Conn, error) {
	nc, err := nats.Connect(d.url, nats.Timeout(5*time.Second))
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.conns = append(d.conns, nc)
	d.mu.Unlock()
	return nc, nil
}

func streamName(base string) string { return strings.ToUpper(base) }
func subject(base string, p int) string {
	return base + "." + strconv.Itoa(p)
}

func (d *natsDriver) Prepare(ctx context.Context, base string, partitions int) error {
	nc, err := d.connect()
	if err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{
		Name: streamName(base), Subjects: []string{base + ".>"}, Storage: jetstream.FileStorage,
		Replicas: 1, MaxBytes: -1, AllowAtomicPublish: d.atomic > 0,
	})
	return err
}

func (d *natsDriver) NewProducer(ctx context.Context, base string, parts []int, _ ProducerOpts) (Producer, error) {
	nc, err := d.connect()
	if err != nil {
		return nil, err
	}
	if d.atomic > 0 {
		return &natsAtomicProducer{nc: nc, base: base, batch: d.atomic}, nil
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(d.window+1), jetstream.WithPublishAsyncTimeout(30*time.Second))
	if err != nil {
		return nil, err
	}
	p := &natsProducer{js: js, base: base, futs: make(chan natsPending, d.window+1), done: make(chan struct{})}
	go p.waitAcks()
	return p, nil
}

type natsPending struct {
	f    jetstream.PubAckFuture
	done func(error)
}

// natsProducer is JetStream async publish: acks of one stream arrive in order, so one
// goroutine waits on the futures in publish order.
type natsProducer struct {
	js     jetstream.JetStream
	base   string
	futs   chan natsPending
	done   chan struct{}
	closed sync.Once
}

func (p *natsProducer) waitAcks() {
	defer close(p.done)
	for pd := range p.futs {
		select {
		case <-pd.f.Ok():
			pd.done(nil)
		case err := <-pd.f.Err():
			pd.done(err)
		}
	}
}

func (p *natsProducer) Publish(part int, payload []byte, done func(error)) error {
	f, err := p.js.PublishAsync(subject(p.base, part), payload)
	if err != nil {
		return err
	}
	p.futs <- natsPending{f, done}
	return nil
}

func (p *natsProducer) Flush(ctx context.Context) error {
	select {
	case <-p.js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *natsProducer) Close() {
	p.closed.Do(func() {
		close(p.futs)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
		}
	})
}

// natsAtomicProducer publishes atomic batches (ADR-50): every message carries Nats-Batch-Id
// and Nats-Batch-Sequence, all but the last go out as plain publishes, and the last carries
// Nats-Batch-Commit: 1 as a request whose reply is the one PubAck of the batch. One batch at
// a time per producer, like `nats bench js pub atomic`.
type natsAtomicProducer struct {
	nc    *nats.Conn
	base  string
	batch int
	msgs  []*nats.Msg
	dones []func(error)
}

type natsPubAck struct {
	Stream string `json:"stream"`
	Count  int    `json:"count"`
	Error  *struct {
		Code        int    `json:"code"`
		Description string `json:"description"`
	} `json:"error"`
}

var errNATSBatch = errors.New("harness: nats atomic batch rejected")

func (p *natsAtomicProducer) Publish(part int, payload []byte, done func(error)) error {
	p.msgs = append(p.msgs, &nats.Msg{Subject: subject(p.base, part), Data: payload, Header: nats.Header{}})
	p.dones = append(p.dones, done)
	if len(p.msgs) >= p.batch {
		p.commit()
	}
	return nil
}

func (p *natsAtomicProducer) commit() {
	if len(p.msgs) == 0 {
		return
	}
	msgs, dones := p.msgs, p.dones
	p.msgs, p.dones = nil, nil
	err := p.send(msgs)
	for _, d := range dones {
		d(err)
	}
}

func (p *natsAtomicProducer) send(msgs []*nats.Msg) error {
	id := nuid.Next()
	for i, m := range msgs {
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if i < len(msgs)-1 {
			if err := p.nc.PublishMsg(m); err != nil {
				return err
			}
			continue
		}
		m.Header.Set("Nats-Batch-Commit", "1")
		resp, err := p.nc.RequestMsg(m, 30*time.Second)
		if err != nil {
			return err
		}
		var ack natsPubAck
		if err := json.Unmarshal(resp.Data, &ack); err != nil {
			return fmt.Errorf("%w: bad ack %q: %w", errNATSBatch, resp.Data, err)
		}
		if ack.Error != nil {
			return fmt.Errorf("%w: %d %s", errNATSBatch, ack.Error.Code, ack.Error.Description)
		}
		if ack.Count != len(msgs) {
			return fmt.Errorf("%w: committed %d of %d", errNATSBatch, ack.Count, len(msgs))
		}
	}
	return nil
}

func (p *natsAtomicProducer) Flush(context.Context) error { p.commit(); return nil }
func (p *natsAtomicProducer) Close()                      { p.commit() }

func (d *natsDriver) NewConsumer(ctx context.Context, base, name string, parts []int) (Consumer, error) {
	nc, err := d.connect()
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	var subjects []string
	for _, p := range parts {
		subjects = append(subjects, subject(base, p))
	}
	cfg := jetstream.ConsumerConfig{
		Durable: name, AckPolicy: jetstream.AckAllPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
		MaxAckPending: 4 * natsAckEvery * 100,
	}
	if len(subjects) == 1 {
		cfg.FilterSubject = subjects[0]
	} else {
		cfg.FilterSubjects = subjects
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, streamName(base), cfg)
	if err != nil {
		return nil, err
	}
	return &natsConsumer{cons: cons}, nil
}

// natsAckEvery: consumers ack cumulatively (AckAll) every this many messages, the analogue
// of the Pulsar client's grouped acknowledgements.
const natsAckEvery = 100

type natsConsumer struct{ cons jetstream.Consumer }

func (c *natsConsumer) Run(ctx context.Context, fn func([]byte)) error {
	it, err := c.cons.Messages(jetstream.PullMaxMessages(1000))
	if err != nil {
		return err
	}
	defer it.Stop()
	n := 0
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		fn(m.Data())
		if n++; n%natsAckEvery == 0 {
			_ = m.Ack()
		}
	}
}

func (c *natsConsumer) Close() {}

func (d *natsDriver) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, nc := range d.conns {
		nc.Close()
	}
	d.conns = nil
}
