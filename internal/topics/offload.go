package topics

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// Tiered storage operations (pulsar-admin topics offload, offload-status).

// Errors of an offload request: one runs already (the admin API answers 409), or the broker
// has no tiered storage (412, as a class of ErrNotAllowed).
var (
	ErrOffloadRunning  = errors.New("topics: an offload is running")
	ErrOffloadDisabled = fmt.Errorf("%w: no tiered storage configured", wire.ErrNotAllowed)
)

// OffloadStatus is a topic's offload run (Pulsar's OffloadProcessStatus).
type OffloadStatus = managedledger.OffloadStatus

// TriggerOffload starts offloading every closed ledger of the topic wholly before before
// (Pulsar's triggerOffload); one run per topic at a time.
func (s *Service) TriggerOffload(ctx context.Context, name Name, before Position) error {
	t, err := s.persistentTopic(ctx, name, false)
	if err != nil {
		return err
	}
	return offloadErr(t.log.ml.OffloadAsync(before))
}

// OffloadStatus reports the topic's last (or running) offload.
func (s *Service) OffloadStatus(ctx context.Context, name Name) (OffloadStatus, error) {
	t, err := s.persistentTopic(ctx, name, false)
	if err != nil {
		return OffloadStatus{}, err
	}
	return t.log.ml.OffloadStatus(), nil
}

func offloadErr(err error) error {
	switch {
	case errors.Is(err, managedledger.ErrOffloadRunning):
		return fmt.Errorf("%w: %w", ErrOffloadRunning, err)
	case errors.Is(err, managedledger.ErrOffloadDisabled):
		return fmt.Errorf("%w: %w", ErrOffloadDisabled, err)
	}
	return mlErr(err)
}
