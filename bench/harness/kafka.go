package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The Kafka comparison (issue 19, -peer kafka): three systems per workload variant, all on
// this machine, interleaved like the NATS run:
//
//	magnetar         magnetar standalone, driven over its Kafka listener with franz-go
//	magnetar-pulsar  the same standalone over the Pulsar protocol with pulsar-client-go
//	kafka            Apache Kafka (KafkaVersion from Maven Central, KRaft broker+controller
//	                 in one JVM) driven with franz-go
//
// Naming the Kafka-protocol Magnetar "magnetar" makes the report's ratio lines
// magnetar/kafka (the target) and magnetar/magnetar-pulsar (what the Kafka front
// end costs against the native protocol).
//
// Durability, stated in the report: D1 fsync before the acknowledgement on both sides
// (Magnetar's journal fsync; Kafka log.flush.interval.messages=1, so each appended batch
// is flushed before the produce is answered), D2 without fsync (Magnetar
// journalSyncData=false; Kafka's default, which leaves flushing to the OS). Both
// acknowledge with acks=all from one replica.

// KafkaDurability describes the Kafka side of each mode for the report.
func KafkaDurability(d Durability) string {
	if d == D1 {
		return "Apache Kafka log.flush.interval.messages=1 (fsync per appended batch before the ack), acks=all, replication 1"
	}
	return "Apache Kafka defaults (no fsync; the OS writes back), acks=all, replication 1"
}

// EnsureKafkaServer builds the repository's kafka-server helper
// (internal/testenv/cmd/kafka-server: fetches Apache Kafka from Maven Central once, formats
// a KRaft directory, then becomes the broker JVM) into cacheDir and returns its path and
// the Kafka version it runs.
func EnsureKafkaServer(ctx context.Context, repo, cacheDir string) (bin, version string, err error) {
	return ensureHelper(ctx, repo, cacheDir, "kafka-server")
}

// ensureHelper builds internal/testenv/cmd/<name> into cacheDir, has it fetch its jars
// (-fetch: minutes the first time, which no block's startup should count) and returns its
// path and the version it runs. Building it keeps this module free of the main module's
// dependencies.
func ensureHelper(ctx context.Context, repo, cacheDir, name string) (bin, version string, err error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", "", err
	}
	bin = filepath.Join(cacheDir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./internal/testenv/cmd/"+name)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("%w: building %s: %v\n%s", ErrUnavailable, name, err, out)
	}
	if out, err := exec.CommandContext(ctx, bin, "-fetch").CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("%w: %s -fetch: %v\n%s", ErrUnavailable, name, err, out)
	}
	out, err := exec.CommandContext(ctx, bin, "-version").Output()
	if err != nil {
		return "", "", fmt.Errorf("%w: %s -version: %v", ErrUnavailable, name, err)
	}
	return bin, strings.TrimSpace(string(out)), nil
}

// kafkaSystem runs Apache Kafka through the kafka-server helper.
type kafkaSystem struct {
	bin    string
	window int
	heap   string
}

func (k *kafkaSystem) Name() string { return "kafka" }

func (k *kafkaSystem) Start(ctx context.Context, d Durability, dir string) (*Instance, error) {
	ports, err := freePorts()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + ports["port"]
	args := []string{"-dir", filepath.Join(dir, "kafka"), "-heap", k.heap, "-port", ports["port"], "-controller-port", ports["http"], "-production-jvm"}
	if d == D1 {
		args = append(args, "-props", "log.flush.interval.messages=1")
	}
	t0 := time.Now()
	srv, err := startProcess(k.bin, args, dir, filepath.Join(dir, "server.log"), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: start apache kafka: %w", ErrUnavailable, err)
	}
	inst := &Instance{srv: srv}
	if err := waitPort(ctx, srv, addr); err != nil {
		inst.Stop()
		return nil, err
	}
	drv := &kafkaDriver{addr: addr, window: k.window}
	if err := kafkaFirstAck(ctx, drv, srv); err != nil {
		drv.Close()
		inst.Stop()
		return nil, err
	}
	inst.Ready = time.Since(t0)
	inst.Drv = drv
	return inst, nil
}

// magnetarKafkaSystem is the standalone with its Kafka listener on, driven over it.
type magnetarKafkaSystem struct {
	m *magnetarSystem
}

func (s *magnetarKafkaSystem) Name() string { return "magnetar" }

func (s *magnetarKafkaSystem) Start(ctx context.Context, d Durability, dir string) (*Instance, error) {
	port, err := freePorts()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + port["port"]
	m := *s.m
	m.extra = append(append([]string{}, m.extra...), "--kafka-listeners", "PLAINTEXT://"+addr)
	inst, err := m.Start(ctx, d, dir)
	if err != nil {
		return nil, err
	}
	inst.Drv.Close()
	drv := &kafkaDriver{addr: addr, window: s.m.window}
	if err := kafkaFirstAck(ctx, drv, inst.srv); err != nil {
		drv.Close()
		inst.Drv = nil
		inst.Stop()
		return nil, err
	}
	inst.Drv = drv
	return inst, nil
}

