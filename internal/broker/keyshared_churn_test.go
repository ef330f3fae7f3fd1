package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/topics"
)

// TestKeySharedOrderUnderChurn: consumers join and leave a Key_Shared subscription while
// messages flow. Per key, no message is ever seen before an earlier one of its key has
// been seen (redeliveries of already seen messages are allowed): new consumers wait for
// the earlier messages of their keys, and released messages come back in order.
func TestKeySharedOrderUnderChurn(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/ks-churn"
	const keys, perKey = 8, 40
	var mu sync.Mutex
	maxSeen := map[string]int{}
	firsts := 0
	var violation string
	var wg sync.WaitGroup
	start := func(name string) pulsar.Consumer {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "ks", Type: pulsar.KeyShared,
			Name: name, ReceiverQueueSize: 4, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ctx, cancel := context.WithTimeout(context.Background(), waitFor)
				m, err := c.Receive(ctx)
				cancel()
				if err != nil {
					return // closed
				}
				var seq int
				fmt.Sscan(string(m.Payload()), &seq)
				mu.Lock()
				prev, ok := maxSeen[m.Key()]
				if !ok {
					prev = -1
				}
				switch {
				case seq > prev+1 && violation == "":
					violation = fmt.Sprintf("key %s: %d seen after %d (consumer %s)", m.Key(), seq, prev, name)
				case seq == prev+1:
					maxSeen[m.Key()] = seq
					firsts++
				}
				mu.Unlock()
				time.Sleep(time.Millisecond) // slow enough that consumers hold unacked messages
				_ = c.Ack(m)
			}
		}()
		return c
	}
	live := []pulsar.Consumer{start("c0"), start("c1")}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for s := 0; s < perKey; s++ {
		for k := 0; k < keys; k++ {
			p.SendAsync(context.Background(), &pulsar.ProducerMessage{Key: fmt.Sprint("key-", k), Payload: []byte(fmt.Sprint(s))},
				func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
					if err != nil {
						t.Error(err)
					}
				})
		}
		switch s {
		case 8:
			live = append(live, start("c2"))
		case 16:
			live[0].Close()
			live = live[1:]
		case 24:
			live = append(live, start("c3"))
		case 32:
			live[0].Close()
			live = live[1:]
		}
		if s%4 == 0 {
			if err := p.FlushWithCtx(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := p.FlushWithCtx(context.Background()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(waitFor); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n, v := firsts, violation
		mu.Unlock()
		if v != "" {
			t.Fatal(v)
		}
		if n == keys*perKey {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("saw %d of %d messages", n, keys*perKey)
		}
	}
	for _, c := range live {
		c.Close()
	}
	wg.Wait()
}

// TestKeySharedSticky: consumers declare hash ranges; each key goes to the consumer whose
// range holds its slot, and overlapping ranges are refused.
func TestKeySharedSticky(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topic := "persistent://public/default/ks-sticky"
	ranges := [][]int{{0, 32767}, {32768, 65535}}
	var cs []pulsar.Consumer
	for i, r := range ranges {
		pol, err := pulsar.NewKeySharedPolicySticky(r)
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "st", Type: pulsar.KeyShared,
			Name: fmt.Sprint("c", i), KeySharedPolicy: pol})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cs = append(cs, c)
	}
	pol, _ := pulsar.NewKeySharedPolicySticky([]int{30000, 40000})
	if _, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "st", Type: pulsar.KeyShared,
		KeySharedPolicy: pol}); err == nil {
		t.Fatal("overlapping sticky range accepted")
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "m", 28) // keys k0..k6
	for i, c := range cs {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			m, err := c.Receive(ctx)
			cancel()
			if err != nil {
				break
			}
			slot := topics.KeyHashSlot(m.Key())
			if slot < ranges[i][0] || slot > ranges[i][1] {
				t.Fatalf("key %s (slot %d) went to consumer %d with range %v", m.Key(), slot, i, ranges[i])
			}
			_ = c.Ack(m)
		}
	}
}
