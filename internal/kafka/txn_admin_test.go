package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// The transaction admin APIs (txn_admin.go) through kadm, on the topic service and the
// broker's coordinators: what they show follows a transactional id through commit, an
// open transaction, and its abort by WriteTxnMarkers.
func TestKafkaTxnAdminAPIs(t *testing.T) {
	st := newTxnStack(t)
	addr, _ := st.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := newKgo(t, addr)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "tadm"); err != nil {
		t.Fatal(err)
	}
	prod := newKgo(t, addr, kgo.TransactionalID("tx-adm"), kgo.TransactionTimeout(40*time.Second))
	produceTxn(ctx, t, prod, "tadm", true, "c1")
	pid, epoch, err := prod.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	list := func(states ...string) kadm.ListedTransactions {
		t.Helper()
		l, err := adm.ListTransactions(ctx, nil, states)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := list(); l["tx-adm"].State != stateCompleteCommit || l["tx-adm"].ProducerID != pid {
		t.Fatalf("listed after a commit: %+v, want CompleteCommit of producer %d", l, pid)
	}

	// A transaction left open: Ongoing, its partition, and the first offset it holds
	// (c1 and its marker take offsets 0 and 1).
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "tadm", Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if l := list(stateOngoing); len(l) != 1 || l["tx-adm"].State != stateOngoing {
		t.Fatalf("listed Ongoing: %+v", l)
	}
	if l := list(stateCompleteCommit); len(l) != 0 {
		t.Fatalf("listed CompleteCommit while one is open: %+v", l)
	}
	ds, err := adm.DescribeTransactions(ctx, "tx-adm", "no-such-id")
	if err != nil {
		t.Fatal(err)
	}
	d := ds["tx-adm"]
	if d.Err != nil || d.State != stateOngoing || d.ProducerID != pid || d.ProducerEpoch != epoch || d.TimeoutMillis != 40000 ||
		d.StartTimestamp <= 0 || fmt.Sprint(d.Topics.Sorted()) != fmt.Sprint(kadm.TopicsSet{"tadm": {0: {}}}.Sorted()) {
		t.Fatalf("described %+v (producer %d epoch %d)", d, pid, epoch)
	}
	if e := ds["no-such-id"].Err; !errors.Is(e, kerr.TransactionalIDNotFound) {
		t.Fatalf("an unknown id described with %v, want TRANSACTIONAL_ID_NOT_FOUND", e)
	}
	producer := func() kadm.DescribedProducer {
		t.Helper()
		dp, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"tadm": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		ps := dp.SortedProducers()
		if len(ps) != 1 || ps[0].ProducerID != pid {
			t.Fatalf("producers of tadm/0: %+v, want producer %d alone", ps, pid)
		}
		return ps[0]
	}
	if p := producer(); p.CurrentTxnStartOffset != 2 || p.ProducerEpoch != epoch || p.LastSequence != 1 || p.LastTimestamp <= 0 {
		t.Fatalf("producer with an open transaction: %+v, want its start at offset 2, last sequence 1", p)
	}

	// The raw request: an unknown state filter is reported, the id pattern (v2) must match
	// the whole id, a bad pattern is INVALID_REGULAR_EXPRESSION.
	rawList := func(pattern string, states ...string) *kmsg.ListTransactionsResponse {
		t.Helper()
		req := kmsg.NewPtrListTransactionsRequest()
		req.StateFilters, req.TransactionalIDPattern = states, &pattern
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := rawList("tx-a.*", "Ongoing", "Bogus"); len(r.TransactionStates) != 1 || fmt.Sprint(r.UnknownStateFilters) != "[Bogus]" {
		t.Fatalf("pattern tx-a.*: %+v", r)
	}
	if r := rawList("tx-a"); len(r.TransactionStates) != 0 {
		t.Fatalf("pattern tx-a matched a longer id: %+v", r)
	}
	if r := rawList("("); r.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Fatalf("pattern '(': error %d", r.ErrorCode)
	}

	// A commit marker is refused; the abort ends the transaction (its coordinator is
	// here, so all of it): nothing open on the partition, the last stable offset reaches
	// the high watermark, read_committed never sees "open", the producer cannot commit it.
	marker := kadm.TxnMarkers{ProducerID: pid, ProducerEpoch: epoch, Commit: true, Topics: kadm.TopicsSet{"tadm": {0: {}}}}
	writeMarker := func(m kadm.TxnMarkers) error {
		t.Helper()
		rs, err := adm.WriteTxnMarkers(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		var perr error
		rs.EachPartition(func(p kadm.TxnMarkersPartitionResponse) { perr = p.Err })
		return perr
	}
	if err := writeMarker(marker); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("commit marker: %v, want INVALID_TXN_STATE", err)
	}
	marker.Commit = false
	if err := writeMarker(marker); err != nil {
		t.Fatalf("abort marker: %v", err)
	}
	if p := producer(); p.CurrentTxnStartOffset != -1 {
		t.Fatalf("producer after the abort: %+v, want no open transaction", p)
	}
	if err := writeMarker(marker); err != nil {
		t.Fatalf("abort marker again (nothing open): %v", err)
	}
	lso, err := adm.ListCommittedOffsets(ctx, "tadm")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := lso.Lookup("tadm", 0); o.Offset != 4 {
		t.Fatalf("last stable offset after the abort %+v, want 4 (c1, marker, open, abort marker)", o)
	}
	if l := list(); l["tx-adm"].State != stateCompleteAbort {
		t.Fatalf("listed after the abort: %+v", l)
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the producer committed a transaction WriteTxnMarkers aborted")
	}
	if got := consumeAll(ctx, t, addr, "tadm", 1, kgo.FetchIsolationLevel(kgo.ReadCommitted())); fmt.Sprint(got) != "[c1]" {
		t.Fatalf("read_committed read %v", got)
	}
}

