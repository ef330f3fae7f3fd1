package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// registerBroker puts a session-bound broker registration the way a broker would.
func registerBroker(t *testing.T, store metadata.Store, key, serviceURL, webURL string) *metadata.Registration {
	t.Helper()
	v, err := json.Marshal(map[string]string{"pulsarServiceUrl": serviceURL, "webServiceUrl": webURL})
	must(t, "marshal", err)
	reg, err := metadata.Register(context.Background(), store, key, v, metadata.RegistrationOptions{TTL: 5 * time.Second}, discard())
	must(t, "register", err)
	t.Cleanup(func() { _ = reg.Close() })
	return reg
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBrokersDiscoveredFromMetadata(t *testing.T) {
	s := standaloneForTest(t)
	prefix := "/loadbalance/brokers-" + t.Name() + "/"
	cfg := proxyConfig()
	cfg.MetadataStoreURL = "memory://unused" // the store is passed in; the URL only satisfies Validate
	cfg.BrokerRegistrationPrefix = prefix
	p := startProxy(t, cfg, s.Store())
	if b := p.Brokers(); len(b) != 0 {
		t.Fatalf("brokers before any registration: %v", b)
	}
	reg := registerBroker(t, s.Store(), prefix+s.BrokerAddr(), "pulsar://"+s.BrokerAddr(), "http://"+s.HTTPAddr())
	waitFor(t, "the registration to be seen", func() bool { return len(p.Brokers()) == 1 })

	produceConsume(t, clientVia(t, p), "persistent://public/default/proxy-discovered", 20)
	clusters, err := adminVia(t, p).Clusters().List()
	must(t, "clusters through a discovered broker", err)
	if len(clusters) != 1 {
		t.Fatalf("clusters %v", clusters)
	}

	must(t, "deregister", reg.Close())
	waitFor(t, "the registration to go", func() bool { return len(p.Brokers()) == 0 })
}

// fakeBroker answers CONNECT, PING and PARTITIONED_METADATA itself and every LOOKUP with a
// Redirect to target: it plays a broker that does not own the topic.
type fakeBroker struct {
	ln       net.Listener
	target   string
	silent   bool                    // never answer lookups
	hangUp   bool                    // close the connection after answering a lookup
	connects chan *pb.CommandConnect // every CONNECT received, if set
	lookups  atomic.Int64
}

// startFakeBroker listens, applies opts (which may use f.ln) and only then serves, so the
// options are set before any connection is handled.
func startFakeBroker(t *testing.T, target string, opts ...func(*fakeBroker)) *fakeBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, "listen", err)
	f := &fakeBroker{ln: ln, target: target}
	for _, o := range opts {
		o(f)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(nc)
		}
	}()
	return f
}

func (f *fakeBroker) serve(nc net.Conn) {
	defer nc.Close()
	r := wire.NewReader(bufio.NewReader(nc), 0)
	write := func(cmd *pb.BaseCommand) bool {
		buf, err := wire.AppendCommand(nil, cmd)
		if err != nil {
			return false
		}
		_, err = nc.Write(buf)
		return err == nil
	}
	for {
		fr, err := r.ReadFrame()
		if err != nil {
			return
		}
		var out *pb.BaseCommand
		switch cmd := fr.Cmd; cmd.GetType() {
		case pb.BaseCommand_CONNECT:
			if f.connects != nil {
				f.connects <- cmd.GetConnect()
			}
			out = &pb.BaseCommand{Type: pb.BaseCommand_CONNECTED.Enum(), Connected: &pb.CommandConnected{ServerVersion: proto.String("fake")}}
		case pb.BaseCommand_PING:
			out = &pb.BaseCommand{Type: pb.BaseCommand_PONG.Enum(), Pong: &pb.CommandPong{}}
		case pb.BaseCommand_PARTITIONED_METADATA:
			out = &pb.BaseCommand{Type: pb.BaseCommand_PARTITIONED_METADATA_RESPONSE.Enum(), PartitionMetadataResponse: &pb.CommandPartitionedTopicMetadataResponse{
				RequestId: cmd.PartitionMetadata.RequestId, Partitions: proto.Uint32(0), Response: pb.CommandPartitionedTopicMetadataResponse_Success.Enum()}}
		case pb.BaseCommand_LOOKUP:
			f.lookups.Add(1)
			if f.silent {
				continue
			}
			out = &pb.BaseCommand{Type: pb.BaseCommand_LOOKUP_RESPONSE.Enum(), LookupTopicResponse: &pb.CommandLookupTopicResponse{
				RequestId: cmd.LookupTopic.RequestId, Response: pb.CommandLookupTopicResponse_Redirect.Enum(),
				BrokerServiceUrl: proto.String(f.target), Authoritative: proto.Bool(true)}}
		default:
			continue
		}
		if !write(out) || (f.hangUp && fr.Cmd.GetType() == pb.BaseCommand_LOOKUP) {
			return
		}
	}
}

