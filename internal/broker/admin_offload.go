package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/admin"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// TriggerOffload implements admin.Offloader.
func (a AdminAPI) TriggerOffload(ctx context.Context, topic string, before admin.MessageID) error {
	_, ml, err := a.ledgerOf(ctx, topic)
	if err != nil {
		return err
	}
	return offloadErr(ml.OffloadAsync(managedledger.Position{LedgerID: before.LedgerID, EntryID: before.EntryID}))
}

// OffloadStatus implements admin.Offloader.
func (a AdminAPI) OffloadStatus(ctx context.Context, topic string) (admin.OffloadStatus, error) {
	t, ml, err := a.ledgerOf(ctx, topic)
	if err != nil {
		return admin.OffloadStatus{}, err
	}
	st := ml.OffloadStatus()
	return admin.OffloadStatus{Status: st.Status, LastError: st.LastError,
		FirstUnoffloadedMessage: admin.MessageID{LedgerID: st.FirstUnoffloaded.LedgerID, EntryID: st.FirstUnoffloaded.EntryID,
			PartitionIndex: t.name.Partition}}, nil
}

// offloadErr maps the managed ledger's offload refusals onto the admin error table: a run
// in progress is 409 (Pulsar's conflict), no driver is 412.
func offloadErr(err error) error {
	switch {
	case errors.Is(err, managedledger.ErrOffloadRunning):
		return fmt.Errorf("%w: %w", resources.ErrAlreadyExists, err)
	case errors.Is(err, managedledger.ErrOffloadDisabled):
		return fmt.Errorf("%w: %w", admin.ErrNotAllowed, err)
	}
	return adminErr(err)
}
