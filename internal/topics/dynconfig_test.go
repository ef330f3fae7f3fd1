package topics

import (
	"context"
	"errors"
	"testing"
	"time"
)

// waitDynamic polls s until key has want (the watch applies changes asynchronously).
func waitDynamic(t *testing.T, s *Service, key, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := s.DynamicConfig().Values()[key]
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %q, want %q", key, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDynamicConfigReachesOtherBrokers: a change made through one broker reaches another
// broker on the same metadata store through its watch, a broker started later applies the
// stored override at start, and a delete through any broker restores every broker's start
// value of that key only.
func TestDynamicConfigReachesOtherBrokers(t *testing.T) {
	backend := newMemBackend(t)
	b := backend.start(t, nil)
	other := func() *Service { return backend.start(t, nil).Service }
	s2 := other()
	ctx := context.Background()
	if err := b.DynamicConfig().Set(ctx, "maxUnackedMessagesPerConsumer", "9"); err != nil {
		t.Fatal(err)
	}
	if err := b.DynamicConfig().Set(ctx, "exposeTopicLevelMetricsInPrometheus", "false"); err != nil {
		t.Fatal(err)
	}
	waitDynamic(t, s2, "maxUnackedMessagesPerConsumer", "9")
	waitDynamic(t, s2, "exposeTopicLevelMetricsInPrometheus", "false")
	if s2.dyn.maxUnackedConsumer() != 9 || s2.DynamicConfig().TopicLevelMetrics() {
		t.Fatal("values listed but not applied")
	}
	s3 := other()
	waitDynamic(t, s3, "maxUnackedMessagesPerConsumer", "9")

	if err := s2.DynamicConfig().Delete(ctx, "maxUnackedMessagesPerConsumer"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Service{b.Service, s2, s3} {
		waitDynamic(t, s, "maxUnackedMessagesPerConsumer", "50000")
		waitDynamic(t, s, "exposeTopicLevelMetricsInPrometheus", "false")
	}

	if err := b.DynamicConfig().Set(ctx, "brokerServicePort", "1"); !errors.Is(err, ErrNotDynamic) {
		t.Fatalf("static key: %v", err)
	}
	if err := b.DynamicConfig().Set(ctx, "dispatcherMaxReadBatchSize", "0"); !errors.Is(err, ErrBadDynamicValue) {
		t.Fatalf("out of bounds: %v", err)
	}
}
