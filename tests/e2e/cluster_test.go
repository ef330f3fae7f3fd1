package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/devcluster"
	"github.com/magnetar-io/magnetar/internal/metadata/connect"
	"github.com/magnetar-io/magnetar/internal/ownership"
)

// clusterTTL is the brokers' metadata session TTL in these tests (failover time).
const clusterTTL = 2 * time.Second

// startCluster runs one metadata member, two bookies and two brokers as processes (E/Qw/Qa
// 2/2/2) with a short session TTL; logs are printed if the test fails.
func startCluster(t *testing.T) *devcluster.Cluster {
	t.Helper()
	return startClusterWith(t, 2)
}

func startClusterWith(t *testing.T, bookies int, brokerArgs ...string) *devcluster.Cluster {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := devcluster.Start(ctx, devcluster.Options{
		Binary: binary, Dir: dir, Metadata: 1, Bookies: bookies, Brokers: 2,
		BrokerArgs: append([]string{"--metadata-store-session-timeout-millis", fmt.Sprint(clusterTTL.Milliseconds()),
			"--load-balancer-report-update-min-interval-millis", "500"}, brokerArgs...),
		BookieArgs: []string{"--auto-recovery-daemon-enabled=false"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop(10 * time.Second)
		if t.Failed() {
			procs := append(append(c.Brokers, c.Bookies...), c.Metadata...)
			if c.Proxy != nil {
				procs = append(procs, c.Proxy)
			}
			for _, p := range procs {
				b, _ := os.ReadFile(p.Log())
				lines := strings.Split(string(b), "\n")
				t.Logf("last lines of %s:\n%s", p.Name, strings.Join(lines[max(0, len(lines)-40):], "\n"))
			}
		}
	})
	return c
}

// newClient connects a Go client. Producers in these tests keep batching on:
// pulsar-client-go v0.19.0's unbatched send path races with its own reconnect (grabCnx vs
// internalSingleSend), which -race reports.
func newClient(t *testing.T, url string) pulsar.Client {
	t.Helper()
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, OperationTimeout: 60 * time.Second, ConnectionTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// owners reads the bundle owners through a broker's admin API.
func owners(t *testing.T, httpAddr string) map[string]ownership.OwnerData {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/admin/v2/bundle-owners")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]ownership.OwnerData{}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// ownerOf returns the broker process serving topic (by HTTP lookup, following redirects).
func ownerOf(t *testing.T, c *devcluster.Cluster, topic string) *devcluster.Proc {
	t.Helper()
	path := strings.Replace(topic, "://", "/", 1)
	var res struct {
		BrokerURL string `json:"brokerUrl"`
	}
	waitFor(t, "lookup of "+topic, func() (bool, error) {
		var err error
		for _, b := range c.Brokers { // any live broker answers (following redirects)
			var resp *http.Response
			if resp, err = http.Get("http://" + b.HTTP + "/lookup/v2/topic/" + path); err != nil {
				continue
			}
			ok := resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&res) == nil
			resp.Body.Close()
			if ok {
				return true, nil
			}
		}
		return false, err
	})
	for _, p := range c.Brokers {
		if "pulsar://"+p.Addr == res.BrokerURL {
			return p
		}
	}
	t.Fatalf("owner %s of %s is not a broker of the cluster", res.BrokerURL, topic)
	return nil
}

func other(c *devcluster.Cluster, p *devcluster.Proc) *devcluster.Proc {
	if c.Brokers[0] == p {
		return c.Brokers[1]
	}
	return c.Brokers[0]
}

// TestClusterServesTopicsThroughEitherBroker: topics spread over both brokers; producing
// through one broker and consuming through the other works for every topic (LOOKUP
// redirects), and admin calls sent to the wrong broker are redirected to the owner.
func TestClusterServesTopicsThroughEitherBroker(t *testing.T) {
	c := startCluster(t)
	const topics = 8
	for i := range topics {
		topic := fmt.Sprintf("persistent://public/default/spread-%d", i)
		owner := ownerOf(t, c, topic)
		far := other(c, owner)
		// Produce through the broker that does not own the topic, consume through the owner's
		// peer as well: every client connection starts at the wrong broker.
		roundTrip(t, newClient(t, "pulsar://"+far.Addr), newClient(t, "pulsar://"+far.Addr), far.Name,
			topic, pulsar.SubscriptionPositionEarliest, fmt.Sprintf("%d-", i), 5)

		// Admin through the wrong broker: 307 to the owner, and the stats come from there.
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		statsPath := "/admin/v2/" + strings.Replace(topic, "://", "/", 1) + "/stats"
		resp, err := noRedirect.Get("http://" + far.HTTP + statsPath)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTemporaryRedirect || !strings.HasPrefix(resp.Header.Get("Location"), "http://"+owner.HTTP+"/") {
			t.Fatalf("stats via %s: %d %s, want 307 to %s", far.Name, resp.StatusCode, resp.Header.Get("Location"), owner.HTTP)
		}
		if n, err := msgInCounter("http://" + far.HTTP + statsPath); err != nil || n != 5 {
			t.Fatalf("stats via redirect: %d %v, want msgInCounter 5", n, err)
		}
	}
	// Through the proxy: clients and admin reach every topic wherever it is owned.
	viaProxy := newClient(t, c.ClientServiceURL())
	for i := range topics {
		topic := fmt.Sprintf("persistent://public/default/spread-%d", i)
		roundTrip(t, viaProxy, viaProxy, "proxy", topic, pulsar.SubscriptionPositionLatest, fmt.Sprintf("proxy-%d-", i), 3)
		if n, err := msgInCounter("http://" + c.Proxy.HTTP + "/admin/v2/" + strings.Replace(topic, "://", "/", 1) + "/stats"); err != nil || n != 8 {
			t.Fatalf("stats of %s via proxy: %d %v, want msgInCounter 8", topic, n, err)
		}
	}

	per := map[string]int{}
	for _, od := range owners(t, c.Brokers[0].HTTP) {
		per[od.NativeURL]++
	}
	if len(per) != 2 {
		t.Fatalf("bundles owned by %v, want both brokers to own some", per)
	}
}

// roundTrip subscribes (subscription "s") through cons, sends n messages prefix0..prefixN-1
// through prod and receives and acknowledges them in order; via names the path in errors.
func roundTrip(t *testing.T, prod, cons pulsar.Client, via, topic string, pos pulsar.SubscriptionInitialPosition, prefix string, n int) {
	t.Helper()
	c, err := cons.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pos})
	if err != nil {
		t.Fatalf("subscribe %s via %s: %v", topic, via, err)
	}
	defer c.Close()
	p, err := prod.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatalf("producer %s via %s: %v", topic, via, err)
	}
	defer p.Close()
	for j := range n {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "%s%d", prefix, j)}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for j := range n {
		m, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("receive %s via %s: %v", topic, via, err)
		}
		if got, want := string(m.Payload()), fmt.Sprintf("%s%d", prefix, j); got != want {
			t.Fatalf("%s via %s: got %q want %q", topic, via, got, want)
		}
		_ = c.Ack(m)
	}
}

