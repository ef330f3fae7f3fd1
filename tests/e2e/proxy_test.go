package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	paconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
)

// startProxyProc runs `magnetar proxy` in front of the broker at brokerAddr/httpAddr on free
// loopback ports and waits for its "ready" log line, which carries its addresses.
func startProxyProc(t *testing.T, brokerAddr, httpAddr string) (*proc, string, string) {
	t.Helper()
	p := &proc{t: t, ready: make(chan map[string]any, 1), exited: make(chan struct{})}
	p.cmd = exec.Command(binary, "proxy", "--log-format", "json", "--bind-address", "127.0.0.1", "--port", "0", "--http-port", "0",
		"--broker-service-url", "pulsar://"+brokerAddr, "--broker-web-service-url", "http://"+httpAddr)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.readUntil(stderr, "magnetar proxy ready")
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { p.kill() })
	select {
	case rec := <-p.ready:
		return p, strings.TrimPrefix(fmt.Sprint(rec["service"]), "pulsar://"), strings.TrimPrefix(fmt.Sprint(rec["http"]), "http://")
	case <-p.exited:
		t.Fatalf("magnetar proxy exited before ready:\n%s", p.log())
	case <-time.After(time.Minute):
		t.Fatalf("magnetar proxy not ready:\n%s", p.log())
	}
	return nil, "", ""
}

// readUntil collects the process's log lines and reports the first record whose msg is ready.
func (p *proc) readUntil(r io.Reader, ready string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		if len(p.lines) < 2000 {
			p.lines = append(p.lines, line)
		}
		p.mu.Unlock()
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == ready {
			select {
			case p.ready <- rec:
			default:
			}
		}
	}
}

// TestProxyProcessInFrontOfStandalone runs the real binary twice: a standalone and a proxy
// in front of it. The client and pulsaradmin know only the proxy's addresses.
func TestProxyProcessInFrontOfStandalone(t *testing.T) {
	_, broker, httpAddr := startStandalone(t, t.TempDir())
	px, proxyAddr, proxyHTTP := startProxyProc(t, broker, httpAddr)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A short operation timeout: after the proxy stops, closing the client's objects waits
	// for it.
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + proxyAddr, OperationTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const topic = "persistent://public/default/via-proxy-process"
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 100 {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload()) != fmt.Sprint(i) {
			t.Fatalf("message %d: %q", i, m.Payload())
		}
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}

	a, err := pa.New(&paconfig.Config{WebServiceURL: "http://" + proxyHTTP})
	if err != nil {
		t.Fatal(err)
	}
	clusters, err := a.Clusters().List()
	if err != nil || len(clusters) != 1 || clusters[0] != "standalone" {
		t.Fatalf("clusters through the proxy: %v, %v", clusters, err)
	}

	// SIGTERM ends the proxy cleanly even with clients connected.
	if err := px.stop(ctx); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
}
