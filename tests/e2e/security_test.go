package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/devcluster"
	"github.com/magnetar-io/magnetar/internal/metadata/connect"
	"github.com/magnetar-io/magnetar/internal/txn"
)

// TestSecureCluster runs `magnetar dev-cluster --tls` as processes (metadata member, two
// bookies, two brokers, a proxy) with TLS and authentication on every hop, then checks that
// messages flow for a credentialed client through the proxy and directly, and that every
// role refuses whoever lacks credentials: plaintext and anonymous clients at brokers and
// the proxy, a certificate of another CA, a plaintext or certificate-less client at a bookie
// and at the metadata member.
func TestSecureCluster(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := devcluster.Start(ctx, devcluster.Options{
		Binary: binary, Dir: dir, Metadata: 1, Bookies: 2, Brokers: 2, TLS: true,
		BookieArgs: []string{"--auto-recovery-daemon-enabled=false"},
		BrokerArgs: []string{"--transaction-coordinator-enabled=true", "--num-transaction-coordinators=1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop(10 * time.Second)
		if t.Failed() {
			for _, p := range append(append(append(c.Brokers, c.Bookies...), c.Metadata...), c.Proxy) {
				b, _ := os.ReadFile(p.Log())
				lines := strings.Split(string(b), "\n")
				t.Logf("last lines of %s:\n%s", p.Name, strings.Join(lines[max(0, len(lines)-30):], "\n"))
			}
		}
	})
	tokBytes, err := os.ReadFile(c.TLS.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(string(tokBytes))
	ca := c.TLS.CAFile()
	newClient := func(url string, a pulsar.Authentication, timeout time.Duration) pulsar.Client {
		t.Helper()
		cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, TLSTrustCertsFilePath: ca, TLSValidateHostname: true, Authentication: a,
			OperationTimeout: timeout, ConnectionTimeout: timeout, Logger: plog.NewLoggerWithSlog(slog.New(slog.DiscardHandler))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}

	// A superuser's messages go through the proxy and straight to the brokers, all on TLS.
	for i, url := range []string{c.ClientServiceURL(), c.BrokerServiceURL()} {
		cl := newClient(url, pulsar.NewAuthenticationToken(admin), 30*time.Second)
		topic := "persistent://public/default/secure-" + string(rune('a'+i))
		cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
		if err != nil {
			t.Fatalf("%s: subscribe: %v", url, err)
		}
		prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			t.Fatalf("%s: producer: %v", url, err)
		}
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		for j := 0; j < 20; j++ {
			if _, err := prod.Send(sctx, &pulsar.ProducerMessage{Payload: []byte{byte(j)}}); err != nil {
				t.Fatalf("%s: send %d: %v", url, j, err)
			}
		}
		for j := 0; j < 20; j++ {
			m, err := cons.Receive(sctx)
			if err != nil || m.Payload()[0] != byte(j) {
				t.Fatalf("%s: receive %d: %v", url, j, err)
			}
			_ = cons.Ack(m)
		}
		scancel()
		prod.Close()
		cons.Close()
	}

	crossBrokerTxn(t, c, admin, ca)

	// Refused: no credentials (no anonymous role) and a bad token at the brokers and the
	// proxy, a certificate of another CA at the brokers' handshake, plaintext anywhere (the
	// brokers' and the proxy's ports speak TLS only). Each refused client retries until its
	// 3 s operation timeout, so they all run at once.
	other, err := auth.NewCA(filepath.Join(dir, "other"), "other CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	stranger, _ := other.Issue(auth.IssueOptions{Name: "admin"})
	type refusal struct {
		what string
		cl   pulsar.Client
	}
	var refused []refusal
	for _, url := range []string{c.ClientServiceURL(), c.BrokerServiceURL()} {
		for name, a := range map[string]pulsar.Authentication{"no credentials": nil, "bad token": pulsar.NewAuthenticationToken(admin[:len(admin)-4] + "AAAA")} {
			refused = append(refused, refusal{url + " with " + name, newClient(url, a, 3*time.Second)})
		}
	}
	refused = append(refused, refusal{"a certificate of another CA",
		newClient(c.BrokerServiceURL(), pulsar.NewAuthenticationTLS(stranger.CertFile, stranger.KeyFile), 3*time.Second)})
	for _, p := range append(append([]*devcluster.Proc{}, c.Brokers...), c.Proxy) {
		refused = append(refused, refusal{"plaintext to " + p.Name, newClient("pulsar://"+p.Addr, pulsar.NewAuthenticationToken(admin), 3*time.Second)})
	}
	created := make([]bool, len(refused))
	var wg sync.WaitGroup
	for i, r := range refused {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if pr, err := r.cl.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/refused"}); err == nil {
				pr.Close()
				created[i] = true
			}
		}()
	}
	wg.Wait()
	for i, r := range refused {
		if created[i] {
			t.Errorf("%s: producer created", r.what)
		}
	}
	for _, p := range append(append([]*devcluster.Proc{}, c.Brokers...), c.Proxy) {
		resp, err := http.Get("http://" + p.HTTP + "/admin/v2/tenants")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 400 {
				t.Errorf("%s served plaintext HTTP: %d", p.Name, resp.StatusCode)
			}
		}
	}
	// The admin API: the superuser's token works, none gets 401.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: mustClientTLS(t, ca, "", "")}}
	for token, want := range map[string]int{admin: 200, "": 401} {
		req, _ := http.NewRequest("GET", "https://"+c.Proxy.HTTP+"/admin/v2/tenants", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET tenants through the proxy (token %v): %d, want %d", token != "", resp.StatusCode, want)
		}
	}

	// Bookies: TLS only, and only for certificates of the brokers' and bookies' roles.
	bk := c.Bookies[0].Addr
	add := func(tc *tls.Config) error {
		cl := bookieproto.NewClient(bookieproto.ClientOptions{TLS: tc, RequestTimeout: 10 * time.Second, DialTimeout: 5 * time.Second})
		defer cl.Close()
		ch := make(chan error, 1)
		cl.AddEntry(context.Background(), bk, bookieproto.AddRequest{LedgerID: 999999, EntryID: 0, MasterKey: []byte("k"), LAC: -1,
			Payload: []byte("intruder")}, func(err error) { ch <- err })
		return <-ch
	}
	adminCert, _ := c.TLS.Cert("admin")
	for name, tc := range map[string]*tls.Config{
		"plaintext":                nil,
		"no client certificate":    mustClientTLS(t, ca, "", ""),
		"a role not allowed":       mustClientTLS(t, ca, adminCert.CertFile, adminCert.KeyFile),
		"another CA's certificate": mustClientTLS(t, ca, stranger.CertFile, stranger.KeyFile),
	} {
		if err := add(tc); err == nil {
			t.Errorf("bookie accepted an add over %s", name)
		}
	}
	// The metadata member: client certificates of its CA only.
	mdAddr := strings.TrimPrefix(c.MetadataURL, "etcd://")
	for name, tc := range map[string]*tls.Config{"plaintext": nil, "no client certificate": mustClientTLS(t, ca, "", "")} {
		octx, ocancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err := connect.OpenTLS(octx, "etcd://"+mdAddr+"?dialTimeout=2s", tc, slog.New(slog.DiscardHandler))
		ocancel()
		if err == nil {
			st.Close()
			t.Errorf("metadata member accepted a client with %s", name)
		}
	}
}

