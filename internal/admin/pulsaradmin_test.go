package admin_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	paconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/standalone"
)

// quiet drops the Go client's logging.
var quiet = plog.NewLoggerWithSlog(slog.New(slog.DiscardHandler))

// sa is the one standalone the integration tests of this package share (started in TestMain).
var sa *standalone.Standalone

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "admin-test-")
	if err != nil {
		panic(err)
	}
	cfg := config.DefaultStandaloneConfig()
	cfg.DataDir = dir
	cfg.MetadataListenClient = "http://127.0.0.1:0"
	cfg.MetadataListenPeer = "http://127.0.0.1:0"
	cfg.BookieAddress = "127.0.0.1:0"
	cfg.Broker.BindAddress = "127.0.0.1"
	cfg.Broker.ServicePort = 0
	cfg.Broker.WebServicePort = 0
	cfg.Broker.Policies.PolicyCheckIntervalSeconds = 1 // TTL and backlog quota tests
	cfg.Broker.ForceDeleteNamespaceAllowed = true      // TestForceDeleteNamespace
	cfg.Broker.Packages.Enabled = true                 // TestPackagesAPI
	cfg.Broker.Packages.MaxSizeMB = testPackagesMaxMB

	cfg.Broker.Policies.BrokerServiceCompactionMonitorIntervalInSeconds = 1 // TestCompactionThresholdPolicy
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	sa, err = standalone.Start(ctx, cfg, nil)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start standalone:", err)
		os.Exit(1)
	}
	code := m.Run()
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	_ = sa.Close(ctx)
	cancel()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func adminClient(t *testing.T) pa.Client {
	t.Helper()
	c, err := pa.New(&paconfig.Config{WebServiceURL: "http://" + sa.HTTPAddr()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pulsarClient(t *testing.T) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + sa.BrokerAddr(), OperationTimeout: 30 * time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func topicName(t *testing.T, s string) *utils.TopicName {
	t.Helper()
	n, err := utils.GetTopicName(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func produce(t *testing.T, c pulsar.Client, topic string, n int) []pulsar.MessageID {
	t.Helper()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	must(t, "producer", err)
	defer p.Close()
	ids := make([]pulsar.MessageID, n)
	for i := range n {
		ids[i], err = p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("m%d", i)),
			Properties: map[string]string{"i": fmt.Sprint(i)}})
		must(t, "send", err)
	}
	return ids
}

func TestTopicsLifecycle(t *testing.T) {
	a := adminClient(t)
	part := topicName(t, "persistent://public/default/admin-part")
	must(t, "create partitioned", a.Topics().Create(*part, 3))
	if err := a.Topics().Create(*part, 3); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("second create: %v", err)
	}
	md, err := a.Topics().GetMetadata(*part)
	must(t, "metadata", err)
	if md.Partitions != 3 {
		t.Fatalf("partitions %d", md.Partitions)
	}
	must(t, "update", a.Topics().Update(*part, 4))
	if err := a.Topics().Update(*part, 2); err == nil || !strings.Contains(err.Error(), "412") {
		t.Fatalf("shrink: %v", err)
	}
	plain := topicName(t, "persistent://public/default/admin-plain")
	must(t, "create plain", a.Topics().CreateWithProperties(*plain, 0, map[string]string{"owner": "ops"}))
	props, err := a.Topics().GetProperties(*plain)
	must(t, "properties", err)
	if props["owner"] != "ops" {
		t.Fatalf("properties %v", props)
	}
	must(t, "update properties", a.Topics().UpdateProperties(*plain, map[string]string{"team": "x"}))
	must(t, "remove property", a.Topics().RemoveProperty(*plain, "owner"))
	if props, _ = a.Topics().GetProperties(*plain); props["team"] != "x" || props["owner"] != "" {
		t.Fatalf("properties after update %v", props)
	}

	np := topicName(t, "non-persistent://public/default/admin-np")
	must(t, "create non-persistent", a.Topics().Create(*np, 0))
	ns, err := utils.GetNamespaceName("public/default")
	must(t, "namespace name", err)
	partitioned, nonPartitioned, err := a.Topics().List(*ns)
	must(t, "list", err)
	if !contains(partitioned, part.String()) || !contains(nonPartitioned, plain.String()) || !contains(nonPartitioned, np.String()) {
		t.Fatalf("list: %v %v", partitioned, nonPartitioned)
	}
	if _, err := a.Topics().GetStats(*np); err != nil {
		t.Fatalf("non-persistent stats: %v", err)
	}
	if _, err := a.Topics().GetInternalStats(*np); err == nil || !strings.Contains(err.Error(), "412") {
		t.Fatalf("non-persistent internal stats: %v", err)
	}
	must(t, "delete non-persistent", a.Topics().Delete(*np, false, true))

	c := pulsarClient(t)
	produce(t, c, part.String(), 8)
	ps, err := a.Topics().GetPartitionedStats(*part, true)
	must(t, "partitioned stats", err)
	if ps.Metadata.Partitions != 4 || len(ps.Partitions) != 4 || ps.StorageSize == 0 {
		t.Fatalf("partitioned stats %+v", ps)
	}
	must(t, "unload", a.Topics().Unload(*part))
	must(t, "delete partitioned", a.Topics().Delete(*part, true, false))
	must(t, "delete plain", a.Topics().Delete(*plain, false, true))
	if _, err := a.Topics().GetStats(*plain); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("stats of deleted topic: %v", err)
	}
	lk, err := a.Topics().Lookup(*part)
	must(t, "lookup", err)
	if lk.BrokerURL != "pulsar://"+sa.BrokerAddr() {
		t.Fatalf("lookup %+v", lk)
	}
}