// msgInCounter reads msgInCounter from a topic stats URL (redirects followed).
func msgInCounter(statsURL string) (int64, error) {
	resp, err := http.Get(statsURL)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var st struct {
		MsgInCounter int64 `json:"msgInCounter"`
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st.MsgInCounter, err
}

// streamResult is what a producing stream recorded.
type streamResult struct {
	mu    sync.Mutex
	acked map[string]pulsar.MessageID // payload -> id the broker acknowledged
}

// produceStream sends payloads prefix-0.. asynchronously until stop, recording every
// acknowledged one; it returns after every callback has run.
func produceStream(t *testing.T, prod pulsar.Producer, prefix string, stop <-chan struct{}, res *streamResult, onAck func(pulsar.MessageID)) {
	t.Helper()
	var wg sync.WaitGroup
	for i := 0; ; i++ {
		select {
		case <-stop:
			wg.Wait()
			return
		default:
		}
		payload := fmt.Sprintf("%s-%d", prefix, i)
		wg.Add(1)
		prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload)},
			func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				defer wg.Done()
				if err != nil {
					return
				}
				res.mu.Lock()
				res.acked[payload] = id
				res.mu.Unlock()
				if onAck != nil {
					onAck(id)
				}
			})
		time.Sleep(5 * time.Millisecond)
	}
}

// checkedStream subscribes "check" at the earliest position of topic (so it sees every
// message the stream will produce) and creates the stream's producer.
func checkedStream(t *testing.T, cl pulsar.Client, topic string, sendTimeout time.Duration) (pulsar.Consumer, pulsar.Producer, *streamResult) {
	t.Helper()
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "check",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, SendTimeout: sendTimeout})
	if err != nil {
		t.Fatal(err)
	}
	return cons, prod, &streamResult{acked: map[string]pulsar.MessageID{}}
}

