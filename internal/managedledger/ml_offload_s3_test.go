package managedledger

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/magnetar-io/magnetar/internal/offload"
	"github.com/magnetar-io/magnetar/internal/testenv"
)

// TestOffloadedCatchUpDoesNotStallOtherTopics holds every byte between the broker and a
// real S3 server while one topic reads its offloaded ledgers: another topic of the same
// factory keeps adding and reading its tail meanwhile, and the held read completes, intact,
// once the network comes back.
func TestOffloadedCatchUpDoesNotStallOtherTopics(t *testing.T) {
	s3 := testenv.StartS3(t)
	s3.CreateBucket(t, "mlbucket")
	proxy := testenv.StartProxy(t, strings.TrimPrefix(s3.Endpoint, "http://"))
	c := offload.DefaultConfig()
	c.Driver, c.Bucket, c.Region = offload.DriverS3, "mlbucket", s3.Region
	c.ServiceEndpoint = "http://" + proxy.Addr
	c.CredentialID, c.CredentialSecret = s3.AccessKey, s3.SecretKey
	c.MaxBlockSize, c.ReadBufferSize = 5<<20, 4<<10
	o, err := offload.New(context.Background(), c, offload.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()

	e := newEnv(t)
	e.cfg.MaxEntriesPerLedger = 10
	f := e.offloadFactory(o)
	a := open(t, f, "t/ns/persistent/catchup", func(c *Config) { c.Offload.DeletionLagMillis = 0 })
	keep(t, a)
	ps := addN(t, a, 55, "m")
	if _, err := a.Offload(ctxT(t), a.LastConfirmedEntry()); err != nil {
		t.Fatal(err)
	}
	f.RunMaintenance(ctxT(t)) // bookie copies deleted: only S3 has the old ledgers
	b := open(t, f, "t/ns/persistent/tail", nil)
	cb, err := b.OpenCursor(ctxT(t), "sub", InitialPositionLatest)
	if err != nil {
		t.Fatal(err)
	}

	proxy.Hold()
	reader, err := a.NewNonDurableCursor(Earliest, false)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		es  []Entry
		err error
	}
	held := make(chan result, 1)
	go func() {
		es, err := reader.ReadEntries(context.Background(), 10, 0)
		held <- result{es, err}
	}()

	// The tail topic works while the catch-up read cannot get a byte from S3.
	addN(t, b, 20, "tail")
	if got := readAll(t, cb); len(got) != 20 {
		t.Fatalf("tail reader got %d entries while the other topic's S3 read was held", len(got))
	}
	select {
	case r := <-held:
		t.Fatalf("the held S3 read returned early: %d entries, %v", len(r.es), r.err)
	default:
	}

	proxy.Restore()
	r := <-held
	if r.err != nil || len(r.es) != 10 {
		t.Fatalf("held read after restore: %d entries, %v", len(r.es), r.err)
	}
	for i, e := range r.es {
		if e.Position != ps[i] || string(e.Data) != fmt.Sprintf("m-%d", i) {
			t.Fatalf("entry %d: %v %q", i, e.Position, e.Data)
		}
	}
	reader.Close(context.Background())
}