// The producer state DescribeProducers shows is rebuilt from the log when a partition
// opens again (after a restart of the service): the open transaction's start included.
func TestKafkaDescribeProducersAcrossRestart(t *testing.T) {
	st := newTxnStack(t)
	addr, stop := st.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(newKgo(t, addr)).CreateTopic(ctx, 1, 1, nil, "tprs"); err != nil {
		t.Fatal(err)
	}
	prod := newKgo(t, addr, kgo.TransactionalID("tx-prs"), kgo.TransactionTimeout(5*time.Minute))
	produceTxn(ctx, t, prod, "tprs", true, "c1", "c2")
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "tprs", Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pid, _, _ := prod.ProducerID(ctx)
	describe := func(addr string) kadm.DescribedProducer {
		t.Helper()
		dp, err := kadm.NewClient(newKgo(t, addr)).DescribeProducers(ctx, kadm.TopicsSet{"tprs": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		ps := dp.SortedProducers()
		if len(ps) != 1 {
			t.Fatalf("producers %+v", ps)
		}
		return ps[0]
	}
	before := describe(addr)
	if before.ProducerID != pid || before.CurrentTxnStartOffset != 3 || before.LastSequence != 2 {
		t.Fatalf("before the restart: %+v, want producer %d, open transaction at 3, last sequence 2", before, pid)
	}
	prod.Close()
	stop()
	addr, _ = st.start(t)
	after := describe(addr)
	if after.ProducerID != before.ProducerID || after.ProducerEpoch != before.ProducerEpoch || after.LastSequence != before.LastSequence ||
		after.CurrentTxnStartOffset != 3 || after.LastTimestamp != before.LastTimestamp {
		t.Fatalf("after the restart %+v, before %+v", after, before)
	}
}

// Under authorization: the admin APIs check Kafka's operations as the other requests map
// them (DESCRIBE on a transactional id = its owner or a superuser, READ on a topic =
// consume, CLUSTER_ACTION = superuser).
func TestKafkaTxnAdminAuthorization(t *testing.T) {
	st := newTxnStack(t)
	var token func(string) string
	st.authn, st.authz, token = newTestSecurity(t, map[string][]string{
		"alice": {auth.ActionProduce, auth.ActionConsume}, "bob": {auth.ActionProduce, auth.ActionConsume}, "carol": {auth.ActionProduce}})
	addr, _ := st.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	as := func(role string, opts ...kgo.Opt) *kgo.Client {
		return newKgo(t, addr, append([]kgo.Opt{kgo.SASL(plain.Auth{User: role, Pass: "token:" + token(role)}.AsMechanism())}, opts...)...)
	}
	if _, err := kadm.NewClient(as("admin")).CreateTopic(ctx, 1, 1, nil, "tauth"); err != nil {
		t.Fatal(err)
	}
	prod := as("alice", kgo.TransactionalID("alice-adm"))
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "tauth", Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pid, epoch, _ := prod.ProducerID(ctx)

	for role, want := range map[string]bool{"alice": true, "admin": true, "bob": false} {
		adm := kadm.NewClient(as(role))
		l, err := adm.ListTransactions(ctx, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, listed := l["alice-adm"]; listed != want {
			t.Errorf("%s lists alice's id: %v, want %v", role, listed, want)
		}
		ds, e := adm.DescribeTransactions(ctx, "alice-adm")
		if e == nil {
			e = ds["alice-adm"].Err
		}
		if want && e != nil || !want && !errors.Is(e, kerr.TransactionalIDAuthorizationFailed) {
			t.Errorf("%s describes alice's id: %v", role, e)
		}
	}
	for role, want := range map[string]*kerr.Error{"bob": nil, "carol": kerr.TopicAuthorizationFailed} {
		dp, perr := kadm.NewClient(as(role)).DescribeProducers(ctx, kadm.TopicsSet{"tauth": {0: {}}})
		if perr == nil {
			// kadm reports a partition's error either way: at the top or per partition.
			dp.EachPartition(func(p kadm.DescribedProducersPartition) { perr = p.Err })
		}
		if want == nil && perr != nil || want != nil && !errors.Is(perr, want) {
			t.Errorf("%s describes producers: %v, want %v", role, perr, want)
		}
	}
	marker := kadm.TxnMarkers{ProducerID: pid, ProducerEpoch: epoch, Topics: kadm.TopicsSet{"tauth": {0: {}}}}
	for role, want := range map[string]*kerr.Error{"alice": kerr.ClusterAuthorizationFailed, "admin": nil} {
		rs, perr := kadm.NewClient(as(role)).WriteTxnMarkers(ctx, marker)
		if perr == nil {
			rs.EachPartition(func(p kadm.TxnMarkersPartitionResponse) { perr = p.Err })
		}
		if want == nil && perr != nil || want != nil && !errors.Is(perr, want) {
			t.Errorf("%s writes an abort marker: %v, want %v", role, perr, want)
		}
	}
}

// A hanging transaction: the coordinator gave up ending it on a partition (the
// participant refused for good), so the partition holds it open while no coordinator
// knows it. DescribeProducers shows it, ListTransactions no longer has it Ongoing, and
// WriteTxnMarkers aborts it on that partition: the last stable offset moves on.
func TestKafkaTxnAdminAbortsHangingTransaction(t *testing.T) {
	st := newTxnStack(t)
	var refuse atomic.Bool
	st.endFails = func(topic string) error {
		if refuse.Load() && strings.Contains(topic, "/thang") {
			return fmt.Errorf("%w: refused by the test", wire.ErrProducerFenced)
		}
		return nil
	}
	addr, _ := st.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newKgo(t, addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "thang"); err != nil {
		t.Fatal(err)
	}
	prod := newKgo(t, addr, kgo.TransactionalID("tx-hang"))
	produceTxn(ctx, t, prod, "thang", true, "c1")
	pid, epoch, _ := prod.ProducerID(ctx)
	refuse.Store(true)
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "thang", Value: []byte("hung")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The abort is decided and the coordinator forgets the transaction, but the
	// partition never got its marker.
	_ = prod.EndTransaction(ctx, kgo.TryAbort)
	refuse.Store(false)
	stable := func() int64 {
		t.Helper()
		lso, err := adm.ListCommittedOffsets(ctx, "thang")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := lso.Lookup("thang", 0)
		return o.Offset
	}
	if o := stable(); o != 2 {
		t.Fatalf("last stable offset %d with the transaction hanging, want 2", o)
	}
	dp, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"thang": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	ps := dp.SortedProducers()
	if len(ps) != 1 || ps[0].CurrentTxnStartOffset != 2 {
		t.Fatalf("producers of the hanging partition: %+v", ps)
	}
	if l, err := adm.ListTransactions(ctx, nil, []string{stateOngoing}); err != nil || len(l) != 0 {
		t.Fatalf("Ongoing transactions: %v %v, want none (the coordinator forgot it)", l, err)
	}
	rs, err := adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{ProducerID: pid, ProducerEpoch: epoch, Topics: kadm.TopicsSet{"thang": {0: {}}}})
	if err != nil {
		t.Fatal(err)
	}
	rs.EachPartition(func(p kadm.TxnMarkersPartitionResponse) {
		if p.Err != nil {
			t.Fatalf("abort of the hanging transaction: %v", p.Err)
		}
	})
	if o := stable(); o != 4 {
		t.Fatalf("last stable offset %d after the abort, want 4 (c1, marker, hung, abort marker)", o)
	}
	if got := consumeAll(ctx, t, addr, "thang", 1, kgo.FetchIsolationLevel(kgo.ReadCommitted())); fmt.Sprint(got) != "[c1]" {
		t.Fatalf("read_committed read %v", got)
	}
}
