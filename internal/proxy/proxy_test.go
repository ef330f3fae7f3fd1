package proxy_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	paconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/proxy"
	"github.com/magnetar-io/magnetar/internal/standalone"
)

// sa is one real standalone (embedded etcd, bookie, broker, HTTP) shared by the tests of
// this package; each test starts its own proxy in front of it.
var (
	sa     *standalone.Standalone
	saOnce sync.Once
	saErr  error
	saDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sa != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_ = sa.Close(ctx)
		cancel()
	}
	if saDir != "" {
		_ = os.RemoveAll(saDir)
	}
	os.Exit(code)
}

func standaloneForTest(t *testing.T) *standalone.Standalone {
	t.Helper()
	saOnce.Do(func() {
		saDir, saErr = os.MkdirTemp("", "magnetar-proxy-test-")
		if saErr != nil {
			return
		}
		cfg := config.DefaultStandaloneConfig()
		cfg.DataDir = filepath.Join(saDir, "data")
		cfg.MetadataListenClient = "http://127.0.0.1:0"
		cfg.MetadataListenPeer = "http://127.0.0.1:0"
		cfg.BookieAddress = "127.0.0.1:0"
		cfg.Broker.BindAddress = "127.0.0.1"
		cfg.Broker.ServicePort = 0
		cfg.Broker.WebServicePort = 0
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		sa, saErr = standalone.Start(ctx, cfg, nil)
	})
	if saErr != nil {
		t.Fatalf("standalone: %v", saErr)
	}
	return sa
}

// proxyConfig is a proxy on free loopback ports with no broker configured.
func proxyConfig() config.ProxyConfig {
	cfg := config.DefaultProxyConfig()
	cfg.BindAddress = "127.0.0.1"
	cfg.ServicePort = 0
	cfg.WebServicePort = 0
	return cfg
}

type testProxy struct {
	*proxy.Proxy
	reg *prometheus.Registry
}

func startProxy(t *testing.T, cfg config.ProxyConfig, store metadata.Store) testProxy {
	t.Helper()
	reg := prometheus.NewRegistry()
	p, err := proxy.Start(context.Background(), proxy.Options{Config: cfg, Store: store, Registerer: reg, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return testProxy{Proxy: p, reg: reg}
}

// proxyInFront starts a proxy configured with the standalone's URLs (no metadata store).
func proxyInFront(t *testing.T) (*standalone.Standalone, testProxy) {
	s := standaloneForTest(t)
	cfg := proxyConfig()
	cfg.BrokerServiceURL = "pulsar://" + s.BrokerAddr()
	cfg.BrokerWebServiceURL = "http://" + s.HTTPAddr()
	return s, startProxy(t, cfg, nil)
}

func clientVia(t *testing.T, p testProxy) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + p.Addr(), OperationTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// produceConsume sends n messages on topic through c and receives them all on a
// subscription created first, checking the payload set.
func produceConsume(t *testing.T, c pulsar.Client, topic string, n int) {
	t.Helper()
	ctx := testCtx(t)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	must(t, "subscribe", err)
	defer cons.Close()
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	must(t, "producer", err)
	defer prod.Close()
	var wg sync.WaitGroup
	var sendErr error
	var mu sync.Mutex
	for i := range n {
		wg.Add(1)
		prod.SendAsync(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "m%d", i)}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				sendErr = err
				mu.Unlock()
			}
		})
	}
	must(t, "flush", prod.FlushWithCtx(ctx))
	wg.Wait()
	must(t, "send", sendErr)
	seen := map[string]bool{}
	for len(seen) < n {
		m, err := cons.Receive(ctx)
		must(t, "receive", err)
		seen[string(m.Payload())] = true
		must(t, "ack", cons.Ack(m))
	}
	for i := range n {
		if !seen[fmt.Sprintf("m%d", i)] {
			t.Fatalf("message m%d not received", i)
		}
	}
}

func TestProduceConsumeThroughProxy(t *testing.T) {
	_, p := proxyInFront(t)
	c := clientVia(t, p)
	produceConsume(t, c, "persistent://public/default/proxy-basic", 200)

	// A reader from the start sees the same messages, in order.
	ctx := testCtx(t)
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: "persistent://public/default/proxy-basic", StartMessageID: pulsar.EarliestMessageID()})
	must(t, "reader", err)
	defer r.Close()
	for i := range 200 {
		m, err := r.Next(ctx)
		must(t, "reader next", err)
		if got := string(m.Payload()); got != fmt.Sprintf("m%d", i) {
			t.Fatalf("reader message %d: %q", i, got)
		}
	}
	if n := metricValue(t, p, "pulsar_proxy_spliced_connections"); n < 1 {
		t.Fatalf("no connection was spliced through the proxy (%v)", n)
	}
	if n := metricValue(t, p, "pulsar_proxy_lookup_requests"); n < 1 {
		t.Fatalf("no lookup went through the proxy (%v)", n)
	}
}