func TestStatsAndSubscriptions(t *testing.T) {
	a := adminClient(t)
	c := pulsarClient(t)
	name := "persistent://public/default/admin-subs"
	tn := topicName(t, name)
	ids := produce(t, c, name, 10)

	must(t, "create sub", a.Subscriptions().Create(*tn, "s1", utils.Earliest))
	must(t, "create sub latest", a.Subscriptions().Create(*tn, "s2", utils.Latest))
	if err := a.Subscriptions().Create(*tn, "s2", utils.Latest); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("create existing sub: %v", err)
	}
	subs, err := a.Subscriptions().List(*tn)
	must(t, "list subs", err)
	if !contains(subs, "s1") || !contains(subs, "s2") {
		t.Fatalf("subs %v", subs)
	}
	backlog := func(sub string) int64 {
		t.Helper()
		st, err := a.Topics().GetStats(*tn)
		must(t, "stats", err)
		return st.Subscriptions[sub].MsgBacklog
	}
	if b := backlog("s1"); b != 10 {
		t.Fatalf("s1 backlog %d", b)
	}
	if st, err := a.Topics().GetStats(*tn); err != nil || st.MsgCounterIn != 10 || st.AverageMsgSize == 0 {
		t.Fatalf("in counters: %+v %v", st, err)
	}
	msgs, err := a.Subscriptions().PeekMessages(*tn, "s1", 2)
	must(t, "peek", err)
	if len(msgs) != 2 || string(msgs[1].Payload) != "m1" || msgs[1].Properties["i"] != "1" {
		t.Fatalf("peek %+v", msgs)
	}
	must(t, "skip", a.Subscriptions().SkipMessages(*tn, "s1", 3))
	if b := backlog("s1"); b != 7 {
		t.Fatalf("after skip backlog %d", b)
	}
	ns, err := utils.GetNamespaceName("public/default")
	must(t, "namespace name", err)
	must(t, "clear namespace backlog", a.Namespaces().ClearNamespaceBacklogForSubscription(*ns, "s1"))
	if b := backlog("s1"); b != 0 {
		t.Fatalf("after clear backlog %d", b)
	}
	must(t, "reset by time", a.Subscriptions().ResetCursorToTimestamp(*tn, "s1", 0))
	if b := backlog("s1"); b != 10 {
		t.Fatalf("after reset by time backlog %d", b)
	}
	must(t, "expire", a.Subscriptions().ExpireMessages(*tn, "s1", 0))
	if b := backlog("s1"); b != 0 {
		t.Fatalf("after expire backlog %d", b)
	}
	id5, err := utils.ParseMessageID(fmt.Sprintf("%d:%d", ids[5].LedgerID(), ids[5].EntryID()))
	must(t, "parse id", err)
	must(t, "reset by id", a.Subscriptions().ResetCursorToMessageID(*tn, "s1", *id5))
	if b := backlog("s1"); b != 5 {
		t.Fatalf("after reset by id backlog %d", b)
	}

	last, err := a.Topics().GetLastMessageID(*tn)
	must(t, "last id", err)
	if last.LedgerID != ids[9].LedgerID() || last.EntryID != ids[9].EntryID() {
		t.Fatalf("last id %+v want %v", last, ids[9])
	}
	ms, err := a.Subscriptions().GetMessagesByID(*tn, ids[3].LedgerID(), ids[3].EntryID())
	must(t, "message by id", err)
	if len(ms) != 1 {
		t.Fatalf("messages by id: %d, want 1", len(ms))
	}
	m := ms[0]
	if string(m.Payload) != "m3" {
		t.Fatalf("message by id %q", m.Payload)
	}
	for _, tc := range []struct {
		query string
		want  pulsar.MessageID
	}{{"initialPosition=earliest&messagePosition=2", ids[1]}, {"initialPosition=latest&messagePosition=1", ids[9]}} {
		resp, err := http.Get("http://" + sa.HTTPAddr() + "/admin/v2/persistent/public/default/admin-subs/examinemessage?" + tc.query)
		must(t, "examine", err)
		resp.Body.Close()
		if want := fmt.Sprintf("%d:%d", tc.want.LedgerID(), tc.want.EntryID()); resp.StatusCode != 200 || resp.Header.Get("X-Pulsar-Message-ID") != want {
			t.Fatalf("examine %s: %d %s, want %s", tc.query, resp.StatusCode, resp.Header.Get("X-Pulsar-Message-ID"), want)
		}
	}
	is, err := a.Topics().GetInternalStats(*tn)
	must(t, "internal stats", err)
	if is.NumberOfEntries != 10 || len(is.Cursors) < 2 {
		t.Fatalf("internal stats %+v", is)
	}

	// A live consumer blocks a plain delete; force disconnects it.
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: name, SubscriptionName: "s3"})
	must(t, "subscribe", err)
	defer cons.Close()
	if err := a.Subscriptions().Delete(*tn, "s3"); err == nil || !strings.Contains(err.Error(), "412") {
		t.Fatalf("delete busy sub: %v", err)
	}
	must(t, "force delete", a.Subscriptions().ForceDelete(*tn, "s3"))
	must(t, "delete s2", a.Subscriptions().Delete(*tn, "s2"))
	if err := a.Subscriptions().Delete(*tn, "nope"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("delete missing sub: %v", err)
	}

	first, err := a.Topics().GetMessageID(*tn, 0)
	must(t, "message id by time", err)
	if first.LedgerID != ids[0].LedgerID() || first.EntryID != ids[0].EntryID() {
		t.Fatalf("message id at 0: %+v want %v", first, ids[0])
	}
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: name})
	must(t, "producer", err)
	st, err := a.Topics().GetStats(*tn)
	must(t, "stats with producer", err)
	if len(st.Publishers) != 1 || !strings.HasPrefix(st.Publishers[0].ClientVersion, "Pulsar-Go-version") {
		t.Fatalf("publishers %+v", st.Publishers)
	}
	p.Close()
	if _, err := a.Schemas().GetSchemaInfo(name); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("schema of a topic without one: %v", err)
	}

	end, err := a.Topics().Terminate(*tn)
	must(t, "terminate", err)
	if end.EntryID != ids[9].EntryID() {
		t.Fatalf("terminate at %+v", end)
	}
}

