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

// activeRecorder is a consumer event listener keeping each partition's latest state.
type activeRecorder struct {
	mu     sync.Mutex
	name   string
	states map[int32]bool
}

func (r *activeRecorder) BecameActive(_ pulsar.Consumer, _ string, p int32)   { r.set(p, true) }
func (r *activeRecorder) BecameInactive(_ pulsar.Consumer, _ string, p int32) { r.set(p, false) }
func (r *activeRecorder) set(p int32, v bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states[p] = v
}

func (r *activeRecorder) active() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int32
	for p := int32(0); p < 8; p++ {
		if r.states[p] {
			out = append(out, p)
		}
	}
	return fmt.Sprint(out)
}

// TestFailoverActiveConsumerChange: on a partitioned topic the active consumer of
// partition i is consumer i % n in (priority, name) order, and every consumer hears
// ACTIVE_CONSUMER_CHANGE whenever that changes.
func TestFailoverActiveConsumerChange(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	name, _ := topics.ParseName("persistent://public/default/fo-active")
	if err := b.s.topics.CreateTopic(context.Background(), name, 2); err != nil {
		t.Fatal(err)
	}
	recs := map[string]*activeRecorder{}
	subscribe := func(n string) pulsar.Consumer {
		r := &activeRecorder{name: n, states: map[int32]bool{}}
		recs[n] = r
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: name.String(), SubscriptionName: "f",
			Type: pulsar.Failover, Name: n, EventListener: r})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	expect := func(step string, want map[string]string) {
		t.Helper()
		for deadline := time.Now().Add(waitFor); ; time.Sleep(10 * time.Millisecond) {
			ok := true
			for n, w := range want {
				if recs[n].active() != w {
					ok = false
				}
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				got := map[string]string{}
				for n := range want {
					got[n] = recs[n].active()
				}
				t.Fatalf("%s: active partitions %v, want %v", step, got, want)
			}
		}
	}
	ca := subscribe("a")
	expect("one consumer", map[string]string{"a": "[0 1]"})
	cb := subscribe("b")
	defer cb.Close()
	expect("a and b", map[string]string{"a": "[0]", "b": "[1]"})
	ca.Close()
	expect("a left", map[string]string{"b": "[0 1]"})
	cc := subscribe("c")
	defer cc.Close()
	expect("b and c", map[string]string{"b": "[0]", "c": "[1]"})
}
