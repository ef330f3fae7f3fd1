package managedledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/ledger"
)

// Side ledgers are ledgers that belong to a managed ledger without being part of its log:
// the topic compactor's compacted ledgers (Pulsar keeps those outside the managed ledger's
// list too, named by a property of the __compaction cursor). They are created with the
// managed ledger's own ensemble, quorums, digest and password, so in a cluster they live on
// the same bookies with the same durability; who references them is the caller's business.

// SideWriter appends to a side ledger.
type SideWriter struct {
	w ledger.Writer
}

// ID is the ledger's id.
func (w *SideWriter) ID() int64 { return w.w.ID() }

// AppendAsync queues data as the next entry; done runs in entry order once the entry is
// durable on the ack quorum, or with an error (after which later appends fail too). data
// must not be modified afterwards.
func (w *SideWriter) AppendAsync(data []byte, done func(entryID int64, err error)) {
	w.w.AppendAsync(data, done)
}

// Close waits for pending appends and closes the ledger (its last entry id recorded).
func (w *SideWriter) Close(ctx context.Context) error { return w.w.Close(ctx) }

// SideReader reads a closed side ledger.
type SideReader struct {
	r ledger.Reader
}

// ID is the ledger's id.
func (r *SideReader) ID() int64 { return r.r.ID() }

// LastEntryID is the id of the ledger's last entry, -1 when it is empty.
func (r *SideReader) LastEntryID() int64 { return r.r.LastAddConfirmed() }

// Read returns the data of entries first..last inclusive.
func (r *SideReader) Read(ctx context.Context, first, last int64) ([][]byte, error) {
	es, err := r.r.Read(ctx, first, last)
	if err != nil {
		return nil, fmt.Errorf("managedledger: side ledger %d: reading %d..%d: %w", r.r.ID(), first, last, err)
	}
	out := make([][]byte, len(es))
	for i, e := range es {
		out[i] = e.Data
	}
	return out, nil
}

// Close releases the reader.
func (r *SideReader) Close() error { return r.r.Close() }

// CreateSideLedger creates a ledger with the managed ledger's storage settings; component
// names its purpose in the ledger's custom metadata (for whoever lists ledgers by hand).
func (ml *ManagedLedger) CreateSideLedger(ctx context.Context, component string) (*SideWriter, error) {
	ml.mu.Lock()
	cfg := ml.cfg
	ml.mu.Unlock()
	w, err := ml.f.lc.Create(ctx, ledger.CreateOptions{
		EnsembleSize:   cfg.EnsembleSize,
		WriteQuorum:    cfg.WriteQuorum,
		AckQuorum:      cfg.AckQuorum,
		Digest:         cfg.Digest,
		Password:       cfg.Password,
		CustomMetadata: map[string]string{"application": "magnetar", "component": component, "managedLedger": ml.name},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: creating %s ledger: %w", ErrLedgerUnavailable, ml.name, component, err)
	}
	return &SideWriter{w: w}, nil
}

// OpenSideLedger opens a side ledger for reading. It opens with recovery, so a ledger its
// writer left open (a crash) is fenced and closed at what is durable.
func (ml *ManagedLedger) OpenSideLedger(ctx context.Context, id int64) (*SideReader, error) {
	ml.mu.Lock()
	password := ml.cfg.Password
	ml.mu.Unlock()
	r, err := ml.f.lc.Open(ctx, id, ledger.OpenOptions{Recovery: true, Password: password})
	if err != nil {
		return nil, fmt.Errorf("managedledger: %s: opening side ledger %d: %w", ml.name, id, err)
	}
	return &SideReader{r: r}, nil
}

// DeleteSideLedger deletes a side ledger; one already gone is no error.
func (ml *ManagedLedger) DeleteSideLedger(ctx context.Context, id int64) error {
	err := ml.f.lc.Delete(ctx, id)
	if err == nil || errors.Is(err, ledger.ErrNoSuchLedger) {
		return nil
	}
	return fmt.Errorf("managedledger: %s: deleting side ledger %d: %w", ml.name, id, err)
}

// IsNoSuchLedger tells whether err says the ledger does not exist (deleted by hand, or
// never created).
func IsNoSuchLedger(err error) bool { return errors.Is(err, ledger.ErrNoSuchLedger) }
