package proxy

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

func FuzzParseRegistration(f *testing.F) {
	f.Add("/loadbalance/brokers/h:6650", []byte(`{"pulsarServiceUrl":"pulsar://h:6650","webServiceUrl":"http://h:8080"}`))
	f.Add("/loadbalance/brokers/h:6650", []byte(``))
	f.Add("/loadbalance/brokers/x", []byte(`{"brokerServiceUrl":"pulsar+ssl://[::1]:6651","httpUrl":"https://h:8443/"}`))
	f.Add("/k", []byte(`{"pulsarServiceUrl":"http://h:1"}`))
	f.Add("/k", []byte(`{"pulsarServiceUrl":"pulsar://h:99999999"}`))
	f.Add("/k", []byte(`[1,2`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		b, err := ParseRegistration(key, value)
		if err != nil {
			return
		}
		if _, _, err := net.SplitHostPort(b.ServiceAddr); err != nil {
			t.Fatalf("accepted service address %q: %v", b.ServiceAddr, err)
		}
		if b.WebAddr != "" {
			if _, _, err := net.SplitHostPort(b.WebAddr); err != nil {
				t.Fatalf("accepted web address %q: %v", b.WebAddr, err)
			}
		}
	})
}

func FuzzHostPort(f *testing.F) {
	for _, s := range []string{"h:1", "pulsar://h:6650", "pulsar://h:6650/x", "pulsar://u@h:1", "[::1]:6650", "h", ":1", "http://h:80", "pulsar://h:0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hp, err := HostPort(s, "pulsar")
		if err != nil {
			return
		}
		// Canonical: parsing the result again gives the same.
		again, err := HostPort(hp, "pulsar")
		if err != nil || again != hp {
			t.Fatalf("HostPort(%q) = %q, again %q, %v", s, hp, again, err)
		}
	})
}

// fuzzProxy is a proxy without listeners or brokers, for driving serveConn directly.
func fuzzProxy(t testing.TB) *Proxy {
	cfg := config.DefaultProxyConfig()
	cfg.KeepAliveIntervalSeconds = 5
	cfg.BrokerProxyConnectTimeoutMs = 500
	cfg.BrokerProxyReadTimeoutMs = 500
	cfg.MaxFrameSizeBytes = 64 << 10
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	sec, err := newSecurity(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{cfg: cfg, logger: logger, brokers: newBrokerSet(Broker{}), metrics: m, sec: sec}
	p.pool = newPool(cfg.ConnectTimeout(), cfg.MaxFrameSizeBytes, make(chan struct{}, 16), logger, p.upstreamDialer(nil, nil))
	p.ctx, p.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() { p.cancel(); p.pool.close() })
	return p
}

func frame(t testing.TB, cmd *pb.BaseCommand) []byte {
	b, err := wire.AppendCommand(nil, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzClientConnection feeds arbitrary bytes to a client connection of the proxy: whatever
// arrives, serveConn must end (no panic, no hang) once the client goes away.
func FuzzClientConnection(f *testing.F) {
	connect := frame(f, &pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: &pb.CommandConnect{ClientVersion: proto.String("fuzz")}})
	lookup := frame(f, &pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{Topic: proto.String("t"), RequestId: proto.Uint64(1)}})
	ping := frame(f, &pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
	producer := frame(f, &pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{Topic: proto.String("t"), ProducerId: proto.Uint64(1), RequestId: proto.Uint64(2)}})
	proxied := frame(f, &pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: &pb.CommandConnect{ClientVersion: proto.String("fuzz"), ProxyToBrokerUrl: proto.String("127.0.0.1:1")}})
	f.Add(connect)
	f.Add(append(append(append([]byte{}, connect...), ping...), lookup...))
	f.Add(append(append([]byte{}, connect...), producer...))
	f.Add(proxied)
	f.Add(ping)
	f.Add([]byte{0, 0, 0, 8, 0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})
	p := fuzzProxy(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer server.Close()
			p.serveConn(server)
		}()
		go func() { _, _ = io.Copy(io.Discard, client) }()
		_ = client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		_, _ = client.Write(data)
		_ = client.Close()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("serveConn did not end after the client closed")
		}
	})
}