func TestLookupRedirectFollowedByProxy(t *testing.T) {
	s := standaloneForTest(t)
	fake := startFakeBroker(t, "pulsar://"+s.BrokerAddr())
	cfg := proxyConfig()
	// Only the fake is configured: the real broker becomes a legal target only because a
	// broker the proxy trusts named it in a Redirect.
	cfg.BrokerServiceURL = "pulsar://" + fake.ln.Addr().String()
	p := startProxy(t, cfg, nil)
	produceConsume(t, clientVia(t, p), "persistent://public/default/proxy-redirected", 20)
	if fake.lookups.Load() == 0 {
		t.Fatal("the lookup never went to the fake broker")
	}
}

func TestLookupRedirectLoopFails(t *testing.T) {
	// A broker that redirects to itself forever: the proxy gives up after its hop limit and
	// answers an ERROR, it does not loop.
	fake := startFakeBroker(t, "", func(f *fakeBroker) { f.target = "pulsar://" + f.ln.Addr().String() })
	cfg := proxyConfig()
	cfg.BrokerServiceURL = fake.target
	p := startProxy(t, cfg, nil)
	raw := dialRaw(t, p.Addr())
	raw.connect("")
	raw.send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{
		Topic: proto.String("persistent://public/default/loop"), RequestId: proto.Uint64(1)}})
	cmd := raw.read()
	if cmd.GetType() != pb.BaseCommand_ERROR || !strings.Contains(cmd.GetError().GetMessage(), "too many redirects") {
		t.Fatalf("redirect loop: %v", cmd)
	}
}

func TestHTTPRedirectsFollowedToKnownBrokersOnly(t *testing.T) {
	s := standaloneForTest(t)
	var hits atomic.Int64
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "http://"+s.HTTPAddr()+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()

	// Two registered brokers: the real one and one that redirects every call to it (a
	// non-owner). Round-robin sends some calls to each; all must succeed, bodies included.
	prefix := "/loadbalance/brokers-" + t.Name() + "/"
	registerBroker(t, s.Store(), prefix+"a", "pulsar://"+s.BrokerAddr(), "http://"+s.HTTPAddr())
	registerBroker(t, s.Store(), prefix+"b", "pulsar://"+s.BrokerAddr(), redirector.URL)
	cfg := proxyConfig()
	cfg.MetadataStoreURL = "memory://unused"
	cfg.BrokerRegistrationPrefix = prefix
	p := startProxy(t, cfg, s.Store())
	waitFor(t, "both registrations", func() bool { return len(p.Brokers()) == 2 })
	a := adminVia(t, p)
	for i := range 4 {
		must(t, "create tenant", a.Tenants().Create(utils.TenantData{Name: fmt.Sprintf("redir%d", i), AllowedClusters: []string{"standalone"}}))
	}
	tenants, err := a.Tenants().List()
	must(t, "tenants", err)
	for i := range 4 {
		if !strings.Contains(strings.Join(tenants, ","), fmt.Sprintf("redir%d", i)) {
			t.Fatalf("tenant redir%d missing from %v", i, tenants)
		}
	}
	if hits.Load() == 0 {
		t.Fatal("no call went to the redirecting broker")
	}

	// A broker that redirects somewhere unknown: the proxy refuses to follow.
	rogue := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusTemporaryRedirect)
	}))
	defer rogue.Close()
	cfg2 := proxyConfig()
	cfg2.BrokerServiceURL = "pulsar://" + s.BrokerAddr()
	cfg2.BrokerWebServiceURL = rogue.URL
	p2 := startProxy(t, cfg2, nil)
	_, err = adminVia(t, p2).Clusters().List()
	if err == nil || !strings.Contains(err.Error(), "502") || !strings.Contains(err.Error(), "not a known broker") {
		t.Fatalf("redirect to an unknown address: %v", err)
	}
}

func TestLookupsPerConnectionBounded(t *testing.T) {
	fake := startFakeBroker(t, "", func(f *fakeBroker) { f.silent = true })
	cfg := proxyConfig()
	cfg.BrokerServiceURL = "pulsar://" + fake.ln.Addr().String()
	cfg.MaxLookupRequestsPerConnection = 2
	p := startProxy(t, cfg, nil)
	raw := dialRaw(t, p.Addr())
	raw.connect("")
	for i := range 3 {
		raw.send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{
			Topic: proto.String("persistent://public/default/slow"), RequestId: proto.Uint64(uint64(i))}})
	}
	// The first two wait on the silent broker; the third is refused at once.
	cmd := raw.read()
	if cmd.GetType() != pb.BaseCommand_ERROR || cmd.GetError().GetError() != pb.ServerError_TooManyRequests || cmd.GetError().GetRequestId() != 2 {
		t.Fatalf("third lookup: %v", cmd)
	}
}

