package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// TestOffloadPoliciesPerNamespace (issue 18): two namespaces whose offload policies
// (`magnetar admin namespaces set-offload-policies -d aws-s3 -b ...`, the broker's keys
// supplying endpoint and credentials) name two buckets of one real S3 server offload there,
// not to the broker's bucket. Then one namespace's policy moves to a third bucket: new
// ledgers go there, and a consumer from the earliest position reads every message, the
// old ones from the first bucket (their bookie copies deleted), the new ones from the
// third. Deleting the topic deletes its objects in both buckets and nothing of the other
// namespace's.
func TestOffloadPoliciesPerNamespace(t *testing.T) {
	s3 := testenv.StartS3(t)
	for _, b := range []string{"broker", "ns-one", "ns-two", "ns-one-new"} {
		s3.CreateBucket(t, b)
	}
	dir := t.TempDir()
	flags := []string{
		"--managed-ledger-offload-driver", "S3",
		"--s3-managed-ledger-offload-bucket", "broker",
		"--s3-managed-ledger-offload-service-endpoint", s3.Endpoint,
		"--s3-managed-ledger-offload-region", s3.Region,
		"--s3-managed-ledger-offload-credential-id", s3.AccessKey,
		"--s3-managed-ledger-offload-credential-secret", s3.SecretKey,
		"--s3-managed-ledger-offload-max-block-size-in-bytes", "5242880",
		"--managed-ledger-max-entries-per-ledger", "20",
		"--managed-ledger-min-ledger-rollover-time-minutes", "0",
		"--retention-check-interval-in-seconds", "1",
	}
	p, broker, httpAddr := startStandalone(t, dir, flags...)
	admin := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(binary, append([]string{"admin", "--admin-url", "http://" + httpAddr}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("magnetar admin %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	setPolicy := func(ns, bucket string) {
		admin("namespaces", "set-offload-policies", ns, "-d", "aws-s3", "-b", bucket, "-e", s3.Endpoint, "-r", s3.Region,
			"--offloadAfterElapsed", "0")
	}
	topics := map[string]string{"public/one": "persistent://public/one/t", "public/two": "persistent://public/two/t"}
	for ns := range topics {
		admin("namespaces", "create", ns)
	}
	setPolicy("public/one", "ns-one")
	setPolicy("public/two", "ns-two")

	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker, OperationTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	payload := func(topic string, i int) []byte { return []byte(fmt.Sprintf("%s-%04d", topic, i)) }
	sent := map[string]int{}
	produce := func(topic string, n int) {
		t.Helper()
		prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		for range n {
			if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: payload(topic, sent[topic])}); err != nil {
				t.Fatal(err)
			}
			sent[topic]++
		}
	}
	offloadAll := func(topic string) int {
		t.Helper()
		admin("topics", "offload", "-s", "0", topic)
		if out := admin("topics", "offload-status", "-w", topic); !strings.Contains(out, "Offload was a success") {
			t.Fatalf("offload of %s: %s", topic, out)
		}
		n := 0
		for _, l := range internalStats(t, httpAddr, topic).Ledgers {
			if l.Offloaded {
				n++
			}
		}
		return n
	}
	for _, topic := range topics {
		// A durable subscription from the start holds the data against retention.
		cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		cons.Close()
		produce(topic, 50) // 2 full ledgers of 20 and the current one
	}
	one, two := topics["public/one"], topics["public/two"]
	n1, n2 := offloadAll(one), offloadAll(two)
	keys := func(bucket string) int { return len(s3.Keys(t, bucket)) }
	if n1 < 2 || n2 < 2 || keys("ns-one") != 2*n1 || keys("ns-two") != 2*n2 || keys("broker") != 0 {
		t.Fatalf("offloaded %d and %d ledgers; objects: ns-one %d, ns-two %d, broker %d", n1, n2, keys("ns-one"), keys("ns-two"), keys("broker"))
	}

	// Namespace one moves to another bucket. The unload makes sure the topic runs with the
	// new policy before the next produce (the live update is covered by the topics and
	// managedledger tests).
	setPolicy("public/one", "ns-one-new")
	admin("topics", "unload", one)
	produce(one, 50)
	n1new := offloadAll(one)
	if n1new <= n1 || keys("ns-one") != 2*n1 || keys("ns-one-new") != 2*(n1new-n1) {
		t.Fatalf("after the policy change %d ledgers offloaded (before %d); objects: ns-one %d, ns-one-new %d", n1new, n1, keys("ns-one"), keys("ns-one-new"))
	}

	// The deletion lag of 0 lets the background pass delete the bookie copies; then a
	// SIGKILL and restart (no entry cache, the places read back from the ledger lists), and
	// every message from the earliest: the first ledgers exist only in ns-one, the later
	// ones only in ns-one-new.
	waitOffload(t, 2*time.Minute, func() bool {
		return strings.Count(p.log(), "deleted the bookie copy of an offloaded ledger") >= n1new+n2
	})
	c.Close()
	p.kill()
	_, broker, httpAddr = startStandalone(t, dir, flags...)
	if c, err = pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker, OperationTimeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: one, SubscriptionName: "sub", ReceiverQueueSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := range sent[one] {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("receive %d: %v", i, err)
		}
		if got, want := string(m.Payload()), string(payload(one, i)); got != want {
			t.Fatalf("message %d is %q, want %q", i, got, want)
		}
	}
	cons.Close()

	admin("topics", "delete", "-f", one)
	waitOffload(t, 2*time.Minute, func() bool { return keys("ns-one") == 0 && keys("ns-one-new") == 0 })
	if keys("ns-two") != 2*n2 {
		t.Fatalf("deleting %s touched ns-two: %d objects", one, keys("ns-two"))
	}
}
