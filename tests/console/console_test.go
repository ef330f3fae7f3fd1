//go:build consoletest

package console

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/standalone"
	"github.com/magnetar-io/magnetar/internal/testbin"
)

const playwrightVersion = "1.57.0"

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "magnetar-console-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if binary, err = testbin.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "building magnetar:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// browserTools installs what the test drives, if missing: Debian's chromium (apt-get) and
// playwright-core (npm, into ~/.cache/magnetar-console). It returns the npm directory.
func browserTools(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		for _, args := range [][]string{{"update"}, {"install", "-y", "chromium"}} {
			if out, err := exec.Command("apt-get", args...).CombinedOutput(); err != nil {
				t.Fatalf("installing Debian's chromium (apt-get %s): %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	}
	home, _ := os.UserHomeDir()
	dir := filepath.Join(home, ".cache", "magnetar-console")
	pkg := filepath.Join(dir, "node_modules", "playwright-core", "package.json")
	var have struct{ Version string }
	if b, err := os.ReadFile(pkg); err == nil {
		_ = json.Unmarshal(b, &have)
	}
	if have.Version != playwrightVersion {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "playwright-core@"+playwrightVersion)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("installing playwright-core from npm: %v\n%s", err, out)
		}
	}
	return dir
}

// startStandalone runs a standalone on free ports with extra environment and returns its
// broker and HTTP addresses.
func startStandalone(t *testing.T, env ...string) (string, string) {
	t.Helper()
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		_, p, _ := net.SplitHostPort(ln.Addr().String())
		return p
	}
	bport, hport := free(), free()
	cmd := exec.Command(binary, "standalone", "--data-dir", filepath.Join(t.TempDir(), "data"), "--bind-address", "127.0.0.1",
		"--port", bport, "--http-port", hport, "--bookie-address", "127.0.0.1:0", "--functions-worker=false")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), standalone.PulsarReadyText) {
				close(ready)
				break
			}
		}
		for sc.Scan() {
		}
	}()
	select {
	case <-ready:
	case <-time.After(2 * time.Minute):
		t.Fatal("standalone not ready")
	}
	return "127.0.0.1:" + bport, "127.0.0.1:" + hport
}

type order struct {
	Order int    `json:"order"`
	Item  string `json:"item"`
}

// seed fills a standalone: orders (JSON schema, 20 messages keyed key-0..key-19, subscription
// billing with the first 5 acknowledged, a producer left connected) and events (3 partitions).
// token, if set, authenticates the client and the REST calls.
func seed(t *testing.T, brokerAddr, httpAddr, token string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := pulsar.ClientOptions{URL: "pulsar://" + brokerAddr, OperationTimeout: time.Minute}
	if token != "" {
		o.Authentication = pulsar.NewAuthenticationToken(token)
	}
	c, err := pulsar.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	schema := pulsar.NewJSONSchema(`{"type":"record","name":"Order","fields":[{"name":"order","type":"int"},{"name":"item","type":"string"}]}`, nil)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: "persistent://public/default/orders", SubscriptionName: "billing",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/orders", Name: "orders-producer", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	for i := range 20 {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Key: fmt.Sprintf("key-%d", i), Value: &order{Order: i, Item: "widget"},
			Properties: map[string]string{"source": "console-test"}}); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := cons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	cons.Close()
	rest(t, httpAddr, token, http.MethodPut, "/admin/v2/persistent/public/default/events/partitions", "3")
	ep, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/events"})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	for i := range 9 {
		if _, err := ep.Send(ctx, &pulsar.ProducerMessage{Key: fmt.Sprint(i), Payload: []byte(fmt.Sprintf("event %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until the acknowledgements are visible, so the test starts from backlog 15.
	deadline := time.Now().Add(time.Minute)
	for {
		req, _ := http.NewRequest(http.MethodGet, "http://"+httpAddr+"/admin/v2/persistent/public/default/orders/stats", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var st struct {
				Subscriptions map[string]struct{ MsgBacklog int64 }
			}
			_ = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if st.Subscriptions["billing"].MsgBacklog == 15 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("billing's backlog never reached 15")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rest sends an admin REST request (with token, if set) and fails the test unless it is 2xx.
func rest(t *testing.T, httpAddr, token, method, path, body string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+httpAddr+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %s", method, path, resp.Status)
	}
}

// secured starts a standalone with token authentication and authorization on: "admin" is a
// superuser, "reader" may consume public/default (and nothing else). It returns the HTTP
// address and the tokens of admin, reader and one signed with another key.
func secured(t *testing.T) (httpAddr, admin, reader, forged string) {
	t.Helper()
	key, err := auth.NewSecretKey("HS256")
	if err != nil {
		t.Fatal(err)
	}
	other, err := auth.NewSecretKey("HS256")
	if err != nil {
		t.Fatal(err)
	}
	token := func(key []byte, role string) string {
		tok, err := auth.CreateToken(key, "HS256", auth.TokenSpec{Subject: role})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	admin, reader, forged = token(key, "admin"), token(key, "reader"), token(other, "admin")
	brokerAddr, httpAddr := startStandalone(t,
		"PULSAR_PREFIX_authenticationEnabled=true",
		"PULSAR_PREFIX_authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
		"PULSAR_PREFIX_tokenSecretKey=data:;base64,"+base64.StdEncoding.EncodeToString(key),
		"PULSAR_PREFIX_authorizationEnabled=true",
		"PULSAR_PREFIX_superUserRoles=admin",
		"PULSAR_PREFIX_brokerClientAuthenticationPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken",
		"PULSAR_PREFIX_brokerClientAuthenticationParameters=token:"+admin)
	seed(t, brokerAddr, httpAddr, admin)
	rest(t, httpAddr, admin, http.MethodPost, "/admin/v2/namespaces/public/default/permissions/reader", `["consume"]`)
	return httpAddr, admin, reader, forged
}

func TestConsoleInChromium(t *testing.T) {
	npmDir := browserTools(t)
	brokerAddr, httpAddr := startStandalone(t)
	seed(t, brokerAddr, httpAddr, "")
	roBroker, roHTTP := startStandalone(t, "PULSAR_PREFIX_consoleReadOnly=true")
	seed(t, roBroker, roHTTP, "")
	authHTTP, adminToken, readerToken, forgedToken := secured(t)

	shots := os.Getenv("CONSOLE_SHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	script, err := os.ReadFile("console.mjs")
	if err != nil {
		t.Fatal(err)
	}
	// ES modules resolve packages from the script's own directory: run it beside node_modules.
	run := filepath.Join(npmDir, "console.mjs")
	if err := os.WriteFile(run, script, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", run)
	cmd.Env = append(os.Environ(), "BASE=http://"+httpAddr, "READONLY_BASE=http://"+roHTTP, "SHOTS="+shots,
		"AUTH_BASE=http://"+authHTTP, "ADMIN_TOKEN="+adminToken, "READER_TOKEN="+readerToken, "FORGED_TOKEN="+forgedToken)
	out, err := cmd.CombinedOutput()
	t.Logf("console.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("console.mjs: %v", err)
	}
}
