package admin

import (
	"context"
	"fmt"
	"net/http"
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