// checkAllConsumed reads the topic from the start on a subscription created before the
// stream and checks that every acknowledged message is there with the id it was
// acknowledged with.
func checkAllConsumed(t *testing.T, cons pulsar.Consumer, acked map[string]pulsar.MessageID) {
	t.Helper()
	got := map[string]pulsar.MessageID{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for missing := len(acked); missing > 0; {
		m, err := cons.Receive(ctx)
		if err != nil {
			var lost []string
			for p := range acked {
				if _, ok := got[p]; !ok {
					lost = append(lost, p)
				}
			}
			t.Fatalf("%d of %d acknowledged messages never consumed (e.g. %v): %v", len(lost), len(acked), lost[:min(5, len(lost))], err)
		}
		_ = cons.Ack(m)
		p := string(m.Payload())
		if _, dup := got[p]; dup {
			continue // redelivery or a resent duplicate: at-least-once
		}
		got[p] = m.ID()
		if id, ok := acked[p]; ok {
			missing--
			if id.LedgerID() != m.ID().LedgerID() || id.EntryID() != m.ID().EntryID() {
				// A duplicate stored twice may be consumed first at another id; only an
				// acknowledged id that does not exist in the log is a loss.
				t.Logf("%s acknowledged as %v, first consumed at %v (duplicate)", p, id, m.ID())
			}
		}
	}
}

// TestClusterOwnerSIGKILLLosesNoAcknowledgedMessage: the owner broker is SIGKILLed during a
// stream; its lease expires, the other broker takes the topic (fencing the dead owner's
// ledger), the producer and consumer move on their own, and every acknowledged message is
// consumed afterwards. It logs the failover time (SIGKILL to first acknowledged publish on
// the new owner).
func TestClusterOwnerSIGKILLLosesNoAcknowledgedMessage(t *testing.T) {
	c := startCluster(t)
	topic := "persistent://public/default/failover-kill"
	owner := ownerOf(t, c, topic)
	cl := newClient(t, c.BrokerServiceURL())
	cons, prod, res := checkedStream(t, cl, topic, 60*time.Second)
	var (
		mu       sync.Mutex
		killedAt time.Time
		firstNew time.Time
		count    int
		ledger   int64 // of the last ack before the kill
	)
	moved := make(chan struct{})
	onAck := func(id pulsar.MessageID) {
		mu.Lock()
		defer mu.Unlock()
		count++
		if killedAt.IsZero() {
			ledger = id.LedgerID()
		} else if firstNew.IsZero() && id.LedgerID() != ledger {
			// The first ack from a ledger the new owner created (receipts of the dead owner
			// still in the socket may arrive after the kill; they name its ledger).
			firstNew = time.Now()
			close(moved)
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { produceStream(t, prod, "k", stop, res, onAck); close(done) }()
	waitFor(t, "100 acknowledged publishes", func() (bool, error) { mu.Lock(); defer mu.Unlock(); return count >= 100, nil })
	mu.Lock()
	killedAt = time.Now()
	mu.Unlock()
	owner.Kill()
	select {
	case <-moved:
	case <-time.After(2 * time.Minute):
		t.Fatal("no publish acknowledged after the owner was killed")
	}
	mu.Lock()
	failover := firstNew.Sub(killedAt)
	mu.Unlock()
	t.Logf("failover: SIGKILL of %s to first acknowledged publish on the new owner: %v (lease TTL %v)", owner.Name, failover.Round(time.Millisecond), clusterTTL)
	waitFor(t, "100 more acknowledged publishes", func() (bool, error) { mu.Lock(); defer mu.Unlock(); return count >= 200, nil })
	close(stop)
	<-done
	if now := ownerOf(t, c, topic); now == owner {
		t.Fatalf("topic still owned by the killed broker")
	}
	res.mu.Lock()
	acked := res.acked
	res.mu.Unlock()
	checkAllConsumed(t, cons, acked)
}

// TestClusterPausedOwnerAcknowledgesNothingAfterFence: the owner is SIGSTOPped past its
// lease with publishes in flight, the other broker takes the topic and fences its ledger and
// acknowledges publishes of its own, then the old owner resumes (SIGCONT). It must
// acknowledge nothing it could not store: every publish acknowledged by anyone is consumed at
// its acknowledged id afterwards, and the resumed broker gives up the topic.
func TestClusterPausedOwnerAcknowledgesNothingAfterFence(t *testing.T) {
	c := startCluster(t)
	topic := "persistent://public/default/failover-stop"
	owner := ownerOf(t, c, topic)
	peer := other(c, owner)
	cl := newClient(t, c.BrokerServiceURL())
	cons, stale, res := checkedStream(t, cl, topic, 90*time.Second)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { produceStream(t, stale, "old", stop, res, nil); close(done) }()
	waitFor(t, "50 acknowledged publishes", func() (bool, error) { res.mu.Lock(); defer res.mu.Unlock(); return len(res.acked) >= 50, nil })

	if err := owner.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(clusterTTL + 2*time.Second) // the lease runs out; the stale producer's sends pile up at the paused owner
	// A client of the peer only: its lookup finds the bundle free and the peer takes it,
	// recovering (fencing) the paused owner's ledger.
	fresh := newClient(t, "pulsar://"+peer.Addr)
	newProd, err := fresh.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		_ = owner.Signal(syscall.SIGCONT)
		t.Fatalf("producer on the new owner: %v", err)
	}
	for i := range 20 {
		payload := fmt.Sprintf("new-%d", i)
		id, err := newProd.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload)})
		if err != nil {
			_ = owner.Signal(syscall.SIGCONT)
			t.Fatalf("publish on the new owner: %v", err)
		}
		res.mu.Lock()
		res.acked[payload] = id
		res.mu.Unlock()
	}
	if err := owner.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Let the resumed owner process what piled up (its adds fail on the fenced ledger), notice
	// its lost session and send its clients away; the stale producer then resends to the peer.
	res.mu.Lock()
	before := len(res.acked)
	res.mu.Unlock()
	waitFor(t, "the stale producer publishing through the new owner", func() (bool, error) {
		res.mu.Lock()
		defer res.mu.Unlock()
		return len(res.acked) >= before+50, nil
	})
	close(stop)
	<-done
	waitFor(t, "the resumed owner noticing its lost session", func() (bool, error) {
		b, err := os.ReadFile(owner.Log())
		return strings.Contains(string(b), "metadata session lost"), err
	})
	// Which comes first after SIGCONT is a race: the piled-up SENDs reach the fenced ledger
	// (storage failure), or the lost session unloads the topic first (producer gone). Either
	// way nothing may be acknowledged, which checkAllConsumed verifies.
	if b, err := os.ReadFile(owner.Log()); err == nil {
		t.Logf("resumed owner: %d sends failed on the fenced ledger, %d refused after the unload",
			strings.Count(string(b), "topic storage failed"), strings.Count(string(b), "is not connected"))
	}
	if now := ownerOf(t, c, topic); now != peer {
		t.Fatalf("topic owned by %s after the pause, want %s", now.Name, peer.Name)
	}
	res.mu.Lock()
	acked := res.acked
	res.mu.Unlock()
	checkAllConsumed(t, cons, acked)
}