// Two namespaces whose offload policies name two buckets of one real S3 server offload
// there, each through its own pooled offloader (Pulsar's per-policy offloaders). Then one
// namespace's policy moves to a third bucket: its new ledgers go there, while the ledgers
// already offloaded (bookie copies deleted) are still read, after a restart too, and
// finally deleted where their offload context says they are. A policy naming a bucket
// that does not exist fails the run with the store's error and keeps the bookie copies.
func TestOffloadPoliciesChooseTheBucket(t *testing.T) {
	s3 := testenv.StartS3(t)
	for _, b := range []string{"ns-a", "ns-b", "ns-a2"} {
		s3.CreateBucket(t, b)
	}
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	// The broker's keys: where the S3 server is and how to log in, no bucket of its own.
	base := offload.Policies{Driver: str(offload.DriverS3), S3ServiceEndpoint: str(s3.Endpoint), S3Region: str(s3.Region),
		S3CredentialID: str(s3.AccessKey), S3CredentialSecret: str(s3.SecretKey),
		S3MaxBlockSize: num(5 << 20), S3ReadBufferSize: num(4 << 10)}
	policy := func(bucket string) offload.Policies {
		return offload.Policies{Driver: str("aws-s3"), S3Bucket: str(bucket)}
	}
	pool := offload.NewPool(offload.Options{}, 4)
	defer pool.Close()

	e := newEnv(t)
	e.cfg.MaxEntriesPerLedger = 10
	newFactory := func() *Factory {
		f, err := NewFactory(FactoryOptions{Ledger: e.lc, Store: e.store, Config: e.cfg, Now: e.clock.Now, DisableBackground: true,
			OffloadPool: pool, OffloadPolicies: base})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close(context.Background()) })
		return f
	}
	f := newFactory()
	openNS := func(f *Factory, name, bucket string) *ManagedLedger {
		return open(t, f, name, func(c *Config) { c.Offload.DeletionLagMillis = 0; c.OffloadPolicies = policy(bucket) })
	}
	var psA []Position
	add := func(ml *ManagedLedger, ps *[]Position, n int, prefix string) {
		for range n {
			p, err := ml.Add(ctxT(t), []byte(fmt.Sprintf("%s-%d", prefix, len(*ps))))
			if err != nil {
				t.Fatal(err)
			}
			*ps = append(*ps, p)
		}
	}
	offloadAll := func(ml *ManagedLedger) {
		t.Helper()
		if _, err := ml.Offload(ctxT(t), ml.LastConfirmedEntry()); err != nil {
			t.Fatalf("offload of %s: %v", ml.Name(), err)
		}
	}
	evict := func(f *Factory, ml *ManagedLedger) {
		f.EvictCache()
		for _, id := range ml.LedgerIDs() {
			f.cache.invalidateLedger(id)
		}
	}
	objectsIn := func(bucket string) int { return len(s3.Keys(t, bucket)) }

	a := openNS(f, "t/ns-a/persistent/x", "ns-a")
	b := openNS(f, "t/ns-b/persistent/x", "ns-b")
	keep(t, a)
	keep(t, b)
	add(a, &psA, 35, "a")
	psB := addN(t, b, 25, "b")
	offloadAll(a)
	offloadAll(b)
	f.RunMaintenance(ctxT(t)) // deletion lag 0: the bookie copies go
	na, _ := offloadedLedgers(a)
	nb, _ := offloadedLedgers(b)
	if na != 3 || nb != 2 || objectsIn("ns-a") != 2*na || objectsIn("ns-b") != 2*nb || objectsIn("ns-a2") != 0 {
		t.Fatalf("offloaded %d and %d ledgers; objects: ns-a %d, ns-b %d, ns-a2 %d",
			na, nb, objectsIn("ns-a"), objectsIn("ns-b"), objectsIn("ns-a2"))
	}
	if n := pool.Len(); n != 0 {
		t.Fatalf("%d offloaders left open after the runs ended", n)
	}

	// Namespace a's policy moves to bucket ns-a2.
	cfg := a.Config()
	cfg.OffloadPolicies = policy("ns-a2")
	if err := a.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	add(a, &psA, 25, "a") // ledgers 3 and 4 fill up, 5 is current
	offloadAll(a)
	f.RunMaintenance(ctxT(t))
	na2, _ := offloadedLedgers(a)
	if na2 != 5 || objectsIn("ns-a") != 2*na || objectsIn("ns-a2") != 2*(na2-na) {
		t.Fatalf("after the policy change %d ledgers offloaded; objects: ns-a %d, ns-a2 %d", na2, objectsIn("ns-a"), objectsIn("ns-a2"))
	}
	// Every entry from the earliest: the old ledgers exist only in ns-a, the new ones only
	// in ns-a2, and no bookie copy is left of either.
	evict(f, a)
	readEverything(t, a, psA, "a")
	evict(f, b)
	readEverything(t, b, psB, "b")

	// A restarted broker reads the recorded places from the ledger list.
	crash(f)
	f = newFactory()
	a = openNS(f, "t/ns-a/persistent/x", "ns-a2")
	readEverything(t, a, psA, "a")

	// A policy naming a missing bucket: the run fails with the store's error, nothing is
	// lost, and the offloaded ledgers still read.
	cfg = a.Config()
	cfg.OffloadPolicies = policy("no-such-bucket")
	if err := a.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	add(a, &psA, 10, "a")
	if _, err := a.Offload(ctxT(t), a.LastConfirmedEntry()); err == nil {
		t.Fatal("offload to a missing bucket succeeded")
	}
	if st := a.OffloadStatus(); st.Status != OffloadError || !strings.Contains(st.LastError, "no-such-bucket") {
		t.Fatalf("status after offloading to a missing bucket: %+v", st)
	}
	evict(f, a)
	readEverything(t, a, psA, "a")

	// Deleting the topic deletes its objects in both buckets, and only its own.
	if err := a.Delete(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if objectsIn("ns-a") != 0 || objectsIn("ns-a2") != 0 || objectsIn("ns-b") != 2*nb {
		t.Fatalf("after deleting a: ns-a %d, ns-a2 %d, ns-b %d objects", objectsIn("ns-a"), objectsIn("ns-a2"), objectsIn("ns-b"))
	}
	if p := f.PendingOffloadDeletes(); len(p) != 0 {
		t.Fatalf("deletes pending: %+v", p)
	}
}
