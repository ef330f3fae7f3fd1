package broker

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/config"
)

// BenchmarkTxnPublish measures, in one run, non-transactional publishing of b.N messages
// and transactional publishing of b.N messages in transactions of txnBatch (each committed
// before its worker opens the next; 4 workers), both with the Go client's batching, and reports both rates, their
// ratio and the commit latency percentiles. `make bench-txn`; with MAGNETAR_BENCH_URL it
// runs against that broker (transactions on, as `magnetar standalone` has them). With
// MAGNETAR_BENCH_TXN_BATCHED=1 the in-process broker batches its transaction logs
// (transactionLogBatchedWriteEnabled, transactionPendingAckBatchedWriteEnabled).
func BenchmarkTxnPublish(b *testing.B) {
	const txnBatch, txnWorkers = 100, 4
	url := benchURLWith(b, func(c *config.BrokerConfig) {
		txnOn(c)
		if os.Getenv("MAGNETAR_BENCH_TXN_BATCHED") == "1" {
			c.Transaction.LogBatchedWriteEnabled, c.Transaction.PendingAckBatchedWriteEnabled = true, true
		}
	})
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, Logger: quietLogger(), EnableTransaction: true,
		OperationTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	payload := make([]byte, 100)
	ctx := context.Background()
	suffix := time.Now().UnixNano()
	newProducer := func(kind string) pulsar.Producer {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: fmt.Sprintf("bench-txn-%s-%d", kind, suffix),
			MaxPendingMessages: 10000, BatchingMaxMessages: 1000, SendTimeout: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	send := func(p pulsar.Producer, n int, tx pulsar.Transaction) {
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: payload, Transaction: tx}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					b.Error(err)
				}
				wg.Done()
			})
		}
		_ = p.FlushWithCtx(ctx)
		wg.Wait()
	}
	// One producer per worker: a batch holds the messages of one transaction only.
	plain := newProducer("plain")
	defer plain.Close()
	txps := make([]pulsar.Producer, txnWorkers)
	for i := range txps {
		txps[i] = newProducer("txn")
		defer txps[i].Close()
	}
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()

	start := time.Now()
	send(plain, b.N, nil)
	plainRate := float64(b.N) / time.Since(start).Seconds()

	// txnWorkers transactions are open at once (each worker commits before it opens its
	// next), as a transactional producer keeps its pipeline full.
	var mu sync.Mutex
	var commits, opens, sends []time.Duration
	var wg sync.WaitGroup
	next := make(chan int, b.N/txnBatch+1)
	for left := b.N; left > 0; left -= txnBatch {
		next <- min(left, txnBatch)
	}
	close(next)
	start = time.Now()
	for _, txp := range txps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range next {
				t0 := time.Now()
				tx, err := client.NewTransaction(time.Minute)
				if err != nil {
					b.Error(err)
					return
				}
				s0 := time.Now()
				send(txp, n, tx)
				c0 := time.Now()
				if err := tx.Commit(ctx); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				opens, sends, commits = append(opens, s0.Sub(t0)), append(sends, c0.Sub(s0)), append(commits, time.Since(c0))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	txnRate := float64(b.N) / time.Since(start).Seconds()
	b.StopTimer()
	pct := func(ds []time.Duration, q float64) float64 {
		slices.Sort(ds)
		return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))].Microseconds()) / 1000
	}
	b.ReportMetric(plainRate, "plain-msg/s")
	b.ReportMetric(txnRate, "txn-msg/s")
	b.ReportMetric(100*txnRate/plainRate, "txn-%-of-plain")
	b.ReportMetric(pct(commits, 0.50), "commit-p50-ms")
	b.ReportMetric(pct(commits, 0.99), "commit-p99-ms")
	// Where a transaction's time goes: NEW_TXN, then its messages (the first one waits
	// for ADD_PARTITION_TO_TXN) until all are stored.
	b.ReportMetric(pct(opens, 0.50), "new-txn-p50-ms")
	b.ReportMetric(pct(sends, 0.50), "send-p50-ms")
}

// benchURLWith is benchURL with the in-process broker configured by mutate.
func benchURLWith(b *testing.B, mutate func(*config.BrokerConfig)) string {
	if u := os.Getenv("MAGNETAR_BENCH_URL"); u != "" {
		return u
	}
	return startBroker(b, mutate).url
}