// TestClusterOwnerSIGTERMMovesClientsWithoutErrors: the owner is stopped gracefully during a
// stream; it unloads its topics and releases its bundles before exiting, so the producer
// moves to the other broker without a single failed send, and everything acknowledged is
// consumed.
func TestClusterOwnerSIGTERMMovesClientsWithoutErrors(t *testing.T) {
	c := startCluster(t)
	topic := "persistent://public/default/failover-term"
	owner := ownerOf(t, c, topic)
	cl := newClient(t, c.BrokerServiceURL())
	cons, prod, res := checkedStream(t, cl, topic, 60*time.Second)
	stop := make(chan struct{})
	done := make(chan struct{})
	var failed sync.Map
	go func() {
		var wg sync.WaitGroup
		for i := 0; ; i++ {
			select {
			case <-stop:
				wg.Wait()
				close(done)
				return
			default:
			}
			payload := fmt.Sprintf("t-%d", i)
			wg.Add(1)
			prod.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload)},
				func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
					defer wg.Done()
					if err != nil {
						failed.Store(payload, err)
						return
					}
					res.mu.Lock()
					res.acked[payload] = id
					res.mu.Unlock()
				})
			time.Sleep(5 * time.Millisecond)
		}
	}()
	count := func() int { res.mu.Lock(); defer res.mu.Unlock(); return len(res.acked) }
	waitFor(t, "100 acknowledged publishes", func() (bool, error) { return count() >= 100, nil })
	owner.Stop(30 * time.Second)
	before := count()
	waitFor(t, "100 publishes acknowledged by the other broker", func() (bool, error) { return count() >= before+100, nil })
	close(stop)
	<-done
	failed.Range(func(k, v any) bool {
		t.Errorf("send %v failed across the graceful move: %v", k, v)
		return true
	})
	if b, err := os.ReadFile(owner.Log()); err != nil || !strings.Contains(string(b), "bundles released") {
		t.Errorf("the stopped owner did not release its bundles (%v)", err)
	}
	res.mu.Lock()
	acked := res.acked
	res.mu.Unlock()
	checkAllConsumed(t, cons, acked)
}

