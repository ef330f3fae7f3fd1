package admin

import (
	"context"
	"errors"
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

func (s *server) compactor() (Compactor, error) {
	c, ok := s.broker.(Compactor)
	if !ok {
		return nil, fmt.Errorf("%w: compaction", ErrNotSupported)
	}
	return c, nil
}

// triggerCompaction: PUT …/{topic}/compaction (204; 409 while a run is going on).
func (s *server) triggerCompaction(ctx context.Context, r *http.Request) (any, error) {
	c, err := s.compactor()
	if err != nil {
		return nil, err
	}
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	n, err := s.partitionsOf(ctx, t)
	if err != nil || n == 0 {
		if err != nil {
			return nil, err
		}
		return nil, c.Compact(ctx, t.String())
	}
	// A partitioned topic: every partition, as Pulsar triggers them.
	var errs []error
	for i := range n {
		if err := c.Compact(ctx, t.partition(i)); err != nil {
			errs = append(errs, err)
		}
	}
	return nil, errors.Join(errs...)
}

// compactionStatus: GET …/{topic}/compaction.
func (s *server) compactionStatus(ctx context.Context, r *http.Request) (any, error) {
	c, err := s.compactor()
	if err != nil {
		return nil, err
	}
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	n, err := s.partitionsOf(ctx, t)
	if err != nil || n == 0 {
		if err != nil {
			return nil, err
		}
		return c.CompactionStatus(ctx, t.String())
	}
	// A partitioned topic: RUNNING while any partition runs, else ERROR if any failed
	// (its error), else SUCCESS if any ran, else NOT_RUN.
	out := LongRunningProcessStatus{Status: "NOT_RUN"}
	rank := map[string]int{"NOT_RUN": 0, "SUCCESS": 1, "ERROR": 2, "RUNNING": 3}
	for i := range n {
		st, err := c.CompactionStatus(ctx, t.partition(i))
		if err != nil {
			return nil, err
		}
		if rank[st.Status] > rank[out.Status] {
			out = st
		}
	}
	return out, nil
}
