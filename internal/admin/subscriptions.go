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
	t, n, err := s.topicWithPartitions(ctx, r)
	if err != nil || n == 0 {
		return err != nil, err
	}
	if id.PartitionIndex < 0 || id.PartitionIndex >= n {
		return true, fmt.Errorf("%w: resetting a partitioned topic to a message id needs its partitionIndex (0..%d), got %d", ErrNotAllowed, n-1, id.PartitionIndex)
	}
	p := t.partition(id.PartitionIndex)
	return true, s.whereServed(ctx, p, func() error { return s.broker.ResetCursor(ctx, p, r.PathValue("sub"), &id, time.Time{}) },
		ownerCall{method: http.MethodPost, rest: restOf(r, t), body: id})
}

// registerNamespaceSubscriptions adds the namespace-wide subscription verbs and their
// per-bundle forms (pulsar-admin namespaces clear-backlog [-s] [-b], unsubscribe -s [-b]):
//
//	POST /admin/v2/namespaces/{t}/{ns}[/{bundle}]/clearBacklog[/{sub}]
//	POST /admin/v2/namespaces/{t}/{ns}[/{bundle}]/unsubscribe/{sub}
//
// Here they act on the topics this process serves (a standalone: all); in a cluster the
// ownership layer fans the namespace forms out to every bundle's owner and sends a bundle
// form to its owner first (ownership/nsverbs.go). Unsubscribe deletes the subscription from
// every topic that has it; one with connected consumers stops it with 412, as a single
// topic's unsubscribe does.
//
// The bundle forms are registered as {bundle}/{verb}[/{sub}]: a literal verb after the
// bundle would conflict in the mux with .../clearBacklog/{sub} and every other two-segment
// namespace route, which stay more specific than these and win.
func (s *server) registerNamespaceSubscriptions(mux *http.ServeMux) {
	const ns = "POST /admin/v2/namespaces/{tenant}/{namespace}"
	mux.HandleFunc(ns+"/clearBacklog", s.handle(s.clearNamespaceBacklog))
	mux.HandleFunc(ns+"/clearBacklog/{sub}", s.handle(s.clearNamespaceBacklog))
	mux.HandleFunc(ns+"/unsubscribe/{sub}", s.handle(s.unsubscribeNamespace))
	mux.HandleFunc(ns+"/{bundle}/{verb}", s.handle(s.bundleVerb))
	mux.HandleFunc(ns+"/{bundle}/{verb}/{sub}", s.handle(s.bundleVerb))
}

// bundleVerb serves .../{bundle}/clearBacklog[/{sub}] and .../{bundle}/unsubscribe/{sub}.
func (s *server) bundleVerb(ctx context.Context, r *http.Request) (any, error) {
	switch verb, sub := r.PathValue("verb"), r.PathValue("sub"); {
	case verb == "clearBacklog":
		return s.clearNamespaceBacklog(ctx, r)
	case verb == "unsubscribe" && sub != "":
		return s.unsubscribeNamespace(ctx, r)
	}
	return nil, fmt.Errorf("%w: %s %s", errNotFound, r.Method, r.URL.Path)
}

func (s *server) unsubscribeNamespace(ctx context.Context, r *http.Request) (any, error) {
	sub := r.PathValue("sub")
	return nil, s.forNamespaceTopics(ctx, r, func(topic string) error {
		subs, err := s.broker.Subscriptions(ctx, topic)
		if err != nil || !slices.Contains(subs, sub) {
			return err
		}
		return s.broker.DeleteSubscription(ctx, topic, sub, false)
	})
}