func TestUpstreamRedialledAfterBrokerHangsUp(t *testing.T) {
	s := standaloneForTest(t)
	fake := startFakeBroker(t, "pulsar://"+s.BrokerAddr(), func(f *fakeBroker) { f.hangUp = true })
	cfg := proxyConfig()
	cfg.BrokerServiceURL = "pulsar://" + fake.ln.Addr().String()
	p := startProxy(t, cfg, nil)
	raw := dialRaw(t, p.Addr())
	raw.connect("")
	for i := range 3 {
		raw.send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{
			Topic: proto.String("persistent://public/default/hangup"), RequestId: proto.Uint64(uint64(i))}})
		cmd := raw.read()
		// The answer comes from the real broker after the fake's redirect, or, if the fake's
		// hang-up raced the request, as a retriable ERROR; never silence.
		if cmd.GetType() == pb.BaseCommand_ERROR && cmd.GetError().GetError() == pb.ServerError_ServiceNotReady {
			continue
		}
		if cmd.GetLookupTopicResponse().GetResponse() != pb.CommandLookupTopicResponse_Connect {
			t.Fatalf("lookup %d: %v", i, cmd)
		}
	}
	if n := fake.lookups.Load(); n != 3 {
		t.Fatalf("fake broker saw %d lookups, want 3 (one per fresh connection)", n)
	}
}

func TestSpliceForwardsClientCredentials(t *testing.T) {
	fake := startFakeBroker(t, "", func(f *fakeBroker) { f.connects = make(chan *pb.CommandConnect, 4) })
	cfg := proxyConfig()
	cfg.BrokerServiceURL = "pulsar://" + fake.ln.Addr().String()
	p := startProxy(t, cfg, nil)
	raw := dialRaw(t, p.Addr())
	raw.send(&pb.BaseCommand{Type: pb.BaseCommand_CONNECT.Enum(), Connect: &pb.CommandConnect{
		ClientVersion: proto.String("raw-test"), ProtocolVersion: proto.Int32(20),
		AuthMethodName: proto.String("token"), AuthData: []byte("jwt-of-alice"),
		OriginalPrincipal: proto.String("alice"), ProxyToBrokerUrl: proto.String(fake.ln.Addr().String()),
		FeatureFlags: &pb.FeatureFlags{SupportsAuthRefresh: proto.Bool(true)}}})
	if cmd := raw.read(); cmd.GetType() != pb.BaseCommand_CONNECTED || cmd.GetConnected().GetServerVersion() != "fake" {
		t.Fatalf("CONNECTED not relayed from the broker: %v", cmd)
	}
	var got *pb.CommandConnect
	select {
	case got = <-fake.connects:
	case <-time.After(time.Minute):
		t.Fatal("the broker never got a CONNECT")
	}
	if got.GetAuthMethodName() != "token" || string(got.GetAuthData()) != "jwt-of-alice" || got.GetOriginalPrincipal() != "alice" ||
		got.GetClientVersion() != "raw-test" || got.ProxyToBrokerUrl != nil || !got.GetFeatureFlags().GetSupportsAuthRefresh() {
		t.Fatalf("CONNECT the broker got: %v", got)
	}
	// After the handshake bytes flow untouched: a PING reaches the broker, its PONG comes back.
	raw.send(&pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}})
	if cmd := raw.read(); cmd.GetType() != pb.BaseCommand_PONG {
		t.Fatalf("ping through the splice: %v", cmd)
	}
}

func TestInboundConnectionLimit(t *testing.T) {
	s := standaloneForTest(t)
	cfg := proxyConfig()
	cfg.BrokerServiceURL = "pulsar://" + s.BrokerAddr()
	cfg.MaxConcurrentInboundConnections = 1
	p := startProxy(t, cfg, nil)
	first := dialRaw(t, p.Addr())
	if cmd := first.connect(""); cmd.GetType() != pb.BaseCommand_CONNECTED {
		t.Fatalf("first connection: %v", cmd)
	}
	second := dialRaw(t, p.Addr())
	second.expectClosed()
	if n := metricValue(t, p, "pulsar_proxy_rejected_connections"); n != 1 {
		t.Fatalf("rejected connections %v", n)
	}
	// Once the first goes, a new one is served.
	_ = first.nc.Close()
	waitFor(t, "the slot to be released", func() bool { return metricValue(t, p, "pulsar_proxy_active_connections") == 0 })
	third := dialRaw(t, p.Addr())
	if cmd := third.connect(""); cmd.GetType() != pb.BaseCommand_CONNECTED {
		t.Fatalf("third connection: %v", cmd)
	}
}
