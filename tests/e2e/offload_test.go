package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// TestOffloadEndToEnd (issue 18): 200k messages in small ledgers are offloaded to a real
// S3-compatible server by the size policy (threshold 0), the bookie copies are deleted
// (deletion lag 0), the standalone is SIGKILLed and restarted, and everything is consumed
// from the earliest position in order and byte for byte, then a seek by time lands in the
// offloaded part, and deleting the topic deletes the objects.
func TestOffloadEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("200k messages through a standalone and S3: not in -short")
	}
	s3 := testenv.StartS3(t)
	s3.CreateBucket(t, "e2e")
	dir := t.TempDir()
	flags := []string{
		"--managed-ledger-offload-driver", "S3",
		"--s3-managed-ledger-offload-bucket", "e2e",
		"--s3-managed-ledger-offload-service-endpoint", s3.Endpoint,
		"--s3-managed-ledger-offload-region", s3.Region,
		"--s3-managed-ledger-offload-credential-id", s3.AccessKey,
		"--s3-managed-ledger-offload-credential-secret", s3.SecretKey,
		"--s3-managed-ledger-offload-max-block-size-in-bytes", "5242880",
		"--s3-managed-ledger-offload-read-buffer-size-in-bytes", "262144",
		"--managed-ledger-offload-auto-trigger-size-threshold-bytes", "0",
		"--managed-ledger-offload-deletion-lag-ms", "0",
		"--managed-ledger-max-entries-per-ledger", "40",
		"--managed-ledger-min-ledger-rollover-time-minutes", "0",
		"--retention-check-interval-in-seconds", "1",
	}
	const (
		topic = "persistent://public/default/offload-e2e"
		total = 200_000
	)
	payload := func(i int) []byte { return []byte(fmt.Sprintf("msg-%06d-%s", i, strings.Repeat("x", i%50))) }

	p, broker, httpAddr := startStandalone(t, dir, flags...)
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker, OperationTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// A durable subscription holds the data against retention.
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	cons.Close()
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, SendTimeout: 2 * time.Minute, BatchingMaxMessages: 500})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	for i := range total {
		prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload(i)}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := prod.FlushWithCtx(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatalf("send failed: %v", err)
	default:
	}
	prod.Close()
	c.Close()

	// Every closed ledger offloaded, and its bookie copy deleted (the log says which).
	var offloaded int
	waitOffload(t, 5*time.Minute, func() bool {
		st := internalStats(t, httpAddr, topic)
		n, closed := 0, len(st.Ledgers)-1
		for _, l := range st.Ledgers[:closed] {
			if l.Offloaded {
				n++
			}
		}
		offloaded = n
		return closed >= 5 && n == closed && strings.Count(p.log(), "deleted the bookie copy of an offloaded ledger") >= n
	})
	if keys := s3.Keys(t, "e2e"); len(keys) != 2*offloaded {
		t.Fatalf("%d objects for %d offloaded ledgers", len(keys), offloaded)
	}
	t.Logf("%d ledgers offloaded", offloaded)

	p.kill()
	_, broker, httpAddr = startStandalone(t, dir, flags...)
	c, err = pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker, OperationTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cons, err = c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", ReceiverQueueSize: 2000})
	if err != nil {
		t.Fatal(err)
	}
	published := make([]time.Time, total)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for i := range total {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("receive %d: %v", i, err)
		}
		if !bytes.Equal(m.Payload(), payload(i)) {
			t.Fatalf("message %d is %q", i, m.Payload())
		}
		published[i] = m.PublishTime()
		// No acknowledgement: acknowledged ledgers are trimmed by the retention check
		// (every second here), and the seek below must find the offloaded part still stored.
	}

	// Seek by time into the offloaded part.
	target := total / 4
	if err := cons.SeekByTime(published[target]); err != nil {
		t.Fatal(err)
	}
	m, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got int
	if _, err := fmt.Sscanf(string(m.Payload()), "msg-%06d-", &got); err != nil {
		t.Fatalf("after seek: %q", m.Payload())
	}
	if published[got].Before(published[target]) || got > 0 && !published[got-1].Before(published[target]) {
		t.Fatalf("seek to %v landed on message %d (published %v)", published[target], got, published[got])
	}
	cons.Close()

	// Deleting the topic deletes the objects.
	req, _ := http.NewRequest(http.MethodDelete, "http://"+httpAddr+"/admin/v2/persistent/public/default/offload-e2e?force=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("delete topic: %s", resp.Status)
	}
	waitOffload(t, 2*time.Minute, func() bool { return len(s3.Keys(t, "e2e")) == 0 })
}

type internalStatsJSON struct {
	Ledgers []struct {
		LedgerID  int64 `json:"ledgerId"`
		Entries   int64 `json:"entries"`
		Offloaded bool  `json:"offloaded"`
	} `json:"ledgers"`
}

func internalStats(t testing.TB, httpAddr, topic string) internalStatsJSON {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/admin/v2/" + strings.Replace(topic, "://", "/", 1) + "/internalStats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st internalStatsJSON
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || len(st.Ledgers) == 0 {
		t.Fatalf("internalStats: %s %v", resp.Status, err)
	}
	return st
}

// waitOffload polls cond; the deadline only catches hangs.
func waitOffload(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
