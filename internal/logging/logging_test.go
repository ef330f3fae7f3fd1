package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestNewJSONFiltersByLevel(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(&buf, "json", "warn")
	if err != nil {
		t.Fatal(err)
	}
	Component(l, "bookie").Info("hidden")
	Component(l, "bookie").Warn("shown", "k", 1)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want 1 line, got %q", buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["component"] != "bookie" || rec["msg"] != "shown" {
		t.Fatalf("unexpected record %v", rec)
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	if _, err := New(&bytes.Buffer{}, "xml", "info"); err == nil {
		t.Fatal("xml format accepted")
	}
	if _, err := New(&bytes.Buffer{}, "text", "loud"); err == nil {
		t.Fatal("bad level accepted")
	}
}
