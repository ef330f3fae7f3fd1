package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestOffloadAdmin drives an offload through the admin REST API and `magnetar admin topics
// offload|offload-status` on a standalone with the filesystem driver, and checks the bad
// inputs: a body that is no MessageId, and a broker without a driver.
func TestOffloadAdmin(t *testing.T) {
	dir := t.TempDir()
	store := t.TempDir()
	_, broker, httpAddr := startStandalone(t, dir,
		"--managed-ledger-offload-driver", "filesystem", "--file-system-uri", "file://"+store,
		"--managed-ledger-max-entries-per-ledger", "20", "--managed-ledger-min-ledger-rollover-time-minutes", "0")
	const topic = "persistent://public/default/offload-admin"
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker, OperationTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub"})
	if err != nil {
		t.Fatal(err)
	}
	cons.Close()
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 90 { // not a multiple of 20: the current ledger is not full and rolling over
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()

	admin := func(args ...string) (string, error) {
		out, err := exec.Command(binary, append([]string{"admin", "--admin-url", "http://" + httpAddr}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := admin("topics", "offload-status", topic); err != nil || !strings.Contains(out, "Offload has not been run") {
		t.Fatalf("offload-status before: %v %s", err, out)
	}
	if out, err := admin("topics", "offload", "-s", "0", topic); err != nil || !strings.Contains(out, "Offload triggered") {
		t.Fatalf("offload: %v %s", err, out)
	}
	if out, err := admin("topics", "offload-status", "-w", topic); err != nil || !strings.Contains(out, "Offload was a success") {
		t.Fatalf("offload-status -w: %v %s", err, out)
	}
	st := internalStats(t, httpAddr, topic)
	for i, l := range st.Ledgers {
		if want := i < len(st.Ledgers)-1 && l.Entries > 0; l.Offloaded != want {
			t.Fatalf("ledger %d (%d entries) offloaded=%v (of %d)", l.LedgerID, l.Entries, l.Offloaded, len(st.Ledgers))
		}
	}
	base := "http://" + httpAddr + "/admin/v2/persistent/public/default/offload-admin/offload"
	resp, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	var status struct {
		Status                  string `json:"status"`
		FirstUnoffloadedMessage struct {
			LedgerID int64 `json:"ledgerId"`
			EntryID  int64 `json:"entryId"`
		} `json:"firstUnoffloadedMessage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	last := st.Ledgers[len(st.Ledgers)-1].LedgerID
	if status.Status != "SUCCESS" || status.FirstUnoffloadedMessage.LedgerID != last || status.FirstUnoffloadedMessage.EntryID != 0 {
		t.Fatalf("status %+v, want SUCCESS before %d:0", status, last)
	}

	// pulsar_storage_offloaded_size and the offloader's counters are on /metrics.
	resp, err = http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var offloadedSize bool
	for _, line := range strings.Split(string(metrics), "\n") {
		if strings.HasPrefix(line, "pulsar_storage_offloaded_size{") && strings.Contains(line, "offload-admin") && !strings.HasSuffix(line, " 0") {
			offloadedSize = true
		}
	}
	if !offloadedSize || !strings.Contains(string(metrics), "brk_ledgeroffloader_offload_bytes{") {
		t.Fatalf("offload metrics missing:\n%s", metrics)
	}

	req, _ := http.NewRequest(http.MethodPut, base, bytes.NewBufferString("not json"))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad body: %s", resp.Status)
	}

	// A standalone without a driver refuses with 412 and a reason.
	_, broker2, http2 := startStandalone(t, t.TempDir())
	c2, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker2})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	p2, err := c2.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	p2.Close()
	req, _ = http.NewRequest(http.MethodPut, "http://"+http2+"/admin/v2/persistent/public/default/offload-admin/offload", bytes.NewBufferString(`{"ledgerId":9,"entryId":0}`))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusPreconditionFailed {
		t.Fatalf("offload without a driver: %s", resp.Status)
	}
}
