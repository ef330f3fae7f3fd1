package functions_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-io/magnetar/internal/functions"
)

func httpCode(err error) int {
	var e rest.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// TestAdminThroughPulsaradmin drives the functions and worker APIs with pulsar-client-go's
// pulsaradmin: bad configs, lifecycle, status and stats, trigger, state, updates, and a
// binary that crashes (restarted with backoff, reported in status).
func TestAdminThroughPulsaradmin(t *testing.T) {
	admin := adminClient(t)
	client := pulsarClient(t)
	fns := admin.Functions()
	bin := goFunction(t)
	in, out := "persistent://public/default/adm-in", "persistent://public/default/adm-out"
	retries := 2
	base := func() *utils.FunctionConfig {
		// A record that crashes the process comes back after each restart until
		// maxMessageRetries sends it to the dead letter topic.
		return &utils.FunctionConfig{Tenant: "public", Namespace: "default", Name: "adm", Inputs: []string{in}, Output: out,
			Go: strp(bin), Parallelism: 1, SubscriptionPosition: "Earliest", UserConfig: map[string]any{"mode": "crash"},
			MaxMessageRetries: &retries, DeadLetterTopic: "persistent://public/default/adm-dlq"}
	}

	// Bad input: 400s naming the field; nothing is created.
	bad := base()
	bad.ProcessingGuarantees = "SOMETIMES"
	if err := fns.CreateFunc(bad, bin); httpCode(err) != 400 || !strings.Contains(err.Error(), "processingGuarantees") {
		t.Fatalf("bad guarantee: %v", err)
	}
	bad = base()
	bad.Output = in
	if err := fns.CreateFunc(bad, bin); httpCode(err) != 400 || !strings.Contains(err.Error(), "output") {
		t.Fatalf("output = input: %v", err)
	}
	notELF := filepath.Join(t.TempDir(), "fn.sh")
	if err := os.WriteFile(notELF, []byte("not a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad = base()
	if err := fns.CreateFunc(bad, notELF); httpCode(err) != 400 || !strings.Contains(err.Error(), "executable") {
		t.Fatalf("not an executable: %v", err)
	}
	bad = base()
	bad.Namespace = "nope"
	if err := fns.CreateFunc(bad, bin); httpCode(err) != 400 || !strings.Contains(err.Error(), "namespace") {
		t.Fatalf("missing namespace: %v", err)
	}
	if _, err := fns.GetFunction("public", "default", "adm"); httpCode(err) != 404 {
		t.Fatalf("a bad create left a function: %v", err)
	}

	if err := fns.CreateFunc(base(), bin); err != nil {
		t.Fatal(err)
	}
	if err := fns.CreateFunc(base(), bin); httpCode(err) != 400 {
		t.Fatalf("duplicate create: %v", err)
	}
	names, err := fns.GetFunctions("public", "default")
	if err != nil || !contains(names, "adm") {
		t.Fatalf("list: %v %v", names, err)
	}
	waitRunning(t, admin, "adm", 1)

	// Trigger returns the output. (pulsaradmin's TriggerFunction drops the answer it gets,
	// so the answer is checked over plain HTTP.)
	if _, err := fns.TriggerFunction("public", "default", "adm", in, "hi", ""); err != nil {
		t.Fatal(err)
	}
	if res := trigger(t, "adm", in, "hello"); res != `"hello!"` {
		t.Fatalf("trigger: %s", res)
	}

	// A crash restarts the instance with backoff and shows in status; later input flows.
	produce(t, client, in, "crash")
	waitFor(t, "the crash reported", func() (bool, error) {
		st, err := fns.GetFunctionStatusWithInstanceID("public", "default", "adm", 0)
		return err == nil && st.NumRestarts >= 1 && st.Running, fmt.Errorf("status %+v %v", st, err)
	})
	produce(t, client, in, "after")
	waitFor(t, "output after the crash", func() (bool, error) {
		return contains(readAll(t, client, out), "after!"), nil
	})
	if got := readAll(t, client, "persistent://public/default/adm-dlq"); !contains(got, "crash") {
		t.Fatalf("dead letter topic %v", got)
	}
	stats, err := fns.GetFunctionStats("public", "default", "adm")
	if err != nil || len(stats.Instances) != 1 || stats.ReceivedTotal < 1 {
		t.Fatalf("stats: %+v %v", stats, err)
	}

	// Stop and start.
	if err := fns.StopFunction("public", "default", "adm"); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, admin, "adm", 0)
	if err := fns.StartFunction("public", "default", "adm"); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, admin, "adm", 1)
	if err := fns.RestartFunctionWithID("public", "default", "adm", 0); err != nil {
		t.Fatal(err)
	}
	if err := fns.RestartFunctionWithID("public", "default", "adm", 5); httpCode(err) != 404 {
		t.Fatalf("restart of a missing instance: %v", err)
	}

	// Update: parallelism 2.
	up := base()
	up.Parallelism = 2
	if err := fns.UpdateFunction(up, "", nil); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, admin, "adm", 2)

	// State through the admin API.
	if err := fns.PutFunctionState("public", "default", "adm", utils.FunctionState{Key: "k", StringValue: "v"}); err != nil {
		t.Fatal(err)
	}
	st, err := fns.GetFunctionState("public", "default", "adm", "k")
	if err != nil || st.StringValue != "v" {
		t.Fatalf("state: %+v %v", st, err)
	}
	if _, err := fns.GetFunctionState("public", "default", "adm", "missing"); httpCode(err) != 404 {
		t.Fatalf("missing state key: %v", err)
	}

	// Worker endpoints.
	workers, err := admin.FunctionsWorker().GetCluster()
	if err != nil || len(workers) != 1 {
		t.Fatalf("cluster: %v %v", workers, err)
	}
	leader, err := admin.FunctionsWorker().GetClusterLeader()
	if err != nil || leader.WorkerID != workers[0].WorkerID {
		t.Fatalf("leader: %+v %v", leader, err)
	}
	assign, err := admin.FunctionsWorker().GetAssignments()
	if err != nil || len(assign[leader.WorkerID]) < 2 {
		t.Fatalf("assignments: %v %v", assign, err)
	}

	// Download gives the package back.
	dl := filepath.Join(t.TempDir(), "dl")
	if err := fns.DownloadFunctionByNs(dl, "public", "default", "adm"); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(bin)
	b, _ := os.ReadFile(dl)
	if len(a) == 0 || string(a) != string(b) {
		t.Fatalf("download: %d bytes, want %d", len(b), len(a))
	}

	if err := fns.DeleteFunction("public", "default", "adm"); err != nil {
		t.Fatal(err)
	}
	if _, err := fns.GetFunction("public", "default", "adm"); httpCode(err) != 404 {
		t.Fatalf("get after delete: %v", err)
	}
}

