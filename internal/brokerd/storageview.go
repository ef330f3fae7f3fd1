package brokerd

import (
	"context"

	"github.com/magnetar-io/magnetar/internal/admin"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

// storageView adapts the ledger client's read-only views of the storage layer to the admin
// API (admin.Storage), which must not import internal/ledger itself.
type storageView struct{ store metadata.Store }

var _ admin.Storage = storageView{}

// NewStorageView is the admin API's view of the storage layer under store (admin.Storage).
func NewStorageView(store metadata.Store) admin.Storage { return storageView{store} }

// BookieStates implements admin.Storage with ledger.ListBookies.
func (v storageView) BookieStates(ctx context.Context) ([]admin.BookieState, error) {
	bs, err := ledger.ListBookies(ctx, v.store)
	if err != nil {
		return nil, err
	}
	out := make([]admin.BookieState, 0, len(bs))
	for _, b := range bs {
		out = append(out, admin.BookieState{Address: b.Address, Rack: b.Rack, State: b.State, Decommissioned: b.Decommissioned})
	}
	return out, nil
}

// UnderReplicated implements admin.Storage with ledger.UnderReplicated.
func (v storageView) UnderReplicated(ctx context.Context) ([]admin.UnderReplicatedLedger, error) {
	ls, err := ledger.UnderReplicated(ctx, v.store)
	if err != nil {
		return nil, err
	}
	out := make([]admin.UnderReplicatedLedger, 0, len(ls))
	for _, l := range ls {
		out = append(out, admin.UnderReplicatedLedger{LedgerID: l.LedgerID, Missing: l.Missing})
	}
	return out, nil
}
