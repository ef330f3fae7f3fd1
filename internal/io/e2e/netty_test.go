package e2e

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// TestNettyTCPAndUDPSource: builtin://netty with type tcp publishes what each connection
// sends (one message per read; here one short write per connection), with type udp each
// datagram, as Pulsar's netty source does.
func TestNettyTCPAndUDPSource(t *testing.T) {
	a := admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	start := func(name, kind string) (pulsar.Consumer, string) {
		t.Helper()
		port := testenv.FreePort(t)
		topic := "persistent://public/default/netty-" + kind
		src := &utils.SourceConfig{Tenant: "public", Namespace: "default", Name: name, Archive: "builtin://netty",
			TopicName: topic, Parallelism: 1, Configs: map[string]any{"type": kind, "host": "127.0.0.1", "port": port}}
		if err := a.Sources().CreateSource(src, src.Archive); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Sources().DeleteSource("public", "default", name) })
		cons, err := client(t).Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "check",
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cons.Close)
		return cons, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	receive := func(cons pulsar.Consumer) string {
		t.Helper()
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = cons.Ack(m)
		return string(m.Payload())
	}

	tcpCons, tcpAddr := start("netty-tcp", "tcp")
	send := func(body string) {
		t.Helper()
		var c net.Conn
		eventually(t, "the tcp source listens", func() (bool, error) {
			var err error
			c, err = net.Dial("tcp", tcpAddr)
			return err == nil, err
		})
		if _, err := c.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
	}
	send("hello")
	send("world")
	for _, want := range []string{"hello", "world"} {
		if got := receive(tcpCons); got != want {
			t.Fatalf("tcp: got %q, want %q", got, want)
		}
	}

	udpCons, udpAddr := start("netty-udp", "udp")
	uc, err := net.Dial("udp", udpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	// A datagram sent before the source listens is lost (UDP): probe until one arrives.
	got := make(chan string, 64)
	go func() {
		for {
			m, err := udpCons.Receive(ctx)
			if err != nil {
				return
			}
			_ = udpCons.Ack(m)
			got <- string(m.Payload())
		}
	}()
	for probing := true; probing; {
		_, _ = uc.Write([]byte("probe"))
		select {
		case <-got:
			probing = false
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no datagram arrived")
		}
	}
	for _, d := range []string{"d1", "d2", "d3"} {
		if _, err := uc.Write([]byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for !(seen["d1"] && seen["d2"] && seen["d3"]) {
		select {
		case p := <-got:
			if p != "probe" {
				seen[p] = true
			}
		case <-ctx.Done():
			t.Fatalf("datagrams seen %v, want d1, d2, d3", seen)
		}
	}
}