func trigger(t *testing.T, name, topic, value string) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("data", value)
	_ = mw.WriteField("topic", topic)
	_ = mw.Close()
	resp, err := http.Post("http://"+sa.HTTPAddr()+"/admin/v3/functions/public/default/"+name+"/trigger", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("trigger: %s: %s", resp.Status, b)
	}
	return strings.TrimSpace(string(b))
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// readAll reads what topic holds now.
func readAll(t *testing.T, c pulsar.Client, topic string) []string {
	t.Helper()
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	for r.HasNext() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		m, err := r.Next(ctx)
		cancel()
		if err != nil {
			break
		}
		out = append(out, string(m.Payload()))
	}
	return out
}

// TestStateSurvivesRestart counts words with the Go function, restarts its instance, and
// counts on from the stored state; the counter is readable through querystate.
func TestStateSurvivesRestart(t *testing.T) {
	admin := adminClient(t)
	client := pulsarClient(t)
	in, out := "persistent://public/default/wc-in", "persistent://public/default/wc-out"
	bin := goFunction(t)
	if err := admin.Functions().CreateFunc(&utils.FunctionConfig{Tenant: "public", Namespace: "default", Name: "wc",
		Inputs: []string{in}, Output: out, Go: strp(bin), Parallelism: 1, SubscriptionPosition: "Earliest", RetainOrdering: true,
		UserConfig: map[string]any{"mode": "wordcount"}}, bin); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, admin, "wc", 1)
	produce(t, client, in, "a b a")
	if got := consumeN(t, client, out, 1); got[0] != "a=1 b=1 a=2" {
		t.Fatalf("first count %v", got)
	}
	if err := admin.Functions().RestartFunction("public", "default", "wc"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the restarted instance", func() (bool, error) {
		st, err := admin.Functions().GetFunctionStatus("public", "default", "wc")
		return err == nil && st.NumRunning == 1, err
	})
	produce(t, client, in, "a")
	waitFor(t, "the count after the restart", func() (bool, error) {
		return contains(readAll(t, client, out), "a=3"), nil
	})
	st, err := admin.Functions().GetFunctionState("public", "default", "wc", "a")
	if err != nil || st.NumValue != 3 {
		t.Fatalf("querystate a: %+v %v", st, err)
	}
	_ = admin.Functions().DeleteFunction("public", "default", "wc")
}

