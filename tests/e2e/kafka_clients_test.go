//go:build kafkacompat

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	segkafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// Sarama, kafka-go, KafkaJS, the Java client and Kafka Connect against a real `magnetar
// standalone` process (make kafka-compat). Each client produces clientRecords records
// (value = sequence number, key = seq % clientKeys) to a topic of clientPartitions
// partitions, consumes part of them in a group committing each record, stops, and a new
// member of the same group consumes the rest: every record must arrive exactly once and,
// within a partition, in the order it was produced.

const (
	clientRecords    = 120
	clientKeys       = 7
	clientPartitions = 3
	clientStopAt     = 50 // records the first group member takes before it stops
)

// consumed is one record as a consumer saw it.
type consumed struct {
	part int32
	seq  int
}

// checkOnceInOrder fails unless recs hold each sequence number 0..n-1 exactly once and
// each partition's sequence numbers rise.
func checkOnceInOrder(t *testing.T, recs []consumed, n int) {
	t.Helper()
	count := map[int]int{}
	last := map[int32]int{}
	for _, r := range recs {
		count[r.seq]++
		if l, ok := last[r.part]; ok && r.seq <= l {
			t.Errorf("partition %d: record %d after %d", r.part, r.seq, l)
		}
		last[r.part] = r.seq
	}
	for i := 0; i < n; i++ {
		if count[i] != 1 {
			t.Errorf("record %d arrived %d times", i, count[i])
		}
	}
	if len(recs) != n {
		t.Errorf("%d records consumed, want %d", len(recs), n)
	}
}

// parseConsumed reads "R <partition> <seq>" lines a client program printed.
func parseConsumed(t *testing.T, out string) []consumed {
	t.Helper()
	var recs []consumed
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "R" {
			continue
		}
		p, err1 := strconv.Atoi(f[1])
		s, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("bad record line %q", l)
		}
		recs = append(recs, consumed{int32(p), s})
	}
	return recs
}

// checkResumed checks the first member took exactly clientStopAt records and the second
// the rest, then the whole.
func checkResumed(t *testing.T, first, second []consumed) {
	t.Helper()
	if len(first) != clientStopAt {
		t.Fatalf("the first member consumed %d records, want %d", len(first), clientStopAt)
	}
	checkOnceInOrder(t, append(first, second...), clientRecords)
}

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Compression = sarama.CompressionSnappy
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	return cfg
}