func TestBrokers(t *testing.T) {
	a := adminClient(t)
	bs, err := a.Brokers().GetActiveBrokers("standalone")
	must(t, "active brokers", err)
	if len(bs) != 1 || bs[0] != sa.HTTPAddr() {
		t.Fatalf("brokers %v", bs)
	}
	l, err := a.Brokers().GetLeaderBroker()
	must(t, "leader", err)
	if l.BrokerID == "" || l.ServiceURL == "" {
		t.Fatalf("leader %+v", l)
	}
	must(t, "health", a.Brokers().HealthCheckWithTopicVersion(utils.TopicVersionV2))
	if _, err := a.Brokers().GetDynamicConfigurationNames(); err != nil {
		t.Fatal(err)
	}
	if err := a.Brokers().UpdateDynamicConfiguration("nope", "1"); err == nil || !strings.Contains(err.Error(), "412") {
		t.Fatalf("update dynamic config: %v", err)
	}
	owned, err := a.Brokers().GetOwnedNamespaces("standalone", sa.HTTPAddr())
	must(t, "owned namespaces", err)
	if _, ok := owned["public/default/0x00000000_0xffffffff"]; !ok {
		t.Fatalf("owned namespaces %v", owned)
	}
}

// TestHTTPServiceURL drives the Go client through the HTTP lookup service.
func TestHTTPServiceURL(t *testing.T) {
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "http://" + sa.HTTPAddr(), OperationTimeout: 30 * time.Second, Logger: quiet})
	must(t, "client", err)
	defer c.Close()
	produce(t, c, "persistent://public/default/admin-http", 1)
}