// TestClusterBundleUnloadAndOwnerRestart: an admin unload of a bundle (sent to the broker
// that does not own it, so it is redirected) releases it and its topic is served again on
// the next lookup; a split of its bundle (also redirected) moves it again; then the owner is SIGKILLed and restarted at once on the same address:
// it must not mistake its predecessor's still-living ownership key for its own, and serves
// the topic after that lease expired.
func TestClusterBundleUnloadAndOwnerRestart(t *testing.T) {
	c := startCluster(t)
	topic := "persistent://public/default/unload-restart"
	owner := ownerOf(t, c, topic)
	cl := newClient(t, "pulsar://"+owner.Addr)
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	send := func(p pulsar.Producer, payload string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload)}); err != nil {
			t.Fatalf("send %s: %v", payload, err)
		}
	}
	send(prod, "before-unload")
	var bundle string
	for b, od := range owners(t, owner.HTTP) {
		if od.NativeURL == "pulsar://"+owner.Addr {
			bundle = b
		}
	}
	rng := strings.TrimPrefix(bundle, "public/default/") // "0x..._0x..."
	req, _ := http.NewRequest(http.MethodPut, "http://"+other(c, owner).HTTP+"/admin/v2/namespaces/public/default/"+rng+"/unload", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("unload bundle %s: %d", rng, resp.StatusCode)
	}
	send(prod, "after-unload") // the producer was told to reconnect and looked the topic up again

	// Split the topic's bundle (same range: nothing split it yet), again through the broker
	// that does not own it.
	owner = ownerOf(t, c, topic)
	req, _ = http.NewRequest(http.MethodPut, "http://"+other(c, owner).HTTP+"/admin/v2/namespaces/public/default/"+rng+"/split", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("split bundle %s: %d", rng, resp.StatusCode)
	}
	send(prod, "after-split")

	now := ownerOf(t, c, topic)
	now.Kill()
	if err := now.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := now.WaitServing(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	again := newClient(t, "pulsar://"+now.Addr)
	p2, err := again.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatalf("producer through the restarted broker: %v", err)
	}
	send(p2, "after-restart")
	cons, err := again.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "check",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"before-unload", "after-unload", "after-split", "after-restart"}
	got := map[string]bool{}
	for len(got) < len(want) {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("got %v of %v: %v", got, want, err)
		}
		got[string(m.Payload())] = true
		_ = cons.Ack(m)
	}
}

// TestClusterBookieSIGKILLLosesNoAcknowledgedMessage: with three bookies and E/Qw/Qa
// 2/2/2, a bookie of the topic's ensemble is SIGKILLed during a stream through the cluster;
// the ledger client replaces it (ensemble change) and every acknowledged message is
// consumed afterwards.
func TestClusterBookieSIGKILLLosesNoAcknowledgedMessage(t *testing.T) {
	c := startClusterWith(t, 3)
	topic := "persistent://public/default/bookie-kill"
	cl := newClient(t, c.BrokerServiceURL())
	cons, prod, res := checkedStream(t, cl, topic, 60*time.Second)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { produceStream(t, prod, "b", stop, res, nil); close(done) }()
	count := func() int { res.mu.Lock(); defer res.mu.Unlock(); return len(res.acked) }
	waitFor(t, "100 acknowledged publishes", func() (bool, error) { return count() >= 100, nil })
	// Kill a bookie of the current ledger's ensemble (two of the three hold it).
	res.mu.Lock()
	var ledgerID int64
	for _, id := range res.acked {
		ledgerID = max(ledgerID, id.LedgerID())
	}
	res.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := connect.Open(ctx, c.MetadataURL, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ensemble := ledgerEnsemble(t, ctx, store, ledgerID)
	var victim *devcluster.Proc
	for _, b := range c.Bookies {
		if b.Addr == ensemble[0] {
			victim = b
		}
	}
	if victim == nil {
		t.Fatalf("ensemble %v of ledger %d names no bookie of the cluster", ensemble, ledgerID)
	}
	victim.Kill()
	before := count()
	waitFor(t, "100 publishes acknowledged after the bookie died", func() (bool, error) { return count() >= before+100, nil })
	close(stop)
	<-done
	res.mu.Lock()
	acked := res.acked
	res.mu.Unlock()
	checkAllConsumed(t, cons, acked)
}
