package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/devcluster"
)

// TestFunctionsWorkerAuthentication runs a `magnetar functions-worker` process with token
// authentication and authorization on, against a cluster whose broker has the same: the
// worker's REST API refuses an anonymous create (401) and a role without the
// namespace's functions permission (403), lets a tenant admin read its namespace, accepts a
// superuser's create; the instances, which connect with the worker's brokerClient
// credentials, consume and produce on the broker and use the state service; trigger
// publishes with the same credentials; deleting the
// function deletes its input subscription (cleanupSubscription's default) through the
// brokers' admin REST with the same credentials.
func TestFunctionsWorkerAuthentication(t *testing.T) {
	dir := t.TempDir()
	secret, err := auth.NewSecretKey("HS256")
	if err != nil {
		t.Fatal(err)
	}
	token := func(role string) string {
		tok, err := auth.CreateToken(secret, "HS256", auth.TokenSpec{Subject: role})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	admin, alice, bob := token("admin"), token("alice"), token("bob")
	// A cluster of processes (a standalone with authentication seals its metadata store and
	// bookie to itself): plaintext metadata and bookies, one broker with token
	// authentication and authorization; the worker gets the same security keys.
	sec := map[string]string{
		"authenticationEnabled":                "true",
		"authenticationProviders":              "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
		"tokenSecretKey":                       "data:;base64," + base64.StdEncoding.EncodeToString(secret),
		"authorizationEnabled":                 "true",
		"superUserRoles":                       "admin",
		"brokerClientAuthenticationPlugin":     "org.apache.pulsar.client.impl.auth.AuthenticationToken",
		"brokerClientAuthenticationParameters": `{"token":"` + admin + `"}`,
	}
	var brokerArgs []string
	env := functionsEnv()
	for k, v := range sec {
		brokerArgs = append(brokerArgs, "--"+config.FlagName(k)+"="+v)
		env = append(env, config.EnvName(k)+"="+v)
	}
	ctx0, cancel0 := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel0()
	c, err := devcluster.Start(ctx0, devcluster.Options{Binary: binary, Dir: filepath.Join(dir, "cluster"), Metadata: 1, Bookies: 2, Brokers: 1,
		NoProxy: true, BrokerArgs: brokerArgs, BookieArgs: []string{"--auto-recovery-daemon-enabled=false"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(10 * time.Second) })
	broker, brokerHTTP := c.Brokers[0].Addr, c.Brokers[0].HTTP
	wenv := append(env, config.EnvName("pulsarServiceUrl")+"=pulsar://"+broker, config.EnvName("pulsarWebServiceUrl")+"=http://"+brokerHTTP)
	_, wrec := startProc(t, "magnetar functions worker ready", wenv, "functions-worker", "--log-format", "json",
		"--metadata-url", c.MetadataURL, "--port", "0", "--bind-address", "127.0.0.1",
		"--data-dir", filepath.Join(dir, "w"))
	worker := trimScheme(wrec["http"])

	call := func(method, url, tok, contentType string, body io.Reader) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, body)
		if err != nil {
			t.Fatal(err)
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	in, out := "persistent://public/default/authfn-in", "persistent://public/default/authfn-out"
	create := func(tok string) (int, string) {
		cfg, _ := json.Marshal(map[string]any{"inputs": []string{in}, "output": out, "runtime": "GO", "parallelism": 1,
			"subscriptionPosition": "Earliest", "userConfig": map[string]any{"mode": "wordcount"}})
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		_ = mw.WriteField("functionConfig", string(cfg))
		_ = mw.WriteField("url", "file://"+goTestFunction(t))
		_ = mw.Close()
		return call(http.MethodPost, "http://"+worker+"/admin/v3/functions/public/default/authfn", tok, mw.FormDataContentType(), &body)
	}
	if code, body := create(""); code != http.StatusUnauthorized {
		t.Fatalf("anonymous create: %d %s, want 401", code, body)
	}
	if code, body := create(bob); code != http.StatusForbidden {
		t.Fatalf("create by a role without the functions permission: %d %s, want 403", code, body)
	}
	for _, tok := range []string{"", bob} {
		if code, _ := call(http.MethodGet, "http://"+worker+"/admin/v2/worker/cluster", tok, "", nil); code != http.StatusUnauthorized && code != http.StatusForbidden {
			t.Fatalf("worker cluster for a non-superuser: %d", code)
		}
	}
	// A tenant admin (from the cluster's tenant policies) manages its own namespace's
	// functions, and no other's.
	if code, body := call(http.MethodPut, "http://"+brokerHTTP+"/admin/v2/tenants/acme", admin, "application/json",
		strings.NewReader(`{"adminRoles":["alice"],"allowedClusters":["standalone"]}`)); code/100 != 2 {
		t.Fatalf("create tenant: %d %s", code, body)
	}
	if code, body := call(http.MethodPut, "http://"+brokerHTTP+"/admin/v2/namespaces/acme/app", admin, "", nil); code/100 != 2 {
		t.Fatalf("create namespace: %d %s", code, body)
	}
	waitUntil(t, "alice lists acme/app's functions", func() (bool, error) {
		code, body := call(http.MethodGet, "http://"+worker+"/admin/v3/functions/acme/app", alice, "", nil)
		return code == http.StatusOK, fmt.Errorf("%d %s", code, body)
	})
	if code, body := call(http.MethodGet, "http://"+worker+"/admin/v2/functions/acme/app", alice, "", nil); code != http.StatusOK {
		t.Fatalf("alice lists acme/app's functions under v2 (pulsaradmin's default): %d %s", code, body)
	}
	if code, _ := call(http.MethodGet, "http://"+worker+"/admin/v3/functions/public/default", alice, "", nil); code != http.StatusForbidden {
		t.Fatalf("alice lists public/default's functions: %d, want 403", code)
	}
	if code, _ := call(http.MethodGet, "http://"+worker+"/admin/v3/functions/acme/app", bob, "", nil); code != http.StatusForbidden {
		t.Fatalf("bob lists acme/app's functions: %d, want 403", code)
	}

	if code, body := create(admin); code/100 != 2 {
		t.Fatalf("superuser create: %d %s", code, body)
	}
	if code, body := call(http.MethodGet, "http://"+worker+"/admin/v2/worker/cluster", admin, "", nil); code != http.StatusOK {
		t.Fatalf("worker cluster for the superuser: %d %s", code, body)
	}
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + broker, Authentication: pulsar.NewAuthenticationToken(admin)})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: out, SubscriptionName: "check", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: in})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("a b a")}); err != nil {
		t.Fatal(err)
	}
	m, err := cons.Receive(ctx)
	if err != nil {
		t.Fatalf("the function's output: %v", err)
	}
	if got := string(m.Payload()); got != "a=1 b=1 a=2" {
		t.Fatalf("output %q", got)
	}
	if code, body := call(http.MethodGet, "http://"+worker+"/admin/v3/functions/public/default/authfn/state/a", admin, "", nil); code != http.StatusOK || !strings.Contains(body, `"numberValue":2`) {
		t.Fatalf("state of a: %d %s", code, body)
	}
	if code, _ := call(http.MethodGet, "http://"+worker+"/admin/v3/functions/public/default/authfn/state/a", "", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("anonymous state read: %d, want 401", code)
	}
	// trigger publishes with the worker's own client, which needs its credentials too.
	var tb bytes.Buffer
	mw := multipart.NewWriter(&tb)
	_ = mw.WriteField("data", "c")
	_ = mw.WriteField("topic", in)
	_ = mw.Close()
	if code, body := call(http.MethodPost, "http://"+worker+"/admin/v3/functions/public/default/authfn/trigger", admin, mw.FormDataContentType(), &tb); code != http.StatusOK || !strings.Contains(body, "c=1") {
		t.Fatalf("trigger: %d %s", code, body)
	}

	subs := func() []string {
		code, body := call(http.MethodGet, "http://"+brokerHTTP+"/admin/v2/persistent/public/default/authfn-in/subscriptions", admin, "", nil)
		var list []string
		if err := json.Unmarshal([]byte(body), &list); err != nil || code != http.StatusOK {
			t.Fatalf("input subscriptions: %d %s (%v)", code, body, err)
		}
		return list
	}
	if s := subs(); !slices.Contains(s, "public/default/authfn") {
		t.Fatalf("input subscriptions before the delete: %v", s)
	}
	if code, body := call(http.MethodDelete, "http://"+worker+"/admin/v3/functions/public/default/authfn", bob, "", nil); code != http.StatusForbidden {
		t.Fatalf("delete by bob: %d %s, want 403", code, body)
	}
	if code, body := call(http.MethodDelete, "http://"+worker+"/admin/v3/functions/public/default/authfn", admin, "", nil); code/100 != 2 {
		t.Fatalf("delete: %d %s", code, body)
	}
	waitUntil(t, "the deleted function's input subscription gone", func() (bool, error) {
		s := subs()
		return len(s) == 0, fmt.Errorf("subscriptions %v", s)
	})
}
