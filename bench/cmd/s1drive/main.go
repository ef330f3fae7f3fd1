// Command s1drive drives the harness's S1 shape (many topics at a fixed total rate: 4
// producer and 4 consumer clients, one producer and one exclusive consumer per topic,
// batching off, 100 B, open loop) against a broker that is already running, so the broker
// can be profiled while it runs (bench-compare starts and stops its own). It prints the setup
// time, the acknowledged rate, publish latency from each message's due time, and, with -pid,
// the broker's CPU seconds per million acknowledged messages (docs/benchmarks-history.md,
// "Scaling S1 at 10,000 topics").
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

func main() {
	url := flag.String("u", "pulsar://127.0.0.1:6650", "broker service URL")
	topics := flag.Int("t", 10000, "topics (persistent://public/default/<base>-0 ...)")
	rate := flag.Float64("r", 10000, "total publish rate, msg/s")
	warm := flag.Duration("warmup", 10*time.Second, "load before the measurement window")
	meas := flag.Duration("measure", 30*time.Second, "measurement window")
	base := flag.String("base", "s1", "topic name prefix")
	pid := flag.Int("pid", 0, "broker process id, for its CPU seconds from /proc (0: not measured)")
	flag.Parse()
	if err := run(*url, *topics, *rate, *warm, *meas, *base, *pid); err != nil {
		fmt.Fprintln(os.Stderr, "s1drive:", err)
		os.Exit(1)
	}
}

func run(url string, topics int, rate float64, warm, meas time.Duration, base string, pid int) error {
	const n = 4
	clients := func() ([]pulsar.Client, error) {
		var cs []pulsar.Client
		for range n {
			c, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, ConnectionTimeout: 30 * time.Second, OperationTimeout: 60 * time.Second, Logger: plog.DefaultNopLogger()})
			if err != nil {
				return nil, fmt.Errorf("client: %w", err)
			}
			cs = append(cs, c)
		}
		return cs, nil
	}
	name := func(p int) string { return "persistent://public/default/" + base + "-" + strconv.Itoa(p) }
	t0 := time.Now()
	ch := make(chan pulsar.ConsumerMessage, 4000)
	var recv atomic.Int64
	// par runs f(0..k-1) 16 at a time (as the harness's setup does) and returns an error.
	par := func(k int, f func(i int) error) error {
		sem := make(chan struct{}, 16)
		var wg sync.WaitGroup
		var once sync.Once
		var first error
		for i := 0; i < k; i++ {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}()
		}
		wg.Wait()
		return first
	}
	cclients, err := clients()
	if err != nil {
		return err
	}
	// Setup on a loaded machine sees timeouts; each subscribe and producer gets 5 tries.
	err = par(topics, func(p int) error {
		var err error
		for try := 0; try < 5; try++ {
			_, err = cclients[p%n].Subscribe(pulsar.ConsumerOptions{Topic: name(p), SubscriptionName: "sub0-c" + strconv.Itoa(p%n), Type: pulsar.Exclusive,
				SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, ReceiverQueueSize: 100, MessageChannel: ch})
			if err == nil {
				return nil
			}
		}
		return fmt.Errorf("subscribe %s: %w", name(p), err)
	})
	if err != nil {
		return err
	}
	for range n {
		go func() {
			for m := range ch {
				recv.Add(1)
				_ = m.Consumer.Ack(m.Message)
			}
		}()
	}
	pclients, err := clients()
	if err != nil {
		return err
	}
	prods := make([]pulsar.Producer, topics)
	err = par(topics, func(p int) error {
		var err error
		for try := 0; try < 5; try++ {
			var pr pulsar.Producer
			pr, err = pclients[p%n].CreateProducer(pulsar.ProducerOptions{Topic: name(p), DisableBatching: true, MaxPendingMessages: 1000, SendTimeout: 30 * time.Second})
			if err == nil {
				prods[p] = pr
				return nil
			}
		}
		return fmt.Errorf("producer %s: %w", name(p), err)
	})
	if err != nil {
		return err
	}
	fmt.Printf("setup %.1fs\n", time.Since(t0).Seconds())
	var mu sync.Mutex
	h := hdrhistogram.New(1, 120_000_000, 3)
	var measuring atomic.Bool
	var acked, failed atomic.Int64
	payload := make([]byte, 100)
	// One sender per producer client, round-robin over its topics, open loop, as the
	// harness's produce does: message i is due at start + i/rate and its latency counts
	// from then, so waiting for the window (1,000 in flight) counts against the broker.
	// failed counts over the whole run, not only the window.
	for c := 0; c < n; c++ {
		go func() {
			interval := float64(time.Second) / (rate / n)
			start := time.Now()
			sem := make(chan struct{}, 1000)
			for seq := 0; ; seq++ {
				due := start.Add(time.Duration(float64(seq) * interval))
				if d := time.Until(due); d > 0 {
					time.Sleep(d)
				}
				sem <- struct{}{}
				p := prods[(seq*n+c)%topics]
				p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
					<-sem
					if err != nil {
						failed.Add(1)
						return
					}
					if measuring.Load() {
						acked.Add(1)
						mu.Lock()
						_ = h.RecordValue(time.Since(due).Microseconds())
						mu.Unlock()
					}
				})
			}
		}()
	}
	time.Sleep(warm)
	measuring.Store(true)
	r0 := recv.Load()
	c0 := cpuSecs(pid)
	time.Sleep(meas)
	measuring.Store(false)
	c1 := cpuSecs(pid)
	r1 := recv.Load()
	mu.Lock()
	fmt.Printf("server CPU s/M acked=%.1f cpu=%.1fs\n", (c1-c0)/float64(acked.Load())*1e6, c1-c0)
	fmt.Printf("topics=%d acked/s=%.0f recv/s=%.0f failed=%d pub p50=%.1fms p99=%.1fms p99.9=%.1fms\n", topics,
		float64(acked.Load())/meas.Seconds(), float64(r1-r0)/meas.Seconds(), failed.Load(),
		float64(h.ValueAtQuantile(50))/1000, float64(h.ValueAtQuantile(99))/1000, float64(h.ValueAtQuantile(99.9))/1000)
	mu.Unlock()
	return nil
}

// cpuSecs is the process's user + system CPU time from /proc/<pid>/stat (fields 14 and 15,
// in USER_HZ = 100 ticks a second on Linux); 0 when pid is 0 or unreadable.
func cpuSecs(pid int) float64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100
}
