package lakehouse

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

// Maintainer runs table maintenance steps for the external tests (the service runs them on
// a timer).
type Maintainer struct{ s *Service }

func NewMaintainer(store metadata.Store, cfg config.IcebergConfig) (*Maintainer, error) {
	cat, err := NewCatalog(store, cfg)
	if err != nil {
		return nil, err
	}
	return &Maintainer{&Service{cfg: cfg, cat: cat, log: slog.New(slog.DiscardHandler)}}, nil
}

func (m *Maintainer) ExpireRows(ctx context.Context, id Ident, cutoff time.Time) error {
	return m.s.expireRows(ctx, id, cutoff)
}

func (m *Maintainer) ExpireSnapshots(ctx context.Context, id Ident, age time.Duration) error {
	return m.s.expireSnapshots(ctx, id, age)
}

// TableState is what the tests look at of a table's current metadata.
type TableState struct {
	DataFiles             []string
	Operation             string
	Snapshots, LogEntries int
}

func (m *Maintainer) State(ctx context.Context, id Ident) (TableState, error) {
	tbl, _, err := m.s.cat.load(ctx, id)
	if err != nil {
		return TableState{}, err
	}
	st := TableState{Snapshots: len(tbl.md.Snapshots), LogEntries: len(tbl.md.SnapshotLog)}
	if cur := tbl.md.current(); cur != nil {
		st.Operation = cur.Summary["operation"]
	}
	_, live, err := m.s.cat.snapshotFiles(ctx, tbl.md.current(), true)
	for _, lf := range live {
		st.DataFiles = append(st.DataFiles, lf.entry.File.Path)
	}
	return st, err
}

// Exists tells whether a table file is in the warehouse.
func (m *Maintainer) Exists(ctx context.Context, loc string) (bool, error) {
	_, err := m.s.cat.io.read(ctx, loc)
	if errors.Is(err, errNotFound) {
		return false, nil
	}
	return err == nil, err
}
