package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestHTTPSourceAndSink chains webhook -> http source -> topic -> http sink -> a web server:
// every request the source answered 200 arrives at the server, in order, with its key and
// properties; the server failing with 503 is retried; a request it refuses with 400 goes to
// the dead-letter topic.
func TestHTTPSourceAndSink(t *testing.T) {
	var mu sync.Mutex
	var got []string
	failures := 3
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case string(b) == "bad":
			http.Error(w, "refused", http.StatusBadRequest)
		case failures > 0:
			failures--
			http.Error(w, "try later", http.StatusServiceUnavailable)
		default:
			got = append(got, fmt.Sprintf("%s|%s|%s|%s", b, r.Header.Get("PulsarKey"), r.Header.Get("PulsarProperties-color"), r.Header.Get("X-Extra")))
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	a := admin(t)
	topic := "persistent://public/default/webhooks"
	dlq := topic + "-dlq"
	src := &utils.SourceConfig{Tenant: "public", Namespace: "default", Name: "hook-in", Archive: "builtin://netty",
		TopicName: topic, Parallelism: 1, Configs: map[string]any{"type": "http", "host": "127.0.0.1", "port": port, "path": "/hook"}}
	if err := a.Sources().CreateSource(src, src.Archive); err != nil {
		t.Fatal(err)
	}
	sink := &utils.SinkConfig{Tenant: "public", Namespace: "default", Name: "hook-out", Archive: "builtin://http",
		Inputs: []string{topic}, Parallelism: 1, RetainOrdering: true, SourceSubscriptionPosition: "Earliest", MaxMessageRetries: 1, DeadLetterTopic: dlq,
		Configs: map[string]any{"url": srv.URL + "/in", "headers": map[string]any{"X-Extra": "yes"}}}
	if err := a.Sinks().CreateSink(sink, sink.Archive); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = a.Sinks().DeleteSink("public", "default", "hook-out")
		_ = a.Sources().DeleteSource("public", "default", "hook-in")
	}()
	dlqCons, err := client(t).Subscribe(pulsar.ConsumerOptions{Topic: dlq, SubscriptionName: "check", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer dlqCons.Close()

	post := func(body, key string) (int, error) {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:"+strconv.Itoa(port)+"/hook", bytes.NewBufferString(body))
		req.Header.Set("PulsarKey", key)
		req.Header.Set("PulsarProperties-color", "blue")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	eventually(t, "the webhook serving", func() (bool, error) {
		code, err := post("m0", "k0")
		return code == http.StatusOK, fmt.Errorf("%d %v", code, err)
	})
	const n = 30
	for i := 1; i < n; i++ {
		if i == 10 {
			if code, err := post("bad", "kbad"); code != http.StatusOK {
				t.Fatalf("bad: %d %v", code, err)
			}
		}
		if code, err := post(fmt.Sprintf("m%d", i), fmt.Sprintf("k%d", i)); code != http.StatusOK {
			t.Fatalf("post %d: %d %v", i, code, err)
		}
	}
	if code, _ := post("", ""); code != http.StatusOK {
		t.Fatalf("empty body: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/hook", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %v %v", resp, err)
	}
	eventually(t, "every message delivered", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == n+1, fmt.Errorf("%d delivered", len(got))
	})
	for i := 0; i < n; i++ {
		if want := fmt.Sprintf("m%d|k%d|blue|yes", i, i); got[i] != want {
			t.Fatalf("delivery %d: %q, want %q (all: %v)", i, got[i], want, got)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	m, err := dlqCons.Receive(ctx)
	if err != nil || string(m.Payload()) != "bad" {
		t.Fatalf("dead letter: %v %v", m, err)
	}
	// The instances' counters under Pulsar's metric names.
	eventually(t, "Pulsar's source and sink metrics", func() (bool, error) {
		resp, err := http.Get("http://" + sa.HTTPAddr() + "/metrics")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var missing []string
		for _, want := range []string{
			`pulsar_source_written_total{cluster="standalone",fqfn="public/default/hook-in",instance_id="0",name="hook-in",namespace="default",tenant="public"} 32`,
			`pulsar_sink_written_total{cluster="standalone",fqfn="public/default/hook-out",instance_id="0",name="hook-out",namespace="default",tenant="public"} 31`,
			`pulsar_sink_received_total{cluster="standalone",fqfn="public/default/hook-out",instance_id="0",name="hook-out",namespace="default",tenant="public"}`,
		} {
			if !bytes.Contains(b, []byte(want)) {
				missing = append(missing, want)
			}
		}
		return len(missing) == 0, fmt.Errorf("missing %v", missing)
	})
}
