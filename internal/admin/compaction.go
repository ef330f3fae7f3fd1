package admin

import (
	"context"
	"fmt"
	"net/http"
)

// Compactor is what the compaction endpoints need from the broker; a Broker that does not
// implement it answers them with 501.
type Compactor interface {
	// Compact starts compacting the topic (Pulsar's triggerCompaction); one run per topic
	// at a time (409 while one runs).
	Compact(ctx context.Context, topic string) error
	CompactionStatus(ctx context.Context, topic string) (LongRunningProcessStatus, error)
}

// LongRunningProcessStatus is Pulsar's JSON for the state of a compaction.
type LongRunningProcessStatus struct {
	Status    string `json:"status"` // NOT_RUN, RUNNING, SUCCESS, ERROR
	LastError string `json:"lastError"`
}

// compactionTarget is the broker's compactor, the request's topic and its partition count
// (0: not partitioned).
func (s *server) compactionTarget(ctx context.Context, r *http.Request) (Compactor, topicRef, int, error) {
	c, ok := s.broker.(Compactor)
	if !ok {
		return nil, topicRef{}, 0, fmt.Errorf("%w: compaction", ErrNotSupported)
	}
	t, n, err := s.topicWithPartitions(ctx, r)
	return c, t, n, err
}

// triggerCompaction: PUT …/{topic}/compaction (204; 409 while a run is going on).
func (s *server) triggerCompaction(ctx context.Context, r *http.Request) (any, error) {
	c, t, n, err := s.compactionTarget(ctx, r)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, c.Compact(ctx, t.String())
	}
	// A partitioned topic: every partition where it is served, as Pulsar triggers them.
	return nil, forPartitions(n, func(i int) error {
		p := t.partition(i)
		return s.whereServed(ctx, p, func() error { return c.Compact(ctx, p) },
			ownerCall{method: http.MethodPut, rest: "/compaction", query: r.URL.Query()})
	})
}

// compactionStatus: GET …/{topic}/compaction.
func (s *server) compactionStatus(ctx context.Context, r *http.Request) (any, error) {
	c, t, n, err := s.compactionTarget(ctx, r)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return c.CompactionStatus(ctx, t.String())
	}
	// A partitioned topic: RUNNING while any partition runs, else ERROR if any failed
	// (its error), else SUCCESS if any ran, else NOT_RUN.
	sts, ok, err := eachPartitionAnswer(ctx, s, r, t, n, "/compaction", func(p string) (LongRunningProcessStatus, error) {
		return c.CompactionStatus(ctx, p)
	})
	if err != nil {
		return nil, err
	}
	out := LongRunningProcessStatus{Status: "NOT_RUN"}
	rank := map[string]int{"NOT_RUN": 0, "SUCCESS": 1, "ERROR": 2, "RUNNING": 3}
	for i, st := range sts {
		if ok[i] && rank[st.Status] > rank[out.Status] {
			out = st
		}
	}
	return out, nil
}
