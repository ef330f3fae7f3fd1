package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Offloader is what the offload endpoints need from the broker; a Broker that does not
// implement it answers them with 501.
type Offloader interface {
	// TriggerOffload starts offloading every closed ledger wholly before `before` (Pulsar's
	// triggerOffload); one run per topic at a time.
	TriggerOffload(ctx context.Context, topic string, before MessageID) error
	OffloadStatus(ctx context.Context, topic string) (OffloadStatus, error)
}

// OffloadStatus is Pulsar's OffloadProcessStatus JSON.
type OffloadStatus struct {
	Status                  string    `json:"status"` // NOT_RUN, RUNNING, SUCCESS, ERROR
	LastError               string    `json:"lastError"`
	FirstUnoffloadedMessage MessageID `json:"firstUnoffloadedMessage"`
}

func (s *server) offloader() (Offloader, error) {
	o, ok := s.broker.(Offloader)
	if !ok {
		return nil, fmt.Errorf("%w: tiered storage", ErrNotSupported)
	}
	return o, nil
}

// triggerOffload: PUT …/{topic}/offload with a MessageId body.
func (s *server) triggerOffload(ctx context.Context, r *http.Request) (any, error) {
	o, err := s.offloader()
	if err != nil {
		return nil, err
	}
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	var id MessageID
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("%w: reading body: %w", ErrBadRequest, err)
	}
	if err := json.Unmarshal(body, &id); err != nil {
		return nil, fmt.Errorf("%w: the body must be a MessageId ({\"ledgerId\":…,\"entryId\":…}): %w", ErrBadRequest, err)
	}
	if id.LedgerID < 0 {
		return nil, fmt.Errorf("%w: ledgerId %d", ErrBadRequest, id.LedgerID)
	}
	return nil, o.TriggerOffload(ctx, t.String(), id)
}

// offloadStatus: GET …/{topic}/offload.
func (s *server) offloadStatus(ctx context.Context, r *http.Request) (any, error) {
	o, err := s.offloader()
	if err != nil {
		return nil, err
	}
	t, err := s.topicOf(ctx, r)
	if err != nil {
		return nil, err
	}
	return o.OffloadStatus(ctx, t.String())
}