// TestWindowWithLateData sums event-time windows of one second with the Go SDK's
// StartWindow; a record behind the watermark goes to the late-data topic.
func TestWindowWithLateData(t *testing.T) {
	admin := adminClient(t)
	client := pulsarClient(t)
	in, out, late := "persistent://public/default/win-in", "persistent://public/default/win-out", "persistent://public/default/win-late"
	bin := goFunction(t)
	length, lag, wm := int64(1000), int64(0), int64(100)
	extractor := "EventTime"
	if err := admin.Functions().CreateFunc(&utils.FunctionConfig{Tenant: "public", Namespace: "default", Name: "win",
		Inputs: []string{in}, Output: out, Go: strp(bin), Parallelism: 1, SubscriptionPosition: "Earliest", RetainOrdering: true,
		WindowConfig: &utils.WindowConfig{WindowLengthDurationMs: &length, MaxLagMs: &lag, WatermarkEmitIntervalMs: &wm,
			TimestampExtractorClassName: &extractor, LateDataTopic: &late}}, bin); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, admin, "win", 1)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: in, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	send := func(v int, ms int) {
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(strconv.Itoa(v)), EventTime: t0.Add(time.Duration(ms) * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	send(1, 100)
	send(2, 300)
	send(3, 900)
	send(10, 1500) // the watermark passes 1 s: the first window fires
	waitFor(t, "the first window", func() (bool, error) { return contains(readAll(t, client, out), "6"), nil })
	send(100, 200)   // behind the watermark: late
	send(20, 1700)   // same window as 10
	send(1000, 2500) // passes 2 s: the second window fires
	waitFor(t, "the second window", func() (bool, error) { return contains(readAll(t, client, out), "30"), nil })
	if got := readAll(t, client, late); fmt.Sprint(got) != "[100]" {
		t.Fatalf("late data %v", got)
	}
	if got := readAll(t, client, out); fmt.Sprint(got) != "[6 30]" {
		t.Fatalf("window sums %v", got)
	}
	_ = admin.Functions().DeleteFunction("public", "default", "win")
}

// TestAuthorizeSeam checks that Options.Authorize guards every functions route: the
// composition root's adapter over internal/auth plugs in here.
func TestAuthorizeSeam(t *testing.T) {
	ws := []struct {
		err  error
		code int
	}{{functions.ErrUnauthenticated, 401}, {functions.ErrForbidden, 403}}
	for _, c := range ws {
		h := functions.AuthorizeForTest(func(r *http.Request, tenant, ns string) error {
			if tenant == "public" && ns == "default" {
				return fmt.Errorf("%w: role x", c.err)
			}
			return nil
		})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/admin/v3/functions/public/default", nil))
		if rec.Code != c.code {
			t.Fatalf("%v: %d %s", c.err, rec.Code, rec.Body)
		}
	}
}
