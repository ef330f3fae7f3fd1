package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

// TestTxnSIGKILLExactlyOnce runs a consume-transform-produce loop with transactions
// (receive from one topic, publish the transformed message to another and acknowledge the
// input, all in one transaction) against `magnetar standalone`, SIGKILLs the process at a
// random step of the loop (between any two client operations, or while a commit is in
// flight) and restarts it on the same data directory, txnCrashRounds times. At the end the
// output must hold every input exactly once: a transaction whose commit was cut off either
// took effect whole or not at all (then its inputs come back and are processed again).
// `make soak` runs 120 rounds (txn_soak_on_test.go).
func TestTxnSIGKILLExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	const in, out = "persistent://public/default/txn-crash-in", "persistent://public/default/txn-crash-out"
	const perRound = 8
	total := 0
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 17))
	for round := 0; round <= txnCrashRounds; round++ {
		last := round == txnCrashRounds
		p, broker, _ := startStandalone(t, dir)
		c := newE2EClient(t, broker, true)
		produceInputs(t, c, in, total, perRound)
		total += perRound
		if !last {
			// Kill at a random step of the next 4 transactions (each: receive, send, ack, commit).
			step := rng.IntN(4 * 4 * 3)
			async := rng.IntN(2) == 0
			t.Logf("round %d: kill at step %d (async %v)", round, step, async)
			runTransform(c, in, out, func(n int) bool {
				if n < step {
					return false
				}
				if async {
					go func() { time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond); p.kill() }()
				} else {
					p.kill()
				}
				return true
			}, nil)
			p.kill()
			c.Close()
			continue
		}
		// The last round runs without a kill until the output holds every input: inputs
		// held by a transaction cut off by the last kill come back when its timeout aborts it.
		seen := map[string]int{}
		var mu sync.Mutex
		r, err := c.CreateReader(pulsar.ReaderOptions{Topic: out, StartMessageID: pulsar.EarliestMessageID()})
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			for {
				m, err := r.Next(ctx)
				if err != nil {
					close(stop)
					return
				}
				mu.Lock()
				seen[string(m.Payload())]++
				n := len(seen)
				mu.Unlock()
				if n == total {
					close(stop)
					return
				}
			}
		}()
		runTransform(c, in, out, func(int) bool { return false }, stop)
		// Anything committed twice would be stored by now: read to the end once more.
		time.Sleep(200 * time.Millisecond)
		for r.HasNext() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			m, err := r.Next(ctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			seen[string(m.Payload())]++
		}
		r.Close()
		mu.Lock()
		defer mu.Unlock()
		for i := range total {
			if n := seen[fmt.Sprintf("out:in-%d", i)]; n != 1 {
				t.Errorf("input %d is in the output %d times", i, n)
			}
		}
		if len(seen) != total {
			t.Errorf("output has %d distinct messages, want %d", len(seen), total)
		}
		t.Logf("%d inputs over %d SIGKILLs, each exactly once in the output", total, txnCrashRounds)
		c.Close()
	}
}

func newE2EClient(t *testing.T, broker string, txn bool) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker, OperationTimeout: 20 * time.Second,
		EnableTransaction: txn, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func produceInputs(t *testing.T, c pulsar.Client, topic string, from, n int) {
	t.Helper()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := from; i < from+n; i++ {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "in-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// runTransform processes inputs in transactions of up to 3 messages until kill says it
// killed the broker (it is asked before each client operation, with the operation's
// number) or stop closes. Errors end the run: the broker is gone.
func runTransform(c pulsar.Client, in, out string, kill func(step int) bool, stop <-chan struct{}) {
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: in, SubscriptionName: "transform",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		return
	}
	defer func() { cons.Close() }()
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: out, SendTimeout: 20 * time.Second})
	if err != nil {
		return
	}
	defer prod.Close()
	step := 0
	next := func() bool { step++; return kill(step - 1) }
	for {
		select {
		case <-stop:
			return
		default:
		}
		if next() {
			return
		}
		tx, err := c.NewTransaction(3 * time.Second)
		if err != nil {
			return
		}
		var batch []pulsar.Message
		for len(batch) < 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			m, err := cons.Receive(ctx)
			cancel()
			if err != nil {
				break
			}
			batch = append(batch, m)
		}
		if len(batch) == 0 {
			_ = tx.Abort(context.Background())
			continue
		}
		ok := true
		for _, m := range batch {
			if next() {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_, err := prod.Send(ctx, &pulsar.ProducerMessage{Transaction: tx, Payload: append([]byte("out:"), m.Payload()...)})
			cancel()
			if err != nil {
				return
			}
			if next() {
				return
			}
			if err := cons.AckWithTxn(m, tx); err != nil {
				ok = false
				break
			}
		}
		if next() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if ok {
			err = tx.Commit(ctx)
		} else {
			err = tx.Abort(ctx)
		}
		cancel()
		if err != nil || !ok {
			// Cut off, or refused: whatever the broker decided holds; inputs not
			// acknowledged by a commit come back.
			select {
			case <-stop:
				return
			default:
			}
			cons.Close()
			if cons, err = c.Subscribe(pulsar.ConsumerOptions{Topic: in, SubscriptionName: "transform"}); err != nil {
				return
			}
		}
	}
}