// kafkaFirstAck produces one record and waits for its acknowledgement, retrying while the
// server comes up.
func kafkaFirstAck(ctx context.Context, d *kafkaDriver, s *server) error {
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		cl, err := kgo.NewClient(kgo.SeedBrokers(d.addr), kgo.AllowAutoTopicCreation(), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			err = cl.ProduceSync(pctx, &kgo.Record{Topic: "bench-ready", Value: []byte("x")}).FirstErr()
			cancel()
			cl.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		if s.exited() {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("%w: first produce: %v (server log: %s)", ErrUnavailable, last, s.tail())
}

// kafkaDriver drives a Kafka-protocol server with franz-go. Partition p of a run is
// partition p of the topic <base> (created with the run's partition count).
type kafkaDriver struct {
	addr   string
	window int

	mu      sync.Mutex
	clients []*kgo.Client
}

func (d *kafkaDriver) client(opts ...kgo.Opt) (*kgo.Client, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(d.addr)}, opts...)...)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.clients = append(d.clients, cl)
	d.mu.Unlock()
	return cl, nil
}

func (d *kafkaDriver) Prepare(ctx context.Context, base string, partitions int) error {
	cl, err := d.client()
	if err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	first := min(partitions, kafkaPartitionStep)
	_, err = adm.CreateTopic(ctx, int32(first), 1, nil, base)
	if err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
		return err
	}
	for n := first + kafkaPartitionStep; first < partitions; n += kafkaPartitionStep {
		first = min(n, partitions)
		resp, err := adm.UpdatePartitions(ctx, first, base)
		if err == nil {
			err = resp[base].Err
		}
		if err != nil && !strings.Contains(err.Error(), "INVALID_PARTITIONS") {
			return fmt.Errorf("growing %s to %d partitions: %w", base, first, err)
		}
	}
	return waitKafkaPartitions(ctx, adm, base, partitions)
}

// waitKafkaPartitions waits until the cluster's metadata lists every partition: Kafka
// answers CreatePartitions before its metadata shows them, and producers started at once
// refused records for the new partitions ("invalid record partitioning choice").
func waitKafkaPartitions(ctx context.Context, adm *kadm.Client, topic string, partitions int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		td, err := adm.ListTopics(ctx, topic)
		if err == nil && len(td[topic].Partitions) >= partitions {
			return nil
		}
		select {
		case <-ctx.Done():
			have := 0
			if err == nil {
				have = len(td[topic].Partitions)
			}
			return fmt.Errorf("%s: %d of %d partitions in the metadata: %w", topic, have, partitions, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// kafkaPartitionStep is how many partitions one request creates: Kafka 4 refuses a
// CreateTopics or CreatePartitions request that would create more than 10,000 at once
// (its controller's per-request limit), and the scaling workloads need 50,000.
const kafkaPartitionStep = 5000

func (d *kafkaDriver) NewProducer(ctx context.Context, base string, parts []int, opts ProducerOpts) (Producer, error) {
	// The Pulsar clients' batching: 1 ms linger (franz-go's default is 10 ms), batches up
	// to 1 MB (franz-go's default, about 1,000 of the 1 KiB messages).
	o := []kgo.Opt{kgo.DefaultProduceTopic(base), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(max(d.window, 1)),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(time.Millisecond)}
	if opts.NoBatching {
		o = append(o, kgo.MaxProduceRequestsInflightPerBroker(1), kgo.ProducerLinger(0))
	}
	cl, err := d.client(o...)
	if err != nil {
		return nil, err
	}
	return &kafkaProducer{cl: cl, ctx: ctx}, nil
}

func (d *kafkaDriver) NewConsumer(ctx context.Context, base, name string, parts []int) (Consumer, error) {
	offs := map[int32]kgo.Offset{}
	for _, p := range parts {
		offs[int32(p)] = kgo.NewOffset().AtStart()
	}
	cl, err := d.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{base: offs}), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, err
	}
	return &kafkaConsumer{cl: cl}, nil
}

func (d *kafkaDriver) Close() {
	d.mu.Lock()
	cls := d.clients
	d.clients = nil
	d.mu.Unlock()
	for _, cl := range cls {
		cl.Close()
	}
}

type kafkaProducer struct {
	cl  *kgo.Client
	ctx context.Context
}

// Publish blocks while the window (MaxBufferedRecords) is full, as the other drivers do.
func (p *kafkaProducer) Publish(part int, payload []byte, done func(error)) error {
	p.cl.Produce(p.ctx, &kgo.Record{Partition: int32(part), Value: payload}, func(_ *kgo.Record, err error) { done(err) })
	return nil
}

func (p *kafkaProducer) Flush(ctx context.Context) error { return p.cl.Flush(ctx) }
func (p *kafkaProducer) Close()                          { p.cl.Close() }

type kafkaConsumer struct{ cl *kgo.Client }

// Run delivers payloads until ctx ends; a partition consumer commits nothing (it reads like
// a reader, from the start).
func (c *kafkaConsumer) Run(ctx context.Context, fn func(payload []byte)) error {
	for {
		fs := c.cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return nil
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) { fn(r.Value) })
	}
}

func (c *kafkaConsumer) Close() { c.cl.Close() }

// kafkaEnv is the report's peer line in a Kafka run.
func kafkaEnv(version, heap string) string {
	return "Apache Kafka " + version + " (kafka_2.13 from Maven Central, KRaft, broker+controller in one JVM, -Xms" + heap + " -Xmx" + heap + ")"
}
