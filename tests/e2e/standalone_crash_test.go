package e2e

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestStandaloneSIGKILLLosesNoAcknowledgedMessage publishes asynchronously, SIGKILLs the
// standalone process at a random moment while sends are in flight, restarts it on the same
// data directory and checks that every message whose send was acknowledged is there.
func TestStandaloneSIGKILLLosesNoAcknowledgedMessage(t *testing.T) {
	dir := t.TempDir()
	const topic = "persistent://public/default/crash"
	// One lock for every round: a receipt read before a kill may run its callback after
	// the round ended (the message is then acknowledged, and counts).
	var mu sync.Mutex
	acked := map[string]bool{}
	for round := 0; round < 3; round++ {
		p, broker, _ := startStandalone(t, dir)
		c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker, OperationTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, SendTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ackedThisRound := 0
		killAfter := 100 + rand.IntN(400) // acknowledgements to see before the kill
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				mu.Lock()
				enough := ackedThisRound >= killAfter
				mu.Unlock()
				if enough || i >= 100000 {
					return
				}
				payload := fmt.Sprintf("r%d-m%d", round, i)
				prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload)}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
					if err == nil {
						mu.Lock()
						acked[payload] = true
						ackedThisRound++
						mu.Unlock()
					}
				})
			}
		}()
		<-done // the kill comes while the last sends are still in flight
		mu.Lock()
		p.kill()
		mu.Unlock()
		c.Close()
	}
	mu.Lock()
	nAcked := len(acked)
	mu.Unlock()
	if nAcked == 0 {
		t.Fatal("no send was acknowledged before the kills; the test proves nothing")
	}

	_, broker, httpAddr := startStandalone(t, dir)
	resp, err := http.Get("http://" + httpAddr + "/status.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(body)) != "OK" {
		t.Fatalf("status.html = %q", body)
	}
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker, OperationTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seen := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for r.HasNext() {
		m, err := r.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen[string(m.Payload())] = true
	}
	mu.Lock()
	defer mu.Unlock()
	for payload := range acked {
		if !seen[payload] {
			t.Errorf("acknowledged message %s lost", payload)
		}
	}
	t.Logf("%d acknowledged messages over 3 SIGKILLs, %d stored, all acknowledged ones present", nAcked, len(seen))
}
