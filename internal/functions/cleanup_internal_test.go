package functions

import (
	"slices"
	"testing"
)

// TestCleanupOf: what deleting a component leaves to clean up, by cleanupSubscription
// (unset: true), its subscription name (default the FQFN) and its inputs (short names
// normalized, patterns by namespace).
func TestCleanupOf(t *testing.T) {
	pattern := "persistent://acme/app/in-.*"
	fn := &FunctionMeta{ComponentType: ComponentFunction, Config: FunctionConfig{FQFN: "t/ns/f",
		InputSpecs: map[string]ConsumerConfig{"a": {}, "persistent://t/ns/b": {}, pattern: {RegexPattern: true}}}}
	c, ok := cleanupOf(fn)
	slices.Sort(c.topics)
	if !ok || c.sub != "t/ns/f" || !slices.Equal(c.topics, []string{"persistent://public/default/a", "persistent://t/ns/b"}) || !slices.Equal(c.patterns, []string{pattern}) {
		t.Fatalf("unset: %+v %v", c, ok)
	}
	fn.Config.SubName = "mine"
	if c, _ := cleanupOf(fn); c.sub != "mine" {
		t.Fatalf("subName: %+v", c)
	}
	fn.Config.CleanupSubscription = boolPtr(false)
	if _, ok := cleanupOf(fn); ok {
		t.Fatal("cleanupSubscription=false still cleans up")
	}
	sink := &FunctionMeta{ComponentType: ComponentSink, Config: FunctionConfig{FQFN: "t/ns/s"},
		Sink: &SinkConfig{TopicsPattern: &pattern, CleanupSubscription: boolPtr(true)}}
	if c, ok := cleanupOf(sink); !ok || c.sub != "t/ns/s" || !slices.Equal(c.patterns, []string{pattern}) {
		t.Fatalf("sink: %+v %v", c, ok)
	}
	if _, ok := cleanupOf(&FunctionMeta{ComponentType: ComponentSource, Source: &SourceConfig{}}); ok {
		t.Fatal("a source has no input subscription")
	}
	for p, want := range map[string]string{pattern: "acme/app", "in-.*": "public/default", "non-persistent://x/y/z.*": "x/y"} {
		if tn, ns := patternNamespace(p); tn+"/"+ns != want {
			t.Errorf("%s: %s/%s, want %s", p, tn, ns, want)
		}
	}
}
