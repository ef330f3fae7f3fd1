package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

func getTxnJSON(t *testing.T, path string, v any) int {
	t.Helper()
	resp, err := http.Get("http://" + sa.HTTPAddr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, b)
		}
	}
	return resp.StatusCode
}

// /admin/v3/transactions on the standalone (transactions on): an open transaction shows in
// the coordinator's stats, its metadata, the slow transactions and the buffer and
// pending-ack stats of the topic it touched; once committed it is gone.
func TestTransactionsAdmin(t *testing.T) {
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + sa.BrokerAddr(), OperationTimeout: 30 * time.Second,
		Logger: quiet, EnableTransaction: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic = "persistent://public/default/txn-admin"
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("plain")}); err != nil {
		t.Fatal(err)
	}
	m, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("in txn"), Transaction: tx}); err != nil {
		t.Fatal(err)
	}
	if err := cons.AckWithTxn(m, tx); err != nil {
		t.Fatal(err)
	}
	id := tx.GetTxnID()

	var stats map[string]struct {
		State          string `json:"state"`
		OngoingTxnSize int    `json:"ongoingTxnSize"`
	}
	if code := getTxnJSON(t, "/admin/v3/transactions/coordinatorStats", &stats); code != 200 || stats["0"].State != "Ready" || stats["0"].OngoingTxnSize < 1 {
		t.Fatalf("coordinatorStats: %d %+v", code, stats)
	}
	var md struct {
		TxnID              string                                            `json:"txnId"`
		Status             string                                            `json:"status"`
		ProducedPartitions map[string]struct{ StartPosition string }         `json:"producedPartitions"`
		AckedPartitions    map[string]map[string]struct{ Cumulative string } `json:"ackedPartitions"`
	}
	mdPath := fmt.Sprintf("/admin/v3/transactions/transactionMetadata/%d/%d", id.MostSigBits, id.LeastSigBits)
	if code := getTxnJSON(t, mdPath, &md); code != 200 || md.Status != "OPEN" || md.ProducedPartitions[topic].StartPosition == "" {
		t.Fatalf("transactionMetadata: %d %+v", code, md)
	}
	if _, ok := md.AckedPartitions[topic]["s"]; !ok {
		t.Fatalf("transactionMetadata without its acknowledgement: %+v", md)
	}
	var slow map[string]any
	if code := getTxnJSON(t, "/admin/v3/transactions/slowTransactions/0", &slow); code != 200 || slow[md.TxnID] == nil {
		t.Fatalf("slowTransactions: %d %v", code, slow)
	}
	var buf struct {
		State          string `json:"state"`
		OngoingTxnSize int    `json:"ongoingTxnSize"`
	}
	if code := getTxnJSON(t, "/admin/v3/transactions/transactionBufferStats/public/default/txn-admin", &buf); code != 200 || buf.OngoingTxnSize != 1 {
		t.Fatalf("transactionBufferStats: %d %+v", code, buf)
	}
	var pa struct {
		OngoingTxnSize int `json:"ongoingTxnSize"`
	}
	if code := getTxnJSON(t, "/admin/v3/transactions/pendingAckStats/public/default/txn-admin/s", &pa); code != 200 || pa.OngoingTxnSize != 1 {
		t.Fatalf("pendingAckStats: %d %+v", code, pa)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if code := getTxnJSON(t, mdPath, nil); code != http.StatusNotFound {
		t.Fatalf("metadata of a committed transaction: %d", code)
	}
	if code := getTxnJSON(t, "/admin/v3/transactions/transactionMetadata/x/1", nil); code != http.StatusBadRequest {
		t.Fatalf("bad transaction id: %d", code)
	}
}
