package standalone_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/standalone"
)

// testConfig is a standalone on free loopback ports under dir.
func testConfig(dir string) config.StandaloneConfig {
	cfg := config.DefaultStandaloneConfig()
	cfg.DataDir = dir
	cfg.MetadataListenClient = "http://127.0.0.1:0"
	cfg.MetadataListenPeer = "http://127.0.0.1:0"
	cfg.BookieAddress = "127.0.0.1:0"
	cfg.Broker.BindAddress = "127.0.0.1"
	cfg.Broker.ServicePort = 0
	cfg.Broker.WebServicePort = 0
	return cfg
}

func start(t testing.TB, cfg config.StandaloneConfig) *standalone.Standalone {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := standalone.Start(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func client(t *testing.T, s *standalone.Standalone) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + s.BrokerAddr(), OperationTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStandaloneServesAdminAndMessagesAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := start(t, cfg)

	resp, err := http.Get("http://" + s.HTTPAddr() + "/admin/v2/clusters")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var clusters []string
	if err := json.Unmarshal(body, &clusters); err != nil || len(clusters) != 1 || clusters[0] != "standalone" {
		t.Fatalf("clusters = %s (%v)", body, err)
	}

	const topic = "persistent://public/default/restart"
	c := client(t, s)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; i < 20; i++ {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("m-%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ { // ack the first half only
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload()) != fmt.Sprintf("m-%d", i) {
			t.Fatalf("message %d = %q", i, m.Payload())
		}
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	cons.Close()
	p.Close()
	c.Close()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Restart on the same directory: the unacknowledged half is still there, in order.
	s = start(t, cfg)
	defer s.Close(context.Background())
	c = client(t, s)
	defer c.Close()
	cons, err = c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for i := 10; i < 20; i++ {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload()) != fmt.Sprintf("m-%d", i) {
			t.Fatalf("after restart message %d = %q", i, m.Payload())
		}
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
}