func mustClientTLS(t *testing.T, ca, cert, key string) *tls.Config {
	t.Helper()
	tc, err := auth.NewClientTLS(auth.ClientTLSOptions{TrustCertsFile: ca, CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// crossBrokerTxn: a transaction whose coordinator one broker serves produces to and
// acknowledges on a topic the other broker owns, then commits. The coordinator ends it there
// with END_TXN_ON_PARTITION and END_TXN_ON_SUBSCRIPTION over pulsar+ssl://, presenting the
// broker's certificate (brokerClient* keys), and the owner authorizes the broker's role: the
// committed messages arrive and the committed acknowledgement empties the backlog.
func crossBrokerTxn(t *testing.T, c *devcluster.Cluster, admin, ca string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: mustClientTLS(t, ca, "", "")},
		// Redirects go to the owner, another port of the same host: keep the credentials.
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			r.Header.Set("Authorization", via[0].Header.Get("Authorization"))
			return nil
		}}
	getJSON := func(path string, v any) error {
		req, _ := http.NewRequest("GET", "https://"+c.Brokers[0].HTTP+path, nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return json.NewDecoder(resp.Body).Decode(v)
	}
	// owner is the broker process serving topic (its binary port is in the lookup's URL).
	owner := func(topic string) *devcluster.Proc {
		var p *devcluster.Proc
		waitFor(t, "lookup of "+topic, func() (bool, error) {
			var res struct {
				BrokerURL    string `json:"brokerUrl"`
				BrokerURLTLS string `json:"brokerUrlTls"`
			}
			if err := getJSON("/lookup/v2/topic/"+strings.Replace(topic, "://", "/", 1), &res); err != nil {
				return false, err
			}
			for _, b := range c.Brokers {
				_, port, _ := net.SplitHostPort(b.Addr)
				if strings.HasSuffix(res.BrokerURLTLS, ":"+port) || strings.HasSuffix(res.BrokerURL, ":"+port) {
					p = b
					return true, nil
				}
			}
			return false, fmt.Errorf("no broker has the lookup's URL %s", res.BrokerURL)
		})
		return p
	}
	coordinator := owner(txn.AssignPartition(0))
	topic := ""
	for i := 0; topic == ""; i++ {
		if i == 64 {
			t.Fatalf("64 topics, all on %s, the coordinator's broker", coordinator.Name)
		}
		if cand := fmt.Sprintf("persistent://public/default/txn-far-%d", i); owner(cand) != coordinator {
			topic = cand
		}
	}
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.BrokerServiceURL(), TLSTrustCertsFilePath: ca, TLSValidateHostname: true,
		Authentication: pulsar.NewAuthenticationToken(admin), EnableTransaction: true, OperationTimeout: time.Minute,
		ConnectionTimeout: 30 * time.Second, Logger: plog.NewLoggerWithSlog(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, SendTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("before")}); err != nil {
		t.Fatal(err)
	}
	before, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := cl.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Transaction: tx, Payload: fmt.Appendf(nil, "txn-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cons.AckWithTxn(before, tx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit of a transaction coordinated by %s on a topic of another broker: %v", coordinator.Name, err)
	}
	for i := range 3 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("txn-%d", i); string(m.Payload()) != want {
			t.Fatalf("received %q, want %q", m.Payload(), want)
		}
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing is left to deliver only if "before"'s transactional acknowledgement committed.
	statsPath := "/admin/v2/" + strings.Replace(topic, "://", "/", 1) + "/stats"
	waitFor(t, "an empty backlog after the commit", func() (bool, error) {
		var st struct {
			Subscriptions map[string]struct {
				MsgBacklog int64 `json:"msgBacklog"`
			} `json:"subscriptions"`
		}
		if err := getJSON(statsPath, &st); err != nil {
			return false, err
		}
		return st.Subscriptions["s"].MsgBacklog == 0, fmt.Errorf("backlog %d", st.Subscriptions["s"].MsgBacklog)
	})
}
