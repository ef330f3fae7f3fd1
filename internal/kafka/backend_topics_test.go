package kafka

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger/memledger"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// The Kafka front end on the real topic service and managed ledger (over the in-memory
// metadata store and ledger twin; the end-to-end tests in tests/e2e run it in a real
// standalone). These cover what those do not: a fetch from inside an entry, commit
// metadata, DeleteRecords, topic configs, and state across a restart of the service.

type topicsStack struct {
	store *memstore.Store
	led   *memledger.Client
	res   *resources.Resources
	// txn turns on transactions (transactionCoordinatorEnabled) with the broker's
	// coordinators (txn_test.go).
	txn config.TransactionConfig
	// authn and authz, when set, secure the listener (SASL and authorization).
	authn *auth.Service
	authz *auth.Authorizer
	// endFails, when set, makes the coordinators' end of a transaction on a topic fail
	// with its error (txn_admin_test.go: a transaction left hanging).
	endFails func(topic string) error
}

func newTopicsStack(t *testing.T) *topicsStack {
	t.Helper()
	store := memstore.New(memstore.DefaultOptions())
	res := resources.New(store)
	if err := res.EnsureDefaults(context.Background(), "standalone"); err != nil {
		t.Fatal(err)
	}
	return &topicsStack{store: store, led: memledger.New(), res: res}
}

// start runs topic service + Kafka server on the stack and returns the Kafka address and a
// stop function (also run at the test's end).
func (st *topicsStack) start(t *testing.T) (string, func()) {
	t.Helper()
	mlCfg := config.DefaultManagedLedgerConfig()
	mlCfg.EnsembleSize, mlCfg.WriteQuorum, mlCfg.AckQuorum = 1, 1, 1
	f, err := managedledger.NewFactory(managedledger.FactoryOptions{Ledger: st.led, Store: st.store, Config: mlCfg})
	if err != nil {
		t.Fatal(err)
	}
	bcfg := config.DefaultBrokerConfig()
	if st.txn.CoordinatorEnabled {
		bcfg.Transaction = st.txn
	}
	svc, err := topics.New(topics.Options{Config: bcfg, Store: st.store, Ledgers: f})
	if err != nil {
		t.Fatal(err)
	}
	txns := st.startTxn(t, svc, f)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	be, err := NewTopicsBackend(TopicsBackendOptions{Topics: svc, Resources: st.res, Advertised: l.Addr().String(), Tenant: "public", Namespace: "default", Transactions: txns})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.DefaultKafkaConfig()
	cfg.Listeners = "PLAINTEXT://" + l.Addr().String()
	cfg.GroupInitialRebalanceDelayMs = 0
	s, err := New(Options{Config: cfg, Backend: be, NodeID: be.NodeID(), ClusterID: "test", Auth: st.authn, Authorizer: st.authz})
	if err != nil {
		t.Fatal(err)
	}
	s.Serve(l)
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = s.Close()
		if txns != nil {
			_ = txns.Close(ctx)
		}
		_ = svc.Close(ctx)
		_ = f.Close(ctx)
	}
	t.Cleanup(stop)
	return l.Addr().String(), stop
}

func newKgo(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	c, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(30 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestTopicsBackend(t *testing.T) {
	st := newTopicsStack(t)
	addr, stop := st.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newKgo(t, addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("90000")}, "bt"); err != nil {
		t.Fatal(err)
	}
	// Two batches: offsets 0-3 in one entry, 4-5 in the next.
	prod := newKgo(t, addr, kgo.DefaultProduceTopic("bt"), kgo.ProducerLinger(time.Minute))
	for _, n := range []int{4, 2} {
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Value: []byte{byte('a' + i)}})
		}
		errs := make(chan error, n)
		for _, r := range recs {
			prod.Produce(ctx, r, func(_ *kgo.Record, err error) { errs <- err })
		}
		if err := prod.Flush(ctx); err != nil { // sends the lingering records as one batch
			t.Fatal(err)
		}
		for range recs {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	ends, err := adm.ListEndOffsets(ctx, "bt")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("bt", 0); o.Offset != 6 {
		t.Fatalf("end offset %d, want 6", o.Offset)
	}

	// A fetch from inside the first entry starts at the offset asked for, and one after
	// a jump back still reads right (the cached reader is moved).
	for _, at := range []int64{2, 5, 0} {
		c := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"bt": {0: kgo.NewOffset().At(at)}}))
		fs := c.PollFetches(ctx)
		recs := fs.Records()
		if len(recs) == 0 || recs[0].Offset != at {
			t.Fatalf("fetch at %d: %v %v", at, recs, fs.Errors())
		}
		c.Close()
	}

	// Commits with metadata, as the group's subscription.
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "bt", Partition: 0, At: 3, Metadata: "checkpoint é 12345678901"})
	if r, err := adm.CommitOffsets(ctx, "grp", offs); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	// Topic configs: kept as set, retention applied as the topic's policy.
	pol, err := st.res.TopicPolicies(ctx, "persistent", "public", "default", "bt")
	if err != nil || pol.RetentionPolicies == nil || pol.RetentionPolicies.RetentionTimeInMinutes != 2 {
		t.Fatalf("retention policy %+v %v", pol.RetentionPolicies, err)
	}

	// DeleteRecords below offset 5 (inside the second entry): the start moves there.
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: "bt", Partition: 0, At: 5})
	if r, err := adm.DeleteRecords(ctx, del); err != nil || r.Error() != nil {
		t.Fatalf("delete records: %v %v", err, r.Error())
	}

	// All of it survives a restart of the service.
	stop()
	addr, _ = st.start(t)
	adm = kadm.NewClient(newKgo(t, addr))
	got, err := adm.FetchOffsets(ctx, "grp")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := got.Lookup("bt", 0); !ok || o.At != 3 || o.Metadata != "checkpoint é 12345678901" {
		t.Fatalf("committed after restart: %+v", o)
	}
	starts, err := adm.ListStartOffsets(ctx, "bt")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("bt", 0); o.Offset != 5 {
		t.Fatalf("start offset after DeleteRecords and restart %d, want 5", o.Offset)
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, "bt")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := cfgs.On("bt", nil); err != nil || !hasConfig(c, "retention.ms", "90000") {
		t.Fatalf("configs %+v %v", c, err)
	}
	// A commit at the high watermark while the ledger opened at the restart is still
	// empty (the end of the log is the start of that ledger).
	offs = kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "bt", Partition: 0, At: 6})
	if r, err := adm.CommitOffsets(ctx, "grp", offs); err != nil || r.Error() != nil {
		t.Fatalf("commit at the high watermark after the restart: %v %v", err, r.Error())
	}
	// The next record gets offset 6.
	prod = newKgo(t, addr, kgo.DefaultProduceTopic("bt"))
	if r, err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("z")}).First(); err != nil || r.Offset != 6 {
		t.Fatalf("first record after restart: %v %v", r, err)
	}
}

func hasConfig(c kadm.ResourceConfig, k, v string) bool {
	for _, kv := range c.Configs {
		if kv.Key == k && kv.Value != nil && *kv.Value == v {
			return true
		}
	}
	return false
}
