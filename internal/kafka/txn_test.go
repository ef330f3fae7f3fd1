package kafka

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/txn"
)

// Kafka transactions on the real topic service and the broker's transaction coordinators
// (internal/txn), driven by franz-go's transactional client.

// localParticipants ends transactions on this process's topic service (the broker's
// participants also reach other brokers).
type localParticipants struct {
	svc  *topics.Service
	fail func(topic string) error // when set and not nil for topic: EndPartition fails so
}

func (p localParticipants) EndPartition(ctx context.Context, topic string, id txn.ID, a txn.Action, low uint64) error {
	if p.fail != nil {
		if err := p.fail(topic); err != nil {
			return err
		}
	}
	n, err := topics.ParseName(topic)
	if err != nil {
		return err
	}
	return p.svc.EndTxnOnPartition(ctx, n, id, a == txn.Commit, low)
}

func (p localParticipants) EndSubscription(ctx context.Context, sub txn.Subscription, id txn.ID, a txn.Action, low uint64) error {
	n, err := topics.ParseName(sub.Topic)
	if err != nil {
		return err
	}
	return p.svc.EndTxnOnSubscription(ctx, n, sub.Name, id, a == txn.Commit, low)
}

// startTxn starts the coordinators when the stack has transactions on.
func (st *topicsStack) startTxn(t *testing.T, svc *topics.Service, f *managedledger.Factory) *txn.Coordinators {
	t.Helper()
	if !st.txn.CoordinatorEnabled {
		return nil
	}
	cs, err := txn.StartCoordinators(txn.CoordinatorsOptions{Count: 2, Ledgers: f, Participants: localParticipants{svc, st.endFails}, Config: st.txn})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func newTxnStack(t *testing.T) *topicsStack {
	st := newTopicsStack(t)
	st.txn = config.DefaultTransactionConfig()
	st.txn.CoordinatorEnabled = true
	return st
}

// produceTxn writes values to topic in one transaction and commits or aborts it.
func produceTxn(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, commit bool, values ...string) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

// consumeAll reads topic from the start until want records came (or ctx ends) and returns
// the values in order.
func consumeAll(ctx context.Context, t *testing.T, addr, topic string, want int, opts ...kgo.Opt) []string {
	t.Helper()
	c := newKgo(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	defer c.Close()
	var got []string
	for len(got) < want {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records from %s: %v", len(got), want, topic, got)
		}
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				t.Fatalf("fetch: %v", e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

func TestKafkaTxnCommitAbortVisibility(t *testing.T) {
	st := newTxnStack(t)
	addr, _ := st.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newKgo(t, addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "tv"); err != nil {
		t.Fatal(err)
	}
	prod := newKgo(t, addr, kgo.TransactionalID("tx-vis"), kgo.TransactionTimeout(30*time.Second))
	produceTxn(ctx, t, prod, "tv", true, "c1", "c2")
	produceTxn(ctx, t, prod, "tv", false, "a1", "a2")
	produceTxn(ctx, t, prod, "tv", true, "c3")

	// One more transaction left open: read_committed stops before it, read_uncommitted
	// does not.
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "tv", Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	committed := consumeAll(ctx, t, addr, "tv", 3, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if fmt.Sprint(committed) != "[c1 c2 c3]" {
		t.Fatalf("read_committed read %v, want [c1 c2 c3]", committed)
	}
	all := consumeAll(ctx, t, addr, "tv", 6, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	if fmt.Sprint(all) != "[c1 c2 a1 a2 c3 open]" {
		t.Fatalf("read_uncommitted read %v, want [c1 c2 a1 a2 c3 open]", all)
	}
	// ListOffsets: the LSO is the open transaction's first offset (c1 c2 m a1 a2 m c3 m =
	// 8), the high watermark after it.
	lso, err := adm.ListCommittedOffsets(ctx, "tv")
	if err != nil {
		t.Fatal(err)
	}
	hw, err := adm.ListEndOffsets(ctx, "tv")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := lso.Lookup("tv", 0)
	h, _ := hw.Lookup("tv", 0)
	if l.Offset != 8 || h.Offset != 9 {
		t.Fatalf("LSO %d and high watermark %d, want 8 and 9", l.Offset, h.Offset)
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	committed = consumeAll(ctx, t, addr, "tv", 4, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if fmt.Sprint(committed) != "[c1 c2 c3 open]" {
		t.Fatalf("read_committed after the commit read %v", committed)
	}
}

func TestKafkaTxnFencing(t *testing.T) {
	st := newTxnStack(t)
	addr, _ := st.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newKgo(t, addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "tf"); err != nil {
		t.Fatal(err)
	}
	old := newKgo(t, addr, kgo.TransactionalID("tx-fence"))
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, &kgo.Record{Topic: "tf", Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A new producer with the same id: its InitProducerId bumps the epoch and aborts what
	// the old one left open.
	cur := newKgo(t, addr, kgo.TransactionalID("tx-fence"))
	produceTxn(ctx, t, cur, "tf", true, "fresh")

	// The zombie's next write to its partition is refused (its epoch is older).
	if err := old.ProduceSync(ctx, &kgo.Record{Topic: "tf", Value: []byte("zombie-2")}).FirstErr(); !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("the fenced producer's produce: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	// Its commit fails (franz-go does not even try after the failed produce).
	if err := old.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the fenced producer committed")
	}
	got := consumeAll(ctx, t, addr, "tf", 1, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if fmt.Sprint(got) != "[fresh]" {
		t.Fatalf("read_committed read %v, want [fresh]", got)
	}

	// Raw requests: a timeout above maxTransactionTimeoutMillis, and an old epoch naming
	// itself in InitProducerId (KIP-360) after it was fenced.
	raw := newKgo(t, addr)
	init := func(timeoutMs int32, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = kmsg.StringPtr("tx-fence"), timeoutMs, pid, epoch
		resp, err := req.RequestWith(ctx, raw)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := init(int32(4*time.Hour/time.Millisecond), -1, -1); resp.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("a 4 h timeout: error %d, want INVALID_TRANSACTION_TIMEOUT", resp.ErrorCode)
	}
	rec, _, err := st.res.KafkaTxnProducer(ctx, "tx-fence")
	if err != nil {
		t.Fatal(err)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "tx-fence", rec.ProducerID, rec.Epoch-1, true
	if resp, err := end.RequestWith(ctx, raw); err != nil || resp.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("EndTxn with the fenced epoch: %+v %v, want PRODUCER_FENCED", resp, err)
	}
	if resp := init(60000, rec.ProducerID, rec.Epoch-1); resp.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("InitProducerId with the fenced epoch: error %d, want PRODUCER_FENCED", resp.ErrorCode)
	}
	if resp := init(60000, rec.ProducerID, rec.Epoch); resp.ErrorCode != 0 || resp.ProducerID != rec.ProducerID || resp.ProducerEpoch != rec.Epoch+1 {
		t.Fatalf("InitProducerId with the current epoch: %+v, want epoch %d", resp, rec.Epoch+1)
	}
}

// TestKafkaTxnConsumeTransformProduce runs franz-go's GroupTransactSession: each round
// reads from "in" in group "ctp", writes to "out" and commits the group's offsets in the
// same transaction (TxnOffsetCommit). One round is aborted: its output never shows and
// its input is read again. The output then holds every input exactly once and the group's
// offset is at the end of the input.
func TestKafkaTxnConsumeTransformProduce(t *testing.T) {
	st := newTxnStack(t)
	addr, _ := st.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newKgo(t, addr))
	for _, tp := range []string{"in", "out"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, tp); err != nil {
			t.Fatal(err)
		}
	}
	const n = 30
	src := newKgo(t, addr, kgo.DefaultProduceTopic("in"))
	for i := 0; i < n; i++ {
		if err := src.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("m%02d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(addr), kgo.TransactionalID("tx-ctp"),
		kgo.ConsumerGroup("ctp"), kgo.ConsumeTopics("in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic("out"),
		kgo.RetryTimeout(30*time.Second), kgo.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	consumed, aborted := 0, false
	for consumed < n {
		fs := sess.PollRecords(ctx, 7)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", consumed, n)
		}
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := sess.ProduceSync(ctx, &kgo.Record{Value: append([]byte("out-"), r.Value...)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		commit := kgo.TryCommit
		if !aborted && consumed > 0 {
			commit, aborted = kgo.TryAbort, true // the session rewinds to the last commit
		}
		committed, err := sess.End(ctx, commit)
		if err != nil {
			t.Fatal(err)
		}
		if committed {
			consumed += len(recs)
		}
	}
	if !aborted {
		t.Fatal("no round was aborted")
	}
	got := consumeAll(ctx, t, addr, "out", n, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for i := 0; i < n; i++ {
		if v := fmt.Sprintf("out-m%02d", i); seen[v] != 1 {
			t.Fatalf("%s is in the output %d times: %v", v, seen[v], got)
		}
	}
	offs, err := adm.FetchOffsets(ctx, "ctp")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("in", 0); !ok || o.At != n {
		t.Fatalf("the group's offset on in: %+v, want %d", o, n)
	}
}

// TestKafkaTxnAcrossRestart: committed transactions survive a restart of the service; a
// transaction open when it stopped is aborted when the producer comes back (its
// InitProducerId), and the transactional id keeps its producer id with a newer epoch.
func TestKafkaTxnAcrossRestart(t *testing.T) {
	st := newTxnStack(t)
	addr, stop := st.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newKgo(t, addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "tr"); err != nil {
		t.Fatal(err)
	}
	prod := newKgo(t, addr, kgo.TransactionalID("tx-restart"))
	produceTxn(ctx, t, prod, "tr", true, "before")
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "tr", Value: []byte("in-flight")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	rec1, _, err := st.res.KafkaTxnProducer(ctx, "tx-restart")
	if err != nil || !rec1.TxnOpen {
		t.Fatalf("record before the restart %+v %v", rec1, err)
	}
	prod.Close()
	stop()

	addr, _ = st.start(t)
	prod = newKgo(t, addr, kgo.TransactionalID("tx-restart"))
	produceTxn(ctx, t, prod, "tr", true, "after")
	got := consumeAll(ctx, t, addr, "tr", 2, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if fmt.Sprint(got) != "[before after]" {
		t.Fatalf("read_committed after the restart read %v, want [before after]", got)
	}
	rec2, _, err := st.res.KafkaTxnProducer(ctx, "tx-restart")
	if err != nil || rec2.ProducerID != rec1.ProducerID || rec2.Epoch <= rec1.Epoch || rec2.TxnOpen {
		t.Fatalf("record after the restart %+v (before %+v) %v", rec2, rec1, err)
	}
}

// TestKafkaTxnTimeoutAborts: a transaction left open past its transaction.timeout.ms is
// aborted by the coordinator: its records never reach read_committed consumers and the
// producer's commit fails.
func TestKafkaTxnTimeoutAborts(t *testing.T) {
	st := newTxnStack(t)
	addr, _ := st.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newKgo(t, addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "tt"); err != nil {
		t.Fatal(err)
	}
	prod := newKgo(t, addr, kgo.TransactionalID("tx-timeout"), kgo.TransactionTimeout(time.Second))
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "tt", Value: []byte("late")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The abort's marker moves the LSO to the high watermark.
	for {
		lso, err := adm.ListCommittedOffsets(ctx, "tt")
		if err != nil {
			t.Fatal(err)
		}
		hw, err := adm.ListEndOffsets(ctx, "tt")
		if err != nil {
			t.Fatal(err)
		}
		l, _ := lso.Lookup("tt", 0)
		h, _ := hw.Lookup("tt", 0)
		if l.Offset == 2 && h.Offset == 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the transaction was not aborted by its timeout: LSO %d, high watermark %d", l.Offset, h.Offset)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the commit of a timed-out transaction: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	// The producer carries on after its abort (KIP-360: InitProducerId with its epoch).
	if err := prod.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("abort after the failed commit: %v", err)
	}
	produceTxn(ctx, t, prod, "tt", true, "next")
	got := consumeAll(ctx, t, addr, "tt", 1, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if fmt.Sprint(got) != "[next]" {
		t.Fatalf("read_committed read %v, want [next]", got)
	}
}

// The batches a fetch makes up for markers and aborted entries are valid record batches
// as Kafka's decoder (kmsg) reads them: CRC, offsets, the control record's key.
func TestTxnBatchEncodings(t *testing.T) {
	marker := pulsarEntry(t, "", []byte("x"), nil, 1234)
	var buf []byte
	buf = appendControlBatch(buf, Entry{Base: 7, Count: 1, Data: marker, Kind: EntryCommitMarker}, true, nil)
	buf = appendEmptyBatch(buf, 8, 3)
	var got []kmsg.RecordBatch
	for len(buf) > 0 {
		var b kmsg.RecordBatch
		if err := b.ReadFrom(buf); err != nil {
			t.Fatal(err)
		}
		n := 12 + int(b.Length)
		if crc32c32(buf[21:n]) != uint32(b.CRC) {
			t.Fatalf("batch at %d: bad CRC", b.FirstOffset)
		}
		got = append(got, b)
		buf = buf[n:]
	}
	if len(got) != 2 {
		t.Fatalf("%d batches", len(got))
	}
	c, e := got[0], got[1]
	if c.FirstOffset != 7 || c.LastOffsetDelta != 0 || c.NumRecords != 1 || c.Attributes&0x30 != 0x30 {
		t.Fatalf("control batch %+v", c)
	}
	var rec kmsg.Record
	if err := rec.ReadFrom(c.Records); err != nil || fmt.Sprint(rec.Key) != "[0 0 0 1]" || len(rec.Value) != 6 {
		t.Fatalf("control record %+v %v", rec, err)
	}
	if e.FirstOffset != 8 || e.LastOffsetDelta != 2 || e.NumRecords != 0 || len(e.Records) != 0 {
		t.Fatalf("empty batch %+v", e)
	}
}

// TestKafkaTxnIDOwnedByItsPrincipal: with authorization on, a transactional id belongs to
// the principal that created it; another may not init it (which would fence the owner),
// a superuser may.
func TestKafkaTxnIDOwnedByItsPrincipal(t *testing.T) {
	st := newTxnStack(t)
	grants := []string{auth.ActionProduce, auth.ActionConsume}
	var token func(string) string
	st.authn, st.authz, token = newTestSecurity(t, map[string][]string{"alice": grants, "bob": grants})
	addr, _ := st.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	as := func(role string, opts ...kgo.Opt) *kgo.Client {
		return newKgo(t, addr, append([]kgo.Opt{kgo.SASL(plain.Auth{User: role, Pass: "token:" + token(role)}.AsMechanism())}, opts...)...)
	}
	if _, err := kadm.NewClient(as("admin")).CreateTopic(ctx, 1, 1, nil, "owned"); err != nil {
		t.Fatal(err)
	}
	produceTxn(ctx, t, as("alice", kgo.TransactionalID("alice-tx")), "owned", true, "alice-1")
	rec, _, err := st.res.KafkaTxnProducer(ctx, "alice-tx")
	if err != nil || rec.Owner != "alice" {
		t.Fatalf("record %+v %v, want owner alice", rec, err)
	}
	init := func(cl *kgo.Client) int16 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("alice-tx"), 60000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	if code := init(as("bob")); code != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("bob's InitProducerId on alice's id: error %d, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", code)
	}
	if code := init(as("admin")); code != 0 {
		t.Fatalf("the superuser's InitProducerId on alice's id: error %d", code)
	}
	produceTxn(ctx, t, as("alice", kgo.TransactionalID("alice-tx")), "owned", true, "alice-2")
	got := consumeAll(ctx, t, addr, "owned", 2, kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SASL(plain.Auth{User: "alice", Pass: "token:" + token("alice")}.AsMechanism()))
	if fmt.Sprint(got) != "[alice-1 alice-2]" {
		t.Fatalf("read %v", got)
	}
}

// Control batches name the producer whose transaction the marker ends (its id and epoch,
// as Kafka writes them), also once the partition is opened again after a restart.
func TestKafkaControlBatchesNameTheirProducer(t *testing.T) {
	st := newTxnStack(t)
	addr, stop := st.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(newKgo(t, addr)).CreateTopic(ctx, 1, 1, nil, "tctl"); err != nil {
		t.Fatal(err)
	}
	prod := newKgo(t, addr, kgo.TransactionalID("tx-ctl"))
	produceTxn(ctx, t, prod, "tctl", true, "c1")
	produceTxn(ctx, t, prod, "tctl", false, "a1")
	pid, epoch, err := prod.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prod.Close()
	// controls fetches the partition from offset 0 (read_uncommitted) and returns its
	// control batches.
	controls := func(addr string) []kmsg.RecordBatch {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = 12, 100, 1<<20, -1
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		req.Topics = []kmsg.FetchRequestTopic{{Topic: "tctl", Partitions: []kmsg.FetchRequestTopicPartition{rp}}}
		resp, err := req.RequestWith(ctx, newKgo(t, addr))
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("fetch: error %d", p.ErrorCode)
		}
		var out []kmsg.RecordBatch
		for buf := p.RecordBatches; len(buf) > 0; {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(buf); err != nil {
				t.Fatal(err)
			}
			if b.Attributes&0x20 != 0 {
				out = append(out, b)
			}
			buf = buf[12+int(b.Length):]
		}
		return out
	}
	check := func(when string, bs []kmsg.RecordBatch) {
		t.Helper()
		if len(bs) != 2 {
			t.Fatalf("%s: %d control batches, want 2", when, len(bs))
		}
		for _, b := range bs {
			if b.ProducerID != pid || b.ProducerEpoch != epoch {
				t.Errorf("%s: control batch at %d names producer %d epoch %d, want %d epoch %d", when, b.FirstOffset, b.ProducerID, b.ProducerEpoch, pid, epoch)
			}
		}
	}
	check("live", controls(addr))
	stop()
	addr, _ = st.start(t)
	check("after a restart", controls(addr))
}
