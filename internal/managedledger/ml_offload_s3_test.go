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
