package admin

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// resetPartitionToID handles reset-cursor-to-id on a partitioned topic: a message id names
// one ledger of one partition, so only the partition in its partitionIndex is reset (as
// Pulsar does); without a partition index the request is refused. handled is false for a
// topic that is not partitioned.
func (s *server) resetPartitionToID(ctx context.Context, r *http.Request, id MessageID) (handled bool, err error) {
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return true, err
	}
	n, err := s.partitionsOf(ctx, t)
	if err != nil || n == 0 {
		return err != nil, err
	}
	if id.PartitionIndex < 0 || id.PartitionIndex >= n {
		return true, fmt.Errorf("%w: resetting a partitioned topic to a message id needs its partitionIndex (0..%d), got %d", ErrNotAllowed, n-1, id.PartitionIndex)
	}
	return true, s.broker.ResetCursor(ctx, t.partition(id.PartitionIndex), r.PathValue("sub"), &id, time.Time{})
}

// registerNamespaceSubscriptions adds POST /admin/v2/namespaces/{t}/{ns}/unsubscribe/{sub}
// (pulsar-admin namespaces unsubscribe): the subscription is deleted from every topic of
// the namespace that has it; one with connected consumers stops it with 412, as a single
// topic's unsubscribe does.
func (s *server) registerNamespaceSubscriptions(mux *http.ServeMux) {
	mux.HandleFunc("POST /admin/v2/namespaces/{tenant}/{namespace}/unsubscribe/{sub}", s.handle(func(ctx context.Context, r *http.Request) (any, error) {
		sub := r.PathValue("sub")
		return nil, s.forNamespaceTopics(ctx, r, func(topic string) error {
			subs, err := s.broker.Subscriptions(ctx, topic)
			if err != nil || !slices.Contains(subs, sub) {
				return err
			}
			return s.broker.DeleteSubscription(ctx, topic, sub, false)
		})
	}))
}
