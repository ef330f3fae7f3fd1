package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

func TestKeyShared(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/keyshared"
	const consumers, keys, perKey = 3, 12, 20
	type rec struct {
		consumer int
		seq      int
	}
	var mu sync.Mutex
	got := map[string][]rec{}
	var cs []pulsar.Consumer
	for i := 0; i < consumers; i++ {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "ks", Type: pulsar.KeyShared,
			Name: fmt.Sprint("c", i), ReceiverQueueSize: 5})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cs = append(cs, c)
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatcherBuilderType: pulsar.KeyBasedBatchBuilder})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for s := 0; s < perKey; s++ {
		for k := 0; k < keys; k++ {
			wg.Add(1)
			p.SendAsync(ctx, &pulsar.ProducerMessage{Key: fmt.Sprint("key-", k), Payload: []byte(fmt.Sprint(s))},
				func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
					if err != nil {
						t.Error(err)
					}
					wg.Done()
				})
		}
	}
	if err := p.FlushWithCtx(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var rwg sync.WaitGroup
	total := 0
	for i, c := range cs {
		rwg.Add(1)
		go func(i int, c pulsar.Consumer) {
			defer rwg.Done()
			for {
				rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				m, err := c.Receive(rctx)
				cancel()
				if err != nil {
					return
				}
				var seq int
				fmt.Sscan(string(m.Payload()), &seq)
				mu.Lock()
				got[m.Key()] = append(got[m.Key()], rec{i, seq})
				total++
				mu.Unlock()
				_ = c.Ack(m)
			}
		}(i, c)
	}
	rwg.Wait()
	if total != keys*perKey {
		t.Fatalf("received %d messages, want %d", total, keys*perKey)
	}
	used := map[int]bool{}
	for k, rs := range got {
		for i, r := range rs {
			if r.consumer != rs[0].consumer {
				t.Fatalf("key %s went to consumers %d and %d", k, rs[0].consumer, r.consumer)
			}
			if r.seq != i {
				t.Fatalf("key %s: message %d has sequence %d (order broken)", k, i, r.seq)
			}
		}
		used[rs[0].consumer] = true
	}
	if len(used) < 2 {
		t.Fatalf("all keys went to %d consumer(s)", len(used))
	}
}
