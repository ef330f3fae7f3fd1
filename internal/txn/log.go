package txn

import (
	"context"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/managedledger"
)

// Position is a place in a managed ledger (the topic logs and this package's own logs).
type Position = managedledger.Position

// recordLog is a managed ledger used as a log of records (the coordinator log, a topic's
// transaction state): records are appended in order, a record no longer needed is
// acknowledged on the log's one durable cursor (so the managed ledger trims it once every
// older one is too), and a few counters live in that cursor's properties. Replay reads the
// records not acknowledged, oldest first.
//
// The cursor persists at most MaxUnackedRangesToPersist acknowledged spans: after a crash
// some acknowledged records may come back. Every reader of such a log treats a record
// whose context is gone (its transaction's first record was acknowledged) as acknowledged.
type recordLog struct {
	ml  *managedledger.ManagedLedger
	cur *managedledger.Cursor
	// batch gathers records into shared entries (log_batch.go); nil: one entry each.
	batch   *batchWriter
	tracker recordTracker
}

// logCursor is the name of the one cursor of a record log.
const logCursor = "transaction.subscription"

// replayBatch bounds one read of a replay.
const replayBatch = 512

// openRecordLog opens (creating if needed) the log called name, batching its writes as bc
// says. Opening fences a previous owner's writes.
func openRecordLog(ctx context.Context, f *managedledger.Factory, name string, bc BatchConfig) (*recordLog, error) {
	ml, err := f.Open(ctx, name, f.DefaultConfig())
	if err != nil {
		return nil, fmt.Errorf("txn: opening log %s: %w", name, err)
	}
	cur, err := ml.OpenCursor(ctx, logCursor, managedledger.InitialPositionEarliest)
	if err != nil {
		_ = ml.Close(ctx)
		return nil, fmt.Errorf("txn: opening the cursor of log %s: %w", name, err)
	}
	l := &recordLog{ml: ml, cur: cur}
	if bc.Enabled && bc.MaxRecords > 1 {
		l.batch = &batchWriter{l: l, cfg: bc}
	}
	return l, nil
}

// replay calls fn with every record not acknowledged, in log order (a batched entry's in
// their order in it).
func (l *recordLog) replay(ctx context.Context, fn func(recPos, []byte) error) error {
	for {
		es, err := l.cur.ReadEntries(ctx, replayBatch, 8<<20)
		if err != nil {
			return fmt.Errorf("txn: replaying %s: %w", l.ml.Name(), err)
		}
		if len(es) == 0 {
			return nil
		}
		for _, e := range es {
			recs, err := decodeBatch(e.Data)
			if err != nil {
				return fmt.Errorf("txn: replaying %s at %s: %w", l.ml.Name(), e.Position, err)
			}
			if len(recs) > 1 {
				l.tracker.added(e.Position, len(recs))
			}
			for i, rec := range recs {
				if err := fn(recPos{e.Position, int32(i)}, rec); err != nil {
					return fmt.Errorf("txn: replaying %s at %s: %w", l.ml.Name(), e.Position, err)
				}
			}
		}
	}
}

// append stores rec; cb is called once, in append order, when it is durable or failed. An
// error returned by append itself means cb is never called (batched, append never fails:
// the batch's write reports to every callback).
func (l *recordLog) append(rec []byte, cb func(recPos, error)) error {
	if l.batch != nil {
		l.batch.append(rec, cb)
		return nil
	}
	return l.ml.AddEntry(rec, func(p Position, err error) { cb(recPos{Position: p}, err) })
}

// drop acknowledges records no longer needed, the records of one transaction together:
// their entries are acknowledged once nothing else in them is needed, oldest first
// (log_batch.go).
func (l *recordLog) drop(ps ...recPos) error {
	if len(ps) == 0 {
		return nil
	}
	if ents := l.tracker.drop(ps); len(ents) > 0 {
		return l.cur.Delete(ents...)
	}
	return nil
}

// props is the log cursor's properties (nil when none).
func (l *recordLog) props() map[string]int64 { return l.cur.Properties() }

// setProps replaces the properties; they are persisted with the next cursor state, which
// includes every acknowledgement made after this call.
func (l *recordLog) setProps(p map[string]int64) error {
	return l.cur.MarkDeleteWithProperties(l.cur.MarkDeletePosition(), p)
}

// name is the managed ledger's name.
func (l *recordLog) name() string { return l.ml.Name() }

// close persists the cursor and closes the managed ledger (waiting for appends in flight).
func (l *recordLog) close(ctx context.Context) error {
	if l.batch != nil {
		l.batch.flush() // records waiting for their batch's delay go now, not after the close
	}
	err := l.cur.Close(ctx)
	if cerr := l.ml.Close(ctx); err == nil {
		err = cerr
	}
	return err
}