// metricValue sums a counter or gauge of the proxy's registry.
func metricValue(t *testing.T, p testProxy, name string) float64 {
	t.Helper()
	mfs, err := p.reg.Gather()
	must(t, "gather", err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			v := 0.0
			for _, m := range mf.GetMetric() {
				v += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
			return v
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

func adminVia(t *testing.T, p testProxy) pa.Client {
	t.Helper()
	a, err := pa.New(&paconfig.Config{WebServiceURL: "http://" + p.HTTPAddr()})
	must(t, "admin client", err)
	return a
}

func TestPartitionedTopicThroughProxy(t *testing.T) {
	_, p := proxyInFront(t)
	a := adminVia(t, p)
	tn, err := utils.GetTopicName("persistent://public/default/proxy-part")
	must(t, "topic name", err)
	must(t, "create partitioned", a.Topics().Create(*tn, 3))
	c := clientVia(t, p)
	parts, err := c.TopicPartitions(tn.String())
	must(t, "partitions", err)
	if len(parts) != 3 {
		t.Fatalf("partitions %v", parts)
	}
	produceConsume(t, c, tn.String(), 90)
}

func TestPulsarAdminThroughProxy(t *testing.T) {
	_, p := proxyInFront(t)
	a := adminVia(t, p)
	clusters, err := a.Clusters().List()
	must(t, "clusters", err)
	if len(clusters) != 1 || clusters[0] != "standalone" {
		t.Fatalf("clusters %v", clusters)
	}
	must(t, "create tenant", a.Tenants().Create(utils.TenantData{Name: "proxyt", AllowedClusters: []string{"standalone"}}))
	must(t, "create namespace", a.Namespaces().CreateNamespace("proxyt/ns"))
	nss, err := a.Namespaces().GetNamespaces("proxyt")
	must(t, "namespaces", err)
	if len(nss) != 1 || nss[0] != "proxyt/ns" {
		t.Fatalf("namespaces %v", nss)
	}
	tn, err := utils.GetTopicName("persistent://proxyt/ns/t")
	must(t, "topic name", err)
	must(t, "create topic", a.Topics().Create(*tn, 0))
	c := clientVia(t, p)
	produceConsume(t, c, tn.String(), 10)
	stats, err := a.Topics().GetStats(*tn)
	must(t, "stats", err)
	if stats.MsgCounterIn != 10 {
		t.Fatalf("stats msgInCounter %d", stats.MsgCounterIn)
	}
	// Errors keep their status and reason through the proxy.
	if _, err := a.Namespaces().GetNamespaces("no-such-tenant"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("missing tenant: %v", err)
	}
	// A pattern consumer lists the namespace's topics (GET_TOPICS_OF_NAMESPACE), which the
	// proxy forwards itself.
	pc, err := c.Subscribe(pulsar.ConsumerOptions{TopicsPattern: "persistent://proxyt/ns/.*", SubscriptionName: "pattern",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	must(t, "pattern subscribe", err)
	defer pc.Close()
	m, err := pc.Receive(testCtx(t))
	must(t, "pattern receive", err)
	if !strings.HasPrefix(string(m.Payload()), "m") {
		t.Fatalf("pattern consumer got %q", m.Payload())
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestHTTPEdges(t *testing.T) {
	s, p := proxyInFront(t)
	// /metrics is the proxy's own registry.
	resp, err := http.Get("http://" + p.HTTPAddr() + "/metrics")
	must(t, "metrics", err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "pulsar_proxy_new_connections") {
		t.Fatalf("metrics: %d %.200s", resp.StatusCode, body)
	}
	// A body over httpMaxRequestSize is refused by the proxy itself.
	big := strings.NewReader(strings.Repeat("x", int(config.DefaultProxyConfig().HTTPMaxRequestSize)+1))
	resp, err = http.Post("http://"+p.HTTPAddr()+"/admin/v2/tenants/big", "application/json", big)
	must(t, "big post", err)
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "httpMaxRequestSize") {
		t.Fatalf("oversized body: %d %s", resp.StatusCode, body)
	}
	// No broker web address known: 503 with a reason, not a hang.
	cfg := proxyConfig()
	cfg.BrokerServiceURL = "pulsar://" + s.BrokerAddr()
	noWeb := startProxy(t, cfg, nil)
	resp, err = http.Get("http://" + noWeb.HTTPAddr() + "/admin/v2/clusters")
	must(t, "get without web broker", err)
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "reason") {
		t.Fatalf("no web broker: %d %s", resp.StatusCode, body)
	}
}
