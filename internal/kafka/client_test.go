package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// These tests run franz-go's client against the server on the in-memory backend: they
// check the protocol layer (framing, versions, records conversion, groups, sessions). The
// same scenarios against the real broker are in tests/e2e.

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestProduceConsumeEveryCodec(t *testing.T) {
	_, _, addr := startMem(t)
	ctx := testCtx(t)
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "codec-" + name
			prod := newClient(t, addr, kgo.ProducerBatchCompression(codec), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
			const n = 200
			var want []string
			for i := 0; i < n; i++ {
				v := fmt.Sprintf("value-%d-%s", i, name)
				want = append(want, v)
				r := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i%7)), Value: []byte(v),
					Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(name)}}}
				prod.Produce(ctx, r, func(r *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce: %v", err)
					}
				})
			}
			if err := prod.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			cons := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			var got []string
			var offsets []int64
			for len(got) < n {
				fs := cons.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					t.Fatal(err)
				}
				fs.EachRecord(func(r *kgo.Record) {
					got = append(got, string(r.Value))
					offsets = append(offsets, r.Offset)
					if len(r.Headers) != 1 || r.Headers[0].Key != "h" || string(r.Headers[0].Value) != name {
						t.Errorf("headers %v", r.Headers)
					}
				})
			}
			if !slices.Equal(got, want) {
				t.Fatalf("consumed %d records, not the %d produced in order", len(got), len(want))
			}
			for i, off := range offsets {
				if off != int64(i) {
					t.Fatalf("record %d has offset %d: offsets must be contiguous from 0", i, off)
				}
			}
		})
	}
}

func TestTombstonesAndNullKeys(t *testing.T) {
	_, _, addr := startMem(t)
	ctx := testCtx(t)
	cl := newClient(t, addr, kgo.AllowAutoTopicCreation())
	recs := []*kgo.Record{
		{Topic: "tomb", Key: []byte("k"), Value: nil},
		{Topic: "tomb", Key: nil, Value: []byte("v")},
		{Topic: "tomb", Key: []byte{0xff, 0x00, 0xfe}, Value: []byte{}},
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cons := newClient(t, addr, kgo.ConsumeTopics("tomb"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []*kgo.Record
	for len(got) < 3 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got = append(got, fs.Records()...)
	}
	if got[0].Value != nil || string(got[0].Key) != "k" {
		t.Errorf("tombstone came back as key %q value %v", got[0].Key, got[0].Value)
	}
	if got[1].Key != nil || string(got[1].Value) != "v" {
		t.Errorf("null key came back as %v", got[1].Key)
	}
	if string(got[2].Key) != "\xff\x00\xfe" || got[2].Value == nil || len(got[2].Value) != 0 {
		t.Errorf("binary key / empty value came back as %q / %v", got[2].Key, got[2].Value)
	}
}

func TestPulsarEntriesReadAsKafkaRecords(t *testing.T) {
	s, be, addr := startMem(t)
	ctx := testCtx(t)
	full := "persistent://public/default/from-pulsar"
	if err := be.CreateTopic(ctx, full, 0, nil); err != nil {
		t.Fatal(err)
	}
	l, _ := be.Open(ctx, full)
	l.Append(pulsarEntry(t, "key-1", []byte("hello"), map[string]string{"a": "b"}, 1234), 1, nil, func(int64, error) {})
	_ = s
	cons := newClient(t, addr, kgo.ConsumeTopics("from-pulsar"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := cons.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	recs := fs.Records()
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if string(r.Key) != "key-1" || string(r.Value) != "hello" || r.Timestamp.UnixMilli() != 1234 ||
		len(r.Headers) != 1 || r.Headers[0].Key != "a" || string(r.Headers[0].Value) != "b" {
		t.Fatalf("record %+v", r)
	}
}

func TestConsumerGroupRebalanceAndCommit(t *testing.T) {
	_, _, addr := startMem(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, addr))
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, "grp"); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, addr, kgo.DefaultProduceTopic("grp"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	const n = 400
	for i := 0; i < n; i++ {
		prod.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	seen := map[string]int{}
	consume := func(stop <-chan struct{}) *kgo.Client {
		cl := newClient(t, addr, kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("grp"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6*time.Second),
			kgo.HeartbeatInterval(200*time.Millisecond), kgo.DisableAutoCommit())
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				fs := cl.PollRecords(ctx, 50)
				if fs.IsClientClosed() || ctx.Err() != nil {
					return
				}
				mu.Lock()
				fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
				mu.Unlock()
				_ = cl.CommitUncommittedOffsets(ctx)
			}
		}()
		return cl
	}
	stop := make(chan struct{})
	a := consume(stop)
	b := consume(stop)
	// Wait until both are members of one generation with all 4 partitions assigned.
	waitFor(t, "two members sharing 4 partitions", func() bool {
		gs, err := adm.DescribeGroups(ctx, "g1")
		if err != nil {
			return false
		}
		g := gs["g1"]
		return g.State == "Stable" && len(g.Members) == 2
	})
	waitFor(t, "every record consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n
	})
	// Member a leaves; b must end up with all partitions.
	a.Close()
	waitFor(t, "one member left", func() bool {
		gs, err := adm.DescribeGroups(ctx, "g1")
		return err == nil && gs["g1"].State == "Stable" && len(gs["g1"].Members) == 1
	})
	for i := n; i < n+100; i++ {
		prod.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "records after the rebalance consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n+100
	})
	waitFor(t, "committed offsets cover everything", func() bool {
		_ = b.CommitUncommittedOffsets(ctx)
		offs, err := adm.FetchOffsets(ctx, "g1")
		if err != nil {
			return false
		}
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
		return sum == n+100
	})
	close(stop)
	b.Close()
	// With no members left the group is Empty and its offsets remain; lag is zero.
	lag, err := adm.Lag(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if l := lag["g1"]; l.Error() != nil || l.Lag.Total() != 0 {
		t.Fatalf("lag %+v err %v", l.Lag.Total(), l.Error())
	}
	// DeleteGroups removes an empty group and its offsets.
	if _, err := adm.DeleteGroup(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	offs, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if len(offs.KOffsets()) != 0 {
		t.Fatalf("offsets survived DeleteGroups: %v", offs.KOffsets())
	}
}

func TestAdminTopicsConfigsAndRecords(t *testing.T) {
	_, _, addr := startMem(t)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, addr))
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": kadm.StringPtr("60000")}, "adm"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "adm"); !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"no.such.config": kadm.StringPtr("1")}, "bad-cfg"); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("unknown config: %v", err)
	}
	if _, err := adm.CreatePartitions(ctx, 3, "adm"); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, "adm")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(md.Topics["adm"].Partitions); n != 5 {
		t.Fatalf("%d partitions after adding 3 to 2", n)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "adm")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := rc.On("adm", nil); err != nil || !slices.ContainsFunc(v.Configs, func(c kadm.Config) bool {
		return c.Key == "retention.ms" && c.MaybeValue() == "60000"
	}) {
		t.Fatalf("configs %+v %v", v, err)
	}
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.bytes", Value: kadm.StringPtr("1024")}}, "adm"); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, addr, kgo.DefaultProduceTopic("adm"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 10; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "adm", Partition: 0, At: 4})
	dr, err := adm.DeleteRecords(ctx, os)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := dr.Lookup("adm", 0); r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("delete records %+v", r)
	}
	starts, err := adm.ListStartOffsets(ctx, "adm")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("adm", 0); o.Offset != 4 {
		t.Fatalf("start offset %d after DeleteRecords to 4", o.Offset)
	}
	ends, _ := adm.ListEndOffsets(ctx, "adm")
	if o, _ := ends.Lookup("adm", 0); o.Offset != 10 {
		t.Fatalf("end offset %d after 10 records", o.Offset)
	}
	if _, err := adm.DeleteTopics(ctx, "adm"); err != nil {
		t.Fatal(err)
	}
	md, _ = adm.Metadata(ctx)
	if _, ok := md.Topics["adm"]; ok {
		t.Fatal("deleted topic still listed")
	}
}

