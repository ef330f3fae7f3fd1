package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

func httpCode(err error) int {
	var e rest.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// TestAdminSourcesAndSinks drives /admin/v3/sources and /admin/v3/sinks with pulsaradmin:
// the built-in lists, bad configs (400 naming the field, nothing created), a file source
// feeding a file sink through a topic, status with Pulsar's names, stop/start, update and
// delete.
func TestAdminSourcesAndSinks(t *testing.T) {
	a := admin(t)
	srcs, err := a.Sources().GetBuiltInSources()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, d := range srcs {
		names[d.Name] = true
	}
	for _, want := range []string{"file", "data-generator"} {
		if !names[want] {
			t.Fatalf("builtinsources lacks %s: %v", want, names)
		}
	}
	sinks, err := a.Sinks().GetBuiltInSinks()
	if err != nil || len(sinks) == 0 {
		t.Fatalf("builtinsinks: %v %v", sinks, err)
	}
	if err := a.Sources().ReloadBuiltInSources(); err != nil {
		t.Fatal(err)
	}

	in, out := t.TempDir(), t.TempDir()
	nar := filepath.Join(t.TempDir(), "connector.nar")
	writeFile(t, nar, "PK not really a nar")
	topic := "persistent://public/default/io-file-lines"
	src := &utils.SourceConfig{Tenant: "public", Namespace: "default", Name: "files-in", Archive: "builtin://file",
		TopicName: topic, Parallelism: 1, Configs: map[string]any{"inputDirectory": in, "pollingInterval": 200}}

	// Bad input: a 400 naming what is wrong; nothing is created.
	for _, c := range []struct {
		mutate func(*utils.SourceConfig)
		want   string
	}{
		{func(c *utils.SourceConfig) { c.Archive = "builtin://no-such-thing" }, "archive"},
		{func(c *utils.SourceConfig) { c.Archive = nar }, "data"},
		{func(c *utils.SourceConfig) { c.Configs = map[string]any{} }, "inputDirectory"},
		{func(c *utils.SourceConfig) {
			c.Configs = map[string]any{"inputDirectory": in, "pollingInterval": "soon"}
		}, "pollingInterval"},
		{func(c *utils.SourceConfig) { c.ProcessingGuarantees = "SOMETIMES" }, "processingGuarantees"},
		{func(c *utils.SourceConfig) { c.TopicName = "" }, "topicName"},
		{func(c *utils.SourceConfig) { c.Namespace = "nope" }, "namespace"},
	} {
		bad := *src
		c.mutate(&bad)
		err := a.Sources().CreateSource(&bad, bad.Archive)
		if httpCode(err) != 400 || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("bad source (%s): got %v", c.want, err)
		}
	}
	if _, err := a.Sources().GetSource("public", "default", "files-in"); httpCode(err) != 404 {
		t.Fatalf("a bad create left a source: %v", err)
	}

	if err := a.Sources().CreateSource(src, src.Archive); err != nil {
		t.Fatal(err)
	}
	if err := a.Sources().CreateSource(src, src.Archive); httpCode(err) != 400 {
		t.Fatalf("second create: %v", err)
	}
	sink := &utils.SinkConfig{Tenant: "public", Namespace: "default", Name: "files-out", Archive: "builtin://file",
		Inputs: []string{topic}, Parallelism: 1, SourceSubscriptionPosition: "Earliest",
		Configs: map[string]any{"outputDirectory": out, "format": "line", "timeoutMs": 50}}
	badSink := *sink
	badSink.ProcessingGuarantees = "EFFECTIVELY_ONCE"
	if err := a.Sinks().CreateSink(&badSink, badSink.Archive); httpCode(err) != 400 || !strings.Contains(err.Error(), "processingGuarantees") {
		t.Fatalf("effectively-once file sink: %v", err)
	}
	if err := a.Sinks().CreateSink(sink, sink.Archive); err != nil {
		t.Fatal(err)
	}
	got, err := a.Sinks().GetSink("public", "default", "files-out")
	if err != nil || got.Archive != "builtin://file" || got.Configs["outputDirectory"] != out || len(got.Inputs) != 1 {
		t.Fatalf("get sink: %+v %v", got, err)
	}
	if list, err := a.Sources().ListSources("public", "default"); err != nil || fmt.Sprint(list) != "[files-in]" {
		t.Fatalf("list sources: %v %v", list, err)
	}
	if list, err := a.Sinks().ListSinks("public", "default"); err != nil || fmt.Sprint(list) != "[files-out]" {
		t.Fatalf("list sinks: %v %v", list, err)
	}
	// A source is not a sink, nor a function.
	if _, err := a.Sinks().GetSink("public", "default", "files-in"); httpCode(err) != 404 {
		t.Fatalf("source read as a sink: %v", err)
	}
	if _, err := a.Functions().GetFunction("public", "default", "files-in"); httpCode(err) != 404 {
		t.Fatalf("source read as a function: %v", err)
	}
	if fns, err := a.Functions().GetFunctions("public", "default"); err != nil || len(fns) != 0 {
		t.Fatalf("functions list shows connectors: %v %v", fns, err)
	}

	eventually(t, "source and sink running", func() (bool, error) {
		s1, err := a.Sources().GetSourceStatus("public", "default", "files-in")
		if err != nil {
			return false, err
		}
		s2, err := a.Sinks().GetSinkStatus("public", "default", "files-out")
		return s1.NumRunning == 1 && s2.NumRunning == 1, err
	})

	var lines []string
	for i := 0; i < 50; i++ {
		lines = append(lines, fmt.Sprintf("line-%03d", i))
	}
	writeFile(t, filepath.Join(in, "a.txt"), strings.Join(lines[:25], "\n")+"\n")
	writeFile(t, filepath.Join(in, "b.txt"), strings.Join(lines[25:], "\n")+"\n")

	eventually(t, "all lines in the sink's files", func() (bool, error) {
		got := readLines(t, out)
		return len(got) >= len(lines), fmt.Errorf("%d lines", len(got))
	})
	got2 := readLines(t, out)
	sort.Strings(got2)
	if fmt.Sprint(got2) != fmt.Sprint(lines) {
		t.Fatalf("sink wrote %v\nwant %v", got2, lines)
	}
	eventually(t, "input files removed once published", func() (bool, error) {
		ents, err := os.ReadDir(in)
		return err == nil && len(ents) == 0, err
	})

	st, err := a.Sources().GetSourceStatus("public", "default", "files-in")
	if err != nil || st.Instances[0].Status.NumWritten != 50 || st.Instances[0].Status.NumReceivedFromSource != 50 || st.Instances[0].Status.WorkerID == "" {
		t.Fatalf("source status: %+v %v", st, err)
	}
	eventually(t, "sink status counts", func() (bool, error) {
		st, err := a.Sinks().GetSinkStatusWithID("public", "default", "files-out", 0)
		return st.NumWrittenToSink == 50 && st.NumReadFromPulsar == 50, fmt.Errorf("%+v %v", st, err)
	})

	// stop / start / restart and update.
	if err := a.Sinks().StopSink("public", "default", "files-out"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "sink stopped", func() (bool, error) {
		st, err := a.Sinks().GetSinkStatus("public", "default", "files-out")
		return err == nil && st.NumRunning == 0, err
	})
	writeFile(t, filepath.Join(in, "c.txt"), "while-stopped\n")
	if err := a.Sinks().StartSink("public", "default", "files-out"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the line published while the sink was stopped", func() (bool, error) {
		return len(readLines(t, out)) == 51, nil
	})
	upd := &utils.SinkConfig{Tenant: "public", Namespace: "default", Name: "files-out", Configs: map[string]any{"outputDirectory": out, "format": "json"}}
	if err := a.Sinks().UpdateSink(upd, "", nil); err != nil {
		t.Fatal(err)
	}
	got, err = a.Sinks().GetSink("public", "default", "files-out")
	if err != nil || got.Configs["format"] != "json" || len(got.Inputs) != 1 {
		t.Fatalf("after update: %+v %v", got, err)
	}
	if err := a.Sources().RestartSource("public", "default", "files-in"); err != nil {
		t.Fatal(err)
	}

	if err := a.Sinks().DeleteSink("public", "default", "files-out"); err != nil {
		t.Fatal(err)
	}
	if err := a.Sources().DeleteSource("public", "default", "files-in"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sources().GetSource("public", "default", "files-in"); httpCode(err) != 404 {
		t.Fatalf("deleted source: %v", err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// readLines returns the lines of every file in dir.
func readLines(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
	}
	return out
}
