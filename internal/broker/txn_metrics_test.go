package broker

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/magnetar-io/magnetar/internal/config"
)

// scrapeSeries fetches /metrics (the broker's registry served as the admin server serves
// it) and returns the value of the series name whose labels include every one of labels
// (`k="v"`), and whether there is one.
func scrapeSeries(t *testing.T, url, name string, labels ...string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		ls, val, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(","+ls+",", ","+l+",")
		}
		if !all {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return v, true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return 0, false
}

// TestTxnMetricsBufferAndPendingAck: the transaction buffer's and the pending
// acknowledgements' series on /metrics, with Pulsar's names and labels, move with real
// transactions of the Go client: open → pulsar_txn_tb_active_total 1; commit → committed
// +1 on the output topic and on the input's subscription (with a commit latency
// observation), active back to 0; abort → aborted +1.
func TestTxnMetricsBufferAndPendingAck(t *testing.T) {
	b := startBrokerOn(t, false, txnOn)
	srv := httptest.NewServer(promhttp.HandlerFor(b.reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	client := newTxnClient(t, b.url)
	ctx := ctxFor(t)
	in, out := "persistent://public/default/txn-metrics-in", "persistent://public/default/txn-metrics-out"
	inProd, err := client.CreateProducer(pulsar.ProducerOptions{Topic: in, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	inCons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: in, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	outProd, err := client.CreateProducer(pulsar.ProducerOptions{Topic: out, SendTimeout: 0})
	if err != nil {
		t.Fatal(err)
	}
	produce(t, inProd, "in", 2)
	msgs := receiveN(t, inCons, 2)

	outTopic := []string{`cluster="` + b.s.cfg.ClusterName + `"`, `namespace="public/default"`, `topic="` + out + `"`}
	inSub := []string{`namespace="public/default"`, `topic="` + in + `"`, `subscription="s"`}
	want := func(name string, v float64, labels ...string) {
		t.Helper()
		got, ok := scrapeSeries(t, srv.URL, name, labels...)
		if !ok || got != v {
			t.Fatalf("%s{%s} = %v (present %v), want %v", name, strings.Join(labels, ","), got, ok, v)
		}
	}
	status := func(s string) []string { return append(append([]string(nil), inSub...), `status="`+s+`"`) }

	// One transaction publishes to out and acknowledges on in, then commits.
	tx, err := client.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outProd.Send(ctx, &pulsar.ProducerMessage{Transaction: tx, Payload: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	if err := inCons.AckWithTxn(msgs[0], tx); err != nil {
		t.Fatal(err)
	}
	want("pulsar_txn_tb_active_total", 1, outTopic...)
	want("pulsar_txn_tb_committed_total", 0, outTopic...)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want("pulsar_txn_tb_active_total", 0, outTopic...)
	want("pulsar_txn_tb_committed_total", 1, outTopic...)
	want("pulsar_txn_tb_aborted_total", 0, outTopic...)
	want("pulsar_txn_tp_committed_count_total", 1, status("succeed")...)
	want("pulsar_txn_tp_committed_count_total", 0, status("failed")...)
	want("pulsar_txn_tp_aborted_count_total", 0, status("succeed")...)
	want("pulsar_txn_tp_commit_latency_count", 1, inSub...)
	if _, ok := scrapeSeries(t, srv.URL, "pulsar_txn_tp_commit_latency", append(inSub, `quantile="0.99"`)...); !ok {
		t.Fatal("no pulsar_txn_tp_commit_latency quantile series")
	}
	// The coordinator's calls to the topics' owner (this broker): one commit on out's
	// buffer, one on in's subscription.
	outTB := []string{`namespace="public/default"`, `topic="` + out + `"`}
	inTB := []string{`namespace="public/default"`, `topic="` + in + `"`}
	want("pulsar_txn_tb_client_commit_latency_count", 1, outTB...)
	want("pulsar_txn_tb_client_commit_latency_count", 1, inTB...)
	want("pulsar_txn_tb_client_commit_failed_total", 0, outTB...)
	want("pulsar_txn_tb_client_pending_requests", 0, `cluster="`+b.s.cfg.ClusterName+`"`)
	if _, ok := scrapeSeries(t, srv.URL, "pulsar_txn_tb_client_commit_latency", append(outTB, `quantile="0.999"`)...); !ok {
		t.Fatal("no pulsar_txn_tb_client_commit_latency quantile series")
	}

	// A second one does the same and aborts.
	tx, err = client.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outProd.Send(ctx, &pulsar.ProducerMessage{Transaction: tx, Payload: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if err := inCons.AckWithTxn(msgs[1], tx); err != nil {
		t.Fatal(err)
	}
	want("pulsar_txn_tb_active_total", 1, outTopic...)
	if err := tx.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	want("pulsar_txn_tb_active_total", 0, outTopic...)
	want("pulsar_txn_tb_committed_total", 1, outTopic...)
	want("pulsar_txn_tb_aborted_total", 1, outTopic...)
	want("pulsar_txn_tp_aborted_count_total", 1, status("succeed")...)
	want("pulsar_txn_tb_client_abort_latency_count", 1, outTB...)
	want("pulsar_txn_tb_client_commit_latency_count", 1, outTB...)
	want("pulsar_txn_tp_committed_count_total", 1, status("succeed")...)
	want("pulsar_txn_tp_commit_latency_count", 1, inSub...)

	// A topic that never saw a transaction has no transaction series (a topic with
	// transactional acknowledgements only has its buffer's, at zero).
	plain := "persistent://public/default/txn-metrics-plain"
	plainProd, err := client.CreateProducer(pulsar.ProducerOptions{Topic: plain})
	if err != nil {
		t.Fatal(err)
	}
	produce(t, plainProd, "p", 1)
	if _, ok := scrapeSeries(t, srv.URL, "pulsar_in_messages_total", `topic="`+plain+`"`); !ok {
		t.Fatal("no series of the plain topic")
	}
	if v, ok := scrapeSeries(t, srv.URL, "pulsar_txn_tb_active_total", `topic="`+plain+`"`); ok {
		t.Fatalf("the plain topic has pulsar_txn_tb_active_total %v", v)
	}
	want("pulsar_txn_tb_committed_total", 0, `topic="`+in+`"`)
}

// TestTxnMetricsPerNamespace: with exposeTopicLevelMetricsInPrometheus off the same names
// are summed per namespace, without topic and subscription labels.
func TestTxnMetricsPerNamespace(t *testing.T) {
	b := startBrokerOn(t, false, func(c *config.BrokerConfig) {
		txnOn(c)
		c.ExposeTopicLevelMetricsInPrometheus = false
	})
	srv := httptest.NewServer(promhttp.HandlerFor(b.reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	client := newTxnClient(t, b.url)
	ctx := ctxFor(t)
	topic := "persistent://public/default/txn-metrics-ns"
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	produce(t, p, "m", 1)
	m := receiveN(t, cons, 1)[0]
	tx, err := client.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Transaction: tx, Payload: []byte("t")}); err != nil {
		t.Fatal(err)
	}
	if err := cons.AckWithTxn(m, tx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	ns := `namespace="public/default"`
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"pulsar_txn_tb_committed_total", []string{ns}, 1},
		{"pulsar_txn_tb_active_total", []string{ns}, 0},
		{"pulsar_txn_tp_committed_count_total", []string{ns, `status="succeed"`}, 1},
		{"pulsar_txn_tp_commit_latency_count", []string{ns}, 1},
		// One call ended the buffer, one the subscription: both on the same topic.
		{"pulsar_txn_tb_client_commit_latency_count", []string{ns}, 2},
		{"pulsar_txn_tb_client_commit_failed_total", []string{ns}, 0},
	} {
		if got, ok := scrapeSeries(t, srv.URL, c.name, c.labels...); !ok || got != c.want {
			t.Fatalf("%s = %v (present %v), want %v", c.name, got, ok, c.want)
		}
		if _, ok := scrapeSeries(t, srv.URL, c.name, `topic="`+topic+`"`); ok {
			t.Fatalf("%s has a topic label", c.name)
		}
	}
}