func TestIdempotentProducerDuplicatesAndGaps(t *testing.T) {
	s, be, addr := startMem(t)
	ctx := testCtx(t)
	_ = be
	cl := newClient(t, addr, kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "idem", Value: []byte("a")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p, _, err := s.openPartition(ctx, "idem", 0)
	if err != nil {
		t.Fatal(err)
	}
	// kgo is idempotent by default: exactly one producer id is tracked.
	p.mu.Lock()
	var pid int64 = -1
	var epoch int16
	for id, st := range p.producers {
		pid, epoch = id, st.epoch
	}
	p.mu.Unlock()
	if pid < 0 {
		t.Fatal("no idempotent producer state after a produce")
	}
	// A retried batch (same sequence) gets the original offset and is not stored twice;
	// a gap is refused.
	batch := producedBatch{producerID: pid, producerEpoch: epoch, baseSequence: 1, records: []record{{value: []byte("b")}}}
	entry, err := toPulsarEntry(&batch, entryOptions{producerName: idemProducerName(pid, epoch), publishTime: 1})
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan [2]any, 3)
	cb := func(base int64, err error) { results <- [2]any{base, err} }
	p.append(&batch, entry, 0, nil, cb)
	p.append(&batch, entry, 0, nil, cb)
	gap := batch
	gap.baseSequence = 5
	p.append(&gap, entry, 0, nil, cb)
	first, second, third := <-results, <-results, <-results
	if first[1] != nil || second[1] != nil || first[0] != second[0] {
		t.Fatalf("original %v, retry %v: the retry must get the original's offset", first, second)
	}
	if !errors.Is(third[1].(error), ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", third)
	}
	if hw := p.log.HighWatermark(); hw != 2 {
		t.Fatalf("high watermark %d: the duplicate was stored", hw)
	}
	// A new partition object rebuilds the state from the log, so a retry after a broker
	// restart is still recognised.
	s.dropPartition(p)
	p2, _, err := s.openPartition(ctx, "idem", 0)
	if err != nil {
		t.Fatal(err)
	}
	p2.append(&batch, entry, 0, nil, cb)
	if r := <-results; r[1] != nil || r[0] != first[0] {
		t.Fatalf("retry after reopen: %v", r)
	}
	older := batch
	older.producerEpoch = epoch - 1
	if epoch > 0 {
		p2.append(&older, entry, 0, nil, cb)
		if r := <-results; !errors.Is(r[1].(error), ErrProducerFenced) {
			t.Fatalf("older epoch: %v", r)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
