package functions_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"testing"

	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// postComponent creates a function or sink with a raw multipart request, so a field left
// out (cleanupSubscription) is absent, which pulsaradmin's structs cannot express.
func postComponent(t *testing.T, kind, name, field string, cfg map[string]any, pkgURL string) {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField(field, string(b))
	if pkgURL != "" {
		_ = mw.WriteField("url", pkgURL)
	}
	_ = mw.Close()
	resp, err := http.Post("http://"+sa.HTTPAddr()+"/admin/v3/"+kind+"/public/default/"+name, mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		out, _ := io.ReadAll(resp.Body)
		t.Fatalf("create %s %s: %s: %s", kind, name, resp.Status, out)
	}
}

func subscriptionsOf(t *testing.T, admin pa.Client, topic string) []string {
	t.Helper()
	tn, err := utils.GetTopicName(topic)
	if err != nil {
		t.Fatal(err)
	}
	subs, err := admin.Subscriptions().List(*tn)
	if err != nil {
		t.Fatal(err)
	}
	return subs
}

// TestCleanupSubscription: deleting a function or a sink deletes the subscription its
// instances read their inputs through when cleanupSubscription is unset (Pulsar's default,
// true), and keeps it when cleanupSubscription is false.
func TestCleanupSubscription(t *testing.T) {
	admin := adminClient(t)
	client := pulsarClient(t)
	const base = "persistent://public/default/cleanup-"
	fn := goFunction(t)
	fnCfg := func(in string) map[string]any {
		return map[string]any{"inputs": []string{in}, "output": in + "-out", "runtime": "GO", "parallelism": 1,
			"subscriptionPosition": "Earliest", "userConfig": map[string]any{"mode": "exclaim"}}
	}
	postComponent(t, "functions", "cleanup-default", "functionConfig", fnCfg(base+"fn-a"), "file://"+fn)
	keep := fnCfg(base + "fn-b")
	keep["cleanupSubscription"] = false
	postComponent(t, "functions", "cleanup-keep", "functionConfig", keep, "file://"+fn)
	postComponent(t, "sinks", "cleanup-sink", "sinkConfig", map[string]any{
		"archive": "builtin://file", "inputs": []string{base + "sink-a"}, "parallelism": 1,
		"configs": map[string]any{"outputDirectory": t.TempDir()},
	}, "")
	got, err := admin.Functions().GetFunction("public", "default", "cleanup-default")
	if err != nil || !got.CleanupSubscription {
		t.Fatalf("an unset cleanupSubscription reads back as %v (want Pulsar's default true): %v", got.CleanupSubscription, err)
	}
	waitRunning(t, admin, "cleanup-default", 1)
	waitRunning(t, admin, "cleanup-keep", 1)
	// Messages through each, so every subscription exists and has been used.
	produce(t, client, base+"fn-a", "a")
	produce(t, client, base+"fn-b", "b")
	produce(t, client, base+"sink-a", "c")
	consumeN(t, client, base+"fn-a-out", 1)
	consumeN(t, client, base+"fn-b-out", 1)
	for topic, sub := range map[string]string{base + "fn-a": "public/default/cleanup-default",
		base + "fn-b": "public/default/cleanup-keep", base + "sink-a": "public/default/cleanup-sink"} {
		waitFor(t, "subscription "+sub+" on "+topic, func() (bool, error) {
			return slices.Contains(subscriptionsOf(t, admin, topic), sub), nil
		})
	}

	if err := admin.Functions().DeleteFunction("public", "default", "cleanup-keep"); err != nil {
		t.Fatal(err)
	}
	if err := admin.Functions().DeleteFunction("public", "default", "cleanup-default"); err != nil {
		t.Fatal(err)
	}
	if err := admin.Sinks().DeleteSink("public", "default", "cleanup-sink"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted function's subscription gone", func() (bool, error) {
		return len(subscriptionsOf(t, admin, base+"fn-a")) == 0, nil
	})
	waitFor(t, "the deleted sink's subscription gone", func() (bool, error) {
		return len(subscriptionsOf(t, admin, base+"sink-a")) == 0, nil
	})
	// cleanup-keep was deleted first; the others' subscriptions being gone means the
	// worker is past it. Its subscription stays, with the message it consumed acknowledged.
	if subs := subscriptionsOf(t, admin, base+"fn-b"); !slices.Contains(subs, "public/default/cleanup-keep") {
		t.Fatalf("cleanupSubscription=false: the subscription was deleted (subscriptions %v)", subs)
	}
}