func TestKafkaSaramaOnStandalone(t *testing.T) {
	_, _, _, addr := startKafkaStandalone(t, t.TempDir(), 0)
	ctx := ctxFor(t, 4*time.Minute)
	cfg := saramaConfig()
	admin, err := sarama.NewClusterAdmin([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.CreateTopic("sarama", &sarama.TopicDetail{NumPartitions: clientPartitions, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	saramaProduce(t, addr, cfg, "sarama")
	first := saramaConsume(t, ctx, addr, cfg, "sarama", clientStopAt)
	second := saramaConsume(t, ctx, addr, cfg, "sarama", clientRecords-clientStopAt)
	checkResumed(t, first, second)
}

// saramaProduce sends clientRecords records to topic, one at a time.
func saramaProduce(t *testing.T, addr string, cfg *sarama.Config, topic string) {
	t.Helper()
	prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := 0; i < clientRecords; i++ {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprint(i % clientKeys)),
			Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
}

// saramaConsume joins sarama-group on topic, takes stopAt records committing each one, and
// leaves the group.
func saramaConsume(t *testing.T, ctx context.Context, addr string, cfg *sarama.Config, topic string, stopAt int) []consumed {
	t.Helper()
	grp, err := sarama.NewConsumerGroup([]string{addr}, "sarama-group", cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &saramaMember{stopAt: stopAt, done: make(chan struct{})}
	cctx, cancel := context.WithCancel(ctx)
	errs := make(chan error, 1)
	go func() {
		for cctx.Err() == nil {
			if err := grp.Consume(cctx, []string{topic}, h); err != nil && cctx.Err() == nil {
				errs <- err
				return
			}
		}
	}()
	select {
	case <-h.done:
	case err := <-errs:
		cancel()
		t.Fatalf("consume: %v", err)
	case <-ctx.Done():
		t.Fatalf("sarama consumed %d of %d records", len(h.recs), stopAt)
	}
	cancel()
	if err := grp.Close(); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.recs
}

// saramaMember records and commits, one at a time, the first stopAt records it is given.
type saramaMember struct {
	mu     sync.Mutex
	stopAt int
	recs   []consumed
	done   chan struct{}
}

func (h *saramaMember) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaMember) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		seq, err := strconv.Atoi(string(m.Value))
		if err != nil {
			return err
		}
		h.mu.Lock()
		if len(h.recs) < h.stopAt {
			s.MarkMessage(m, "")
			s.Commit()
			h.recs = append(h.recs, consumed{m.Partition, seq})
			if len(h.recs) == h.stopAt {
				close(h.done)
			}
		}
		h.mu.Unlock()
	}
	return nil
}

func TestKafkaSegmentioOnStandalone(t *testing.T) {
	_, _, _, addr := startKafkaStandalone(t, t.TempDir(), 0)
	ctx := ctxFor(t, 4*time.Minute)
	conn, err := segkafka.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.CreateTopics(segkafka.TopicConfig{Topic: "seg", NumPartitions: clientPartitions, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	w := &segkafka.Writer{Addr: segkafka.TCP(addr), Topic: "seg", RequiredAcks: segkafka.RequireAll,
		Compression: segkafka.Zstd, Balancer: &segkafka.Hash{}, BatchTimeout: 10 * time.Millisecond}
	var msgs []segkafka.Message
	for i := 0; i < clientRecords; i++ {
		msgs = append(msgs, segkafka.Message{Key: []byte(fmt.Sprint(i % clientKeys)), Value: []byte(fmt.Sprint(i))})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	member := func(stopAt int) []consumed {
		r := segkafka.NewReader(segkafka.ReaderConfig{Brokers: []string{addr}, GroupID: "seg-group", Topic: "seg",
			StartOffset: segkafka.FirstOffset, MaxWait: 500 * time.Millisecond, CommitInterval: 0})
		defer r.Close()
		var recs []consumed
		for len(recs) < stopAt {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatalf("after %d records: %v", len(recs), err)
			}
			if err := r.CommitMessages(ctx, m); err != nil {
				t.Fatal(err)
			}
			seq, err := strconv.Atoi(string(m.Value))
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, consumed{int32(m.Partition), seq})
		}
		return recs
	}
	first := member(clientStopAt)
	second := member(clientRecords - clientStopAt)
	checkResumed(t, first, second)
}

// kafkajsVersion is the KafkaJS release from npm the test runs.
const kafkajsVersion = "kafkajs@2.2.4"

func TestKafkaJSOnStandalone(t *testing.T) {
	_, _, _, addr := startKafkaStandalone(t, t.TempDir(), 0)
	dir := testenv.NpmPackage(t, "kafkajs-2.2.4", kafkajsVersion)
	run := func(env ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := testenv.RunNode(ctx, dir, kafkajsClientScript, append(env, "BOOTSTRAP="+addr,
			fmt.Sprintf("RECORDS=%d", clientRecords), fmt.Sprintf("KEYS=%d", clientKeys), fmt.Sprintf("PARTITIONS=%d", clientPartitions))...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return out
	}
	run("PHASE=produce")
	first := parseConsumed(t, run("PHASE=consume", fmt.Sprintf("STOP=%d", clientStopAt)))
	second := parseConsumed(t, run("PHASE=consume", fmt.Sprintf("STOP=%d", clientRecords-clientStopAt)))
	checkResumed(t, first, second)
}

// kafkajsClientScript: PHASE=produce creates the topic and produces (gzip); PHASE=consume
// joins kjs-group without auto-commit, commits each record before printing it, and leaves
// after STOP records.
const kafkajsClientScript = `
const { Kafka, CompressionTypes, logLevel } = require('kafkajs')
const env = process.env
const kafka = new Kafka({ clientId: 'kjs', brokers: [env.BOOTSTRAP], logLevel: logLevel.WARN })
async function produce() {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic: 'kjs', numPartitions: Number(env.PARTITIONS) }] })
  await admin.disconnect()
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const messages = []
  for (let i = 0; i < Number(env.RECORDS); i++) messages.push({ key: 'k' + (i % Number(env.KEYS)), value: String(i) })
  await producer.send({ topic: 'kjs', acks: -1, compression: CompressionTypes.GZIP, messages })
  await producer.disconnect()
}
async function consume() {
  const stop = Number(env.STOP)
  const consumer = kafka.consumer({ groupId: 'kjs-group' })
  await consumer.connect()
  await consumer.subscribe({ topic: 'kjs', fromBeginning: true })
  let n = 0
  await new Promise((resolve, reject) => {
    consumer.run({ autoCommit: false, eachMessage: async ({ topic, partition, message }) => {
      if (n >= stop) return
      await consumer.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }])
      n++
      console.log('R ' + partition + ' ' + message.value.toString())
      if (n === stop) resolve()
    } }).catch(reject)
  })
  await consumer.disconnect()
}
(env.PHASE === 'produce' ? produce() : consume()).then(() => process.exit(0), e => { console.error(e); process.exit(1) })
`

func TestKafkaJavaClientOnStandalone(t *testing.T) {
	_, _, _, addr := startKafkaStandalone(t, t.TempDir(), 0)
	cli := testenv.NewKafkaCLI(t)
	src := filepath.Join(t.TempDir(), "ClientCheck.java")
	if err := os.WriteFile(src, []byte(javaClientSource), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		// The source-file launcher compiles and runs ClientCheck.java on the tools' classpath.
		out, err := cli.Run(src, 4*time.Minute, nil, append([]string{addr}, args...)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return out
	}
	run("produce", "java", strconv.Itoa(clientPartitions), strconv.Itoa(clientRecords), strconv.Itoa(clientKeys))
	first := parseConsumed(t, run("consume", "java", strconv.Itoa(clientStopAt)))
	second := parseConsumed(t, run("consume", "java", strconv.Itoa(clientRecords-clientStopAt)))
	checkResumed(t, first, second)
}

// javaClientSource: "<bootstrap> produce <topic> <partitions> <records> <keys>" creates the
// topic (Admin) and produces with an idempotent acks=all producer; "<bootstrap> consume
// <topic> <stop>" joins java-group without auto-commit, commits each record (commitSync)
// before printing it and closes after <stop> records.
const javaClientSource = `
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class ClientCheck {
  public static void main(String[] a) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", a[0]);
    String topic = a[2];
    if (a[1].equals("produce")) {
      try (Admin admin = Admin.create(p)) {
        admin.createTopics(List.of(new NewTopic(topic, Integer.parseInt(a[3]), (short) 1))).all().get();
      }
      p.put("acks", "all");
      p.put("enable.idempotence", "true");
      p.put("compression.type", "lz4");
      int n = Integer.parseInt(a[4]), keys = Integer.parseInt(a[5]);
      try (KafkaProducer<String, String> prod = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
        for (int i = 0; i < n; i++) prod.send(new ProducerRecord<>(topic, "k" + (i % keys), String.valueOf(i)));
        prod.flush();
      }
      return;
    }
    p.put("group.id", "java-group");
    p.put("enable.auto.commit", "false");
    p.put("auto.offset.reset", "earliest");
    int stop = Integer.parseInt(a[3]), n = 0;
    long deadline = System.currentTimeMillis() + 180_000;
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
      c.subscribe(List.of(topic));
      while (n < stop) {
        if (System.currentTimeMillis() > deadline) throw new RuntimeException("consumed " + n + " of " + stop);
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
          if (n >= stop) break;
          c.commitSync(Map.of(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1)));
          n++;
          System.out.println("R " + r.partition() + " " + r.value());
        }
      }
    }
  }
}
`

// TestKafkaConnectOnStandalone: Kafka Connect standalone moves a file through a topic with
// the FileStream source and sink; it is stopped, more lines are appended, and a restarted
// worker carries on from its committed offsets: the sink file holds every line once, in
// order.
func TestKafkaConnectOnStandalone(t *testing.T) {
	_, _, _, addr := startKafkaStandalone(t, t.TempDir(), 0)
	cli := testenv.NewKafkaCLI(t)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var lines []string
	for i := 0; i < 60; i++ {
		lines = append(lines, fmt.Sprintf("connect line %d", i))
	}
	write("in.txt", strings.Join(lines[:30], "\n")+"\n")
	worker := write("worker.properties", strings.Join([]string{
		"bootstrap.servers=" + addr,
		"key.converter=org.apache.kafka.connect.storage.StringConverter",
		"value.converter=org.apache.kafka.connect.storage.StringConverter",
		"offset.storage.file.filename=" + filepath.Join(dir, "offsets"),
		"offset.flush.interval.ms=1000",
		"listeners=http://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)),
	}, "\n"))
	src := write("source.properties", "name=file-source\nconnector.class=org.apache.kafka.connect.file.FileStreamSourceConnector\ntasks.max=1\nfile="+in+"\ntopic=connect-lines\n")
	sink := write("sink.properties", "name=file-sink\nconnector.class=org.apache.kafka.connect.file.FileStreamSinkConnector\ntasks.max=1\nfile="+out+"\ntopics=connect-lines\n")
	ctx := ctxFor(t, 6*time.Minute)
	waitLines := func(p *testenv.Process, n int) {
		t.Helper()
		for {
			got, _ := os.ReadFile(out)
			if strings.Count(string(got), "\n") >= n {
				return
			}
			if exited, err := p.Exited(); exited {
				t.Fatalf("connect exited: %v\n%s", err, p.Output())
			}
			select {
			case <-ctx.Done():
				t.Fatalf("the sink wrote %d of %d lines\n%s", strings.Count(string(got), "\n"), n, p.Output())
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	p := cli.Start(t, testenv.ConnectStandaloneMain, worker, src, sink)
	waitLines(p, 30)
	p.Stop() // SIGTERM: the worker commits the sink group's offsets and the source's file offset
	f, err := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.Join(lines[30:], "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	p = cli.Start(t, testenv.ConnectStandaloneMain, worker, src, sink)
	waitLines(p, len(lines))
	// Once the sink group has committed past every record, a duplicate (a sink restarted
	// from an older offset) would already be in the file.
	adm := kadm.NewClient(kafkaClient(t, addr))
	for {
		offs, err := adm.FetchOffsets(ctx, "connect-file-sink")
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
		if err == nil && sum >= int64(len(lines)) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the sink group committed %d of %d records (%v)", sum, len(lines), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	p.Stop()
	if got, _ := os.ReadFile(out); string(got) != strings.Join(lines, "\n")+"\n" {
		t.Fatalf("sink file differs from the source file:\n%s", got)
	}
}