func TestBadInput(t *testing.T) {
	base := "http://" + sa.HTTPAddr()
	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{"PUT", "/admin/v2/persistent/public/default/bad/partitions", "{not json", 400},
		{"PUT", "/admin/v2/persistent/public/default/bad/partitions", "0", 400},
		{"PUT", "/admin/v2/persistent/nosuchtenant/default/x", "null", 404},
		{"GET", "/admin/v2/persistent/public/nosuchns", "", 404},
		{"PATCH", "/admin/v2/persistent/public/default/x/stats", "", 405},
		{"POST", "/admin/v2/persistent/public/default/x/subscription/s/skip/abc", "", 400},
		{"GET", "/admin/v2/persistent/public/default/nosuchtopic/stats", "", 404},
		{"PUT", "/admin/v2/persistent/public/default/a%2Fb", "null", 400},
		{"GET", "/admin/v2/persistent/public/default/x/subscription/s/position/0", "", 400},
		{"POST", "/admin/v2/persistent/public/default/x/partitions", "[1]", 400},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		must(t, tc.path, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || !strings.Contains(string(b), `"reason"`) {
			t.Errorf("%s %s: %d %s, want %d with a reason", tc.method, tc.path, resp.StatusCode, b, tc.want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestTopicMetrics(t *testing.T) {
	a := adminClient(t)
	name := "persistent://public/default/admin-metrics"
	tn := topicName(t, name)
	must(t, "create sub", a.Subscriptions().Create(*tn, "m1", utils.Earliest))
	produce(t, pulsarClient(t), name, 4)
	resp, err := http.Get("http://" + sa.HTTPAddr() + "/metrics")
	must(t, "scrape", err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	for _, want := range []string{
		`pulsar_msg_backlog{cluster="standalone",namespace="public/default",topic="` + name + `"} 4`,
		`pulsar_topics_count{cluster="standalone",namespace="public/default"}`,
		`pulsar_in_messages_total{cluster="standalone",namespace="public/default",topic="` + name + `"} 4`,
		"pulsar_storage_size{", "pulsar_producers_count{", "pulsar_consumers_count{", "pulsar_storage_backlog_size{",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestGrafanaDashboardNames checks that every metric the shipped dashboard queries is
// exported (run after the traffic of the tests above, so labelled series exist).
func TestGrafanaDashboardNames(t *testing.T) {
	dash, err := os.ReadFile("../../deploy/grafana/magnetar.json")
	must(t, "read dashboard", err)
	resp, err := http.Get("http://" + sa.HTTPAddr() + "/metrics")
	must(t, "scrape", err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	names := regexp.MustCompile(`\b(?:pulsar|bookie)_[a-z_]+`).FindAllString(string(dash), -1)
	if len(names) == 0 {
		t.Fatal("dashboard queries no metrics")
	}
	for _, n := range names {
		if !strings.Contains(string(b), "\n"+n) {
			t.Errorf("dashboard uses %s, not on /metrics", n)
		}
	}
}
