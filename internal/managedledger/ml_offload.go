package managedledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/offload"
)

// Tiered storage of a managed ledger (docs/design/offload.md). A closed ledger is offloaded
// in three ledger-list writes, so that a crash or a failure at any point leaves it readable
// and never references a half-written object:
//
//  1. prepare: record a new uuid with complete=false (reads still go to the bookies; the
//     uuid lets a later attempt delete what a crashed one left);
//  2. upload both objects (offload.Offloader verifies them), then record complete=true;
//  3. after managedLedgerOffloadDeletionLagInMillis, record bookkeeperDeleted=true and
//     then delete the bookie copy.
//
// Reads of a complete ledger go to tiered storage unless the read priority is
// bookkeeper-first and the bookie copy still exists. Retention and deletion delete the
// objects too; a refused delete is queued on the factory and retried (Factory.
// PendingOffloadDeletes reports them).

// offloadContext is a ledger's offload state in the ledger list (JSON, doc.go).
type offloadContext struct {
	UUID              string            `json:"uuid"`
	Complete          bool              `json:"complete"`
	BookkeeperDeleted bool              `json:"bookkeeperDeleted,omitempty"`
	Timestamp         int64             `json:"timestamp,omitempty"` // when complete, Unix ms
	DriverName        string            `json:"driverName,omitempty"`
	DriverMetadata    map[string]string `json:"driverMetadata,omitempty"`
}

// Offload run states (Pulsar's LongRunningProcessStatus).
const (
	OffloadNotRun  = "NOT_RUN"
	OffloadRunning = "RUNNING"
	OffloadSuccess = "SUCCESS"
	OffloadError   = "ERROR"
)

// Errors of offloading.
var (
	ErrOffloadRunning  = errors.New("managedledger: an offload is already running")
	ErrOffloadDisabled = errors.New("managedledger: no offload driver configured")
)

// OffloadStatus is the state of the last offload run (Pulsar's OffloadProcessStatus).
type OffloadStatus struct {
	Status    string
	LastError string
	// FirstUnoffloaded is the first entry not in tiered storage after the run.
	FirstUnoffloaded Position
}

type offloadState struct {
	running bool
	status  OffloadStatus
	done    chan struct{} // closed when the running offload ends
}

// offloadAttempts bounds the tries per ledger within one run, each under a new uuid.
const offloadAttempts = 3

// Which offloader: Config.Offloader when set; else, with a factory OffloadPool, the
// pool's offloader of the effective policy (Config.OffloadPolicies over the factory's
// OffloadPolicies) for new offloads, and for reads and deletes the offloader of the place
// each ledger's offload context records (its driver name and metadata), so a policy that
// changes driver or bucket strands nothing; else the factory's Offloader. Pool offloaders
// are leased per use (an offload run, an open read handle, a delete) and the pool closes
// one when its last lease ends.

// noRelease is the release of an offloader that is not leased.
func noRelease() {}

// offloadConfigLocked is the driver configuration of the effective policy.
func (ml *ManagedLedger) offloadConfigLocked() offload.Config {
	return ml.cfg.OffloadPolicies.Merge(ml.f.offloadBase).Config()
}

// offloadEnabledLocked tells whether new offloads have somewhere to go.
func (ml *ManagedLedger) offloadEnabledLocked() bool {
	switch {
	case ml.cfg.Offloader != nil:
		return true
	case ml.f.offloadPool != nil:
		return ml.offloadConfigLocked().Enabled()
	}
	return ml.f.offloader != nil
}

// acquireOffloader returns the offloader new offloads go to and its release.
func (ml *ManagedLedger) acquireOffloader(ctx context.Context) (offload.Offloader, func(), error) {
	ml.mu.Lock()
	explicit, pool, c := ml.cfg.Offloader, ml.f.offloadPool, ml.offloadConfigLocked()
	ml.mu.Unlock()
	switch {
	case explicit != nil:
		return explicit, noRelease, nil
	case pool == nil && ml.f.offloader != nil:
		return ml.f.offloader, noRelease, nil
	case pool == nil || !c.Enabled():
		return nil, nil, ErrOffloadDisabled
	}
	l, err := pool.Acquire(ctx, c)
	if err != nil {
		return nil, nil, fmt.Errorf("managedledger: %s: the offloader of its offload policy (%s at %v): %w", ml.name, c.Driver, c.DriverMetadata(), err)
	}
	return l.Offloader(), l.Release, nil
}

// acquireOffloaderAt returns an offloader of the place a ledger was offloaded to, whatever
// the policy says now, and its release.
func (ml *ManagedLedger) acquireOffloaderAt(ctx context.Context, id int64, oc *offloadContext) (offload.Offloader, func(), error) {
	ml.mu.Lock()
	explicit, current := ml.cfg.Offloader, ml.offloadConfigLocked()
	ml.mu.Unlock()
	if explicit != nil {
		return explicit, noRelease, nil
	}
	return ml.f.offloaderAt(ctx, id, oc, current)
}

// offloaderAt is acquireOffloaderAt for a managed ledger whose policy is current (the
// retry queue passes the broker's): the settings of the current policy, else the broker's,
// reach the recorded place when no live offloader of it exists.
func (f *Factory) offloaderAt(ctx context.Context, id int64, oc *offloadContext, current offload.Config) (offload.Offloader, func(), error) {
	if f.offloadPool == nil {
		if f.offloader == nil {
			return nil, nil, fmt.Errorf("%w: ledger %d is in tiered storage (%s) and no offloader is configured", ErrOffloadDisabled, id, oc.DriverName)
		}
		return f.offloader, noRelease, nil
	}
	l, err := f.offloadPool.AcquireAt(ctx, oc.DriverName, oc.DriverMetadata, current, f.offloadBase.Config())
	if err != nil {
		return nil, nil, fmt.Errorf("managedledger: the offloader of ledger %d's objects (%s at %v): %w", id, oc.DriverName, oc.DriverMetadata, err)
	}
	return l.Offloader(), l.Release, nil
}

// leasedHandle is a read handle whose Close also ends the lease of its offloader.
type leasedHandle struct {
	offload.ReadHandle
	release func()
	once    sync.Once
}

func (h *leasedHandle) Close() error {
	err := h.ReadHandle.Close()
	h.once.Do(h.release)
	return err
}

// Offload copies every closed ledger that lies wholly before `before` and is not yet in
// tiered storage, oldest first, and waits for the run. It returns the first entry left
// unoffloaded. Only one run at a time: ErrOffloadRunning otherwise.
func (ml *ManagedLedger) Offload(ctx context.Context, before Position) (Position, error) {
	if err := ml.beginOffload(); err != nil {
		return Position{}, err
	}
	return ml.runOffload(ctx, before)
}

// OffloadAsync starts Offload in the background (the admin trigger); OffloadStatus and
// WaitOffload follow it.
func (ml *ManagedLedger) OffloadAsync(before Position) error {
	if err := ml.beginOffload(); err != nil {
		return err
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 24*time.Hour)
		defer cancel()
		_, _ = ml.runOffload(ctx, before)
	}()
	return nil
}

// WaitOffload waits for a running offload to end.
func (ml *ManagedLedger) WaitOffload(ctx context.Context) error {
	ml.mu.Lock()
	done := ml.offload.done
	running := ml.offload.running
	ml.mu.Unlock()
	if !running {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OffloadStatus reports the last or running offload.
func (ml *ManagedLedger) OffloadStatus() OffloadStatus {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	s := ml.offload.status
	if s.Status == "" {
		s = OffloadStatus{Status: OffloadNotRun, FirstUnoffloaded: Position{-1, -1}}
	}
	return s
}

func (ml *ManagedLedger) beginOffload() error {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	if err := ml.stateErrLocked(); err != nil {
		return err
	}
	if !ml.offloadEnabledLocked() {
		return ErrOffloadDisabled
	}
	if ml.offload.running {
		return ErrOffloadRunning
	}
	ml.offload.running = true
	ml.offload.done = make(chan struct{})
	ml.offload.status = OffloadStatus{Status: OffloadRunning, FirstUnoffloaded: ml.firstUnoffloadedLocked()}
	return nil
}

func (ml *ManagedLedger) runOffload(ctx context.Context, before Position) (Position, error) {
	err := ml.offloadBefore(ctx, before)
	ml.mu.Lock()
	defer ml.mu.Unlock()
	st := OffloadStatus{Status: OffloadSuccess, FirstUnoffloaded: ml.firstUnoffloadedLocked()}
	if err != nil {
		st.Status, st.LastError = OffloadError, err.Error()
	}
	ml.offload.status = st
	ml.offload.running = false
	close(ml.offload.done)
	return st.FirstUnoffloaded, err
}

// firstUnoffloadedLocked is the first entry of the oldest ledger with entries that is not
// in tiered storage (the end of the log if every ledger is).
func (ml *ManagedLedger) firstUnoffloadedLocked() Position {
	for _, l := range ml.ledgers {
		if l.Entries > 0 && (l.Offload == nil || !l.Offload.Complete) {
			return Position{l.LedgerID, 0}
		}
	}
	return ml.endLocked()
}

// nextToOffloadLocked is the oldest closed ledger before `before` with entries and no
// complete offload.
func (ml *ManagedLedger) nextToOffloadLocked(before Position) (ledgerInfo, bool) {
	closed := len(ml.ledgers)
	if ml.add.writer != nil || ml.state != stateClosed {
		closed-- // the current ledger is never offloaded
	}
	for _, l := range ml.ledgers[:max(closed, 0)] {
		if l.LedgerID >= before.LedgerID {
			break
		}
		if l.Entries > 0 && (l.Offload == nil || !l.Offload.Complete) {
			return l, true
		}
	}
	return ledgerInfo{}, false
}

func (ml *ManagedLedger) offloadBefore(ctx context.Context, before Position) error {
	// One offloader for the run: a policy change applies from the next run on.
	o, release, err := ml.acquireOffloader(ctx)
	if err != nil {
		return err
	}
	defer release()
	for {
		ml.mu.Lock()
		if err := ml.stateErrLocked(); err != nil {
			ml.mu.Unlock()
			return err
		}
		l, ok := ml.nextToOffloadLocked(before)
		ml.mu.Unlock()
		if !ok {
			return nil
		}
		var err error
		for attempt := 1; attempt <= offloadAttempts; attempt++ {
			if err = ml.offloadLedger(ctx, o, l); err == nil || errors.Is(err, errTrimmed) || ctx.Err() != nil {
				break
			}
			ml.log.Warn("offload attempt failed", "ledger", l.LedgerID, "attempt", attempt, "err", err)
			if attempt == offloadAttempts {
				break
			}
			select {
			case <-time.After(time.Duration(attempt) * time.Second):
			case <-ctx.Done():
			}
			ml.mu.Lock()
			if i := ml.indexLocked(l.LedgerID); i < len(ml.ledgers) && ml.ledgers[i].LedgerID == l.LedgerID {
				l = ml.ledgers[i] // the failed attempt's uuid is now recorded
			}
			ml.mu.Unlock()
		}
		if err != nil && !errors.Is(err, errTrimmed) {
			return fmt.Errorf("managedledger: %s: offloading ledger %d: %w", ml.name, l.LedgerID, err)
		}
	}
}

// offloadLedger runs the prepare/upload/complete steps for one ledger.
func (ml *ManagedLedger) offloadLedger(ctx context.Context, o offload.Offloader, l ledgerInfo) error {
	if old := l.Offload; old != nil && old.UUID != "" && !old.Complete {
		// Objects an earlier attempt (maybe a crashed broker) may have left.
		ml.deleteObjects(ctx, l.LedgerID, old)
	}
	oc := &offloadContext{UUID: offload.NewUUID(), DriverName: o.DriverName(), DriverMetadata: o.DriverMetadata()}
	if err := ml.setOffloadContext(ctx, l.LedgerID, oc); err != nil {
		return err
	}
	r, err := ml.readerFor(ctx, l.LedgerID)
	if err != nil {
		return err
	}
	extra := map[string]string{
		"ManagedLedgerName": ml.name,
		"LedgerId":          strconv.FormatInt(l.LedgerID, 10),
		"Entries":           strconv.FormatInt(l.Entries, 10),
		"Size":              strconv.FormatInt(l.Size, 10),
		"ClosedAt":          strconv.FormatInt(l.Timestamp, 10),
	}
	ref := offload.Ref{LedgerID: l.LedgerID, UUID: oc.UUID, Driver: oc.DriverName, Metadata: oc.DriverMetadata, Topic: ml.name}
	if _, err := o.Offload(ctx, r, ref, extra); err != nil {
		return err
	}
	done := *oc
	done.Complete, done.Timestamp = true, ml.f.now().UnixMilli()
	if err := ml.setOffloadContext(ctx, l.LedgerID, &done); err != nil {
		if errors.Is(err, errTrimmed) {
			ml.deleteObjects(ctx, l.LedgerID, &done)
		}
		return err
	}
	return nil
}

// setOffloadContext writes a ledger's offload state into the ledger list by CAS.
func (ml *ManagedLedger) setOffloadContext(ctx context.Context, id int64, oc *offloadContext) error {
	ml.metaMu.Lock()
	defer ml.metaMu.Unlock()
	ml.mu.Lock()
	if err := ml.stateErrLocked(); err != nil {
		ml.mu.Unlock()
		return err
	}
	i := ml.indexLocked(id)
	if i >= len(ml.ledgers) || ml.ledgers[i].LedgerID != id {
		ml.mu.Unlock()
		return fmt.Errorf("%w: %s: ledger %d", errTrimmed, ml.name, id)
	}
	list := append([]ledgerInfo(nil), ml.ledgers...)
	list[i].Offload = oc
	info := &mlInfo{Ledgers: list}
	if ml.terminated {
		info.Terminated = &ml.termPos
	}
	ver := ml.version
	ml.mu.Unlock()
	nv, err := ml.f.store.Put(ctx, ml.key, encodeMLInfo(info), ver)
	if err != nil {
		if errors.Is(err, metadata.ErrBadVersion) {
			ml.mu.Lock()
			ml.fenceLocked(err)
			ml.mu.Unlock()
			ml.add.drainCallbacks()
		}
		return fmt.Errorf("managedledger: %s: recording the offload of ledger %d: %w", ml.name, id, err)
	}
	ml.mu.Lock()
	ml.version = nv
	if i := ml.indexLocked(id); i < len(ml.ledgers) && ml.ledgers[i].LedgerID == id {
		ml.ledgers[i].Offload = oc
	}
	ml.mu.Unlock()
	return nil
}

// openOffloaded returns a reader of ledger id in tiered storage when reads should go
// there, or (nil, nil) to read from the bookies.
func (ml *ManagedLedger) openOffloaded(ctx context.Context, id int64) (offload.ReadHandle, error) {
	ml.mu.Lock()
	i := ml.indexLocked(id)
	if i >= len(ml.ledgers) || ml.ledgers[i].LedgerID != id {
		ml.mu.Unlock()
		return nil, nil
	}
	oc := ml.ledgers[i].Offload
	prio := ml.cfg.Offload.ReadPriority
	ml.mu.Unlock()
	if oc == nil || !oc.Complete || (!oc.BookkeeperDeleted && prio == offload.ReadBookkeeperFirst) {
		return nil, nil
	}
	o, release, err := ml.acquireOffloaderAt(ctx, id, oc)
	if err != nil {
		if oc.BookkeeperDeleted {
			return nil, fmt.Errorf("managedledger: %s: ledger %d is only in tiered storage: %w", ml.name, id, err)
		}
		if !errors.Is(err, ErrOffloadDisabled) {
			ml.log.Warn("no offloader for an offloaded ledger; reading the bookie copy", "ledger", id, "err", err)
		}
		return nil, nil
	}
	h, err := o.Open(ctx, offload.Ref{LedgerID: id, UUID: oc.UUID, Driver: oc.DriverName, Metadata: oc.DriverMetadata, Topic: ml.name})
	if err != nil {
		release()
		if !oc.BookkeeperDeleted {
			ml.log.Warn("offloaded ledger unreadable; reading the bookie copy", "ledger", id, "err", err)
			return nil, nil
		}
		return nil, fmt.Errorf("managedledger: %s: opening offloaded ledger %d: %w", ml.name, id, err)
	}
	return &leasedHandle{ReadHandle: h, release: release}, nil
}

// offloadMaintenance runs from the factory's background pass: it deletes bookie copies
// whose deletion lag has passed and starts an offload when the policy's thresholds say so.
func (ml *ManagedLedger) offloadMaintenance(ctx context.Context) {
	ml.mu.Lock()
	if ml.stateErrLocked() != nil {
		ml.mu.Unlock()
		return
	}
	trig := ml.cfg.Offload
	now := ml.f.now()
	var expired []int64
	if trig.DeletionLagMillis >= 0 {
		for _, l := range ml.ledgers {
			if oc := l.Offload; oc != nil && oc.Complete && !oc.BookkeeperDeleted && now.UnixMilli()-oc.Timestamp >= trig.DeletionLagMillis {
				expired = append(expired, l.LedgerID)
			}
		}
	}
	before, trigger := ml.offloadTriggerLocked(trig, now)
	running := ml.offload.running
	hasOffloader := ml.offloadEnabledLocked()
	ml.mu.Unlock()

	for _, id := range expired {
		if err := ml.deleteBookieCopy(ctx, id); err != nil && !errors.Is(err, errTrimmed) {
			ml.log.Warn("deleting the bookie copy of an offloaded ledger failed; retrying at the next check", "ledger", id, "err", err)
		}
	}
	if trigger && hasOffloader && !running {
		if err := ml.OffloadAsync(before); err != nil && !errors.Is(err, ErrOffloadRunning) {
			ml.log.Warn("starting offload failed", "err", err)
		}
	}
}

// offloadTriggerLocked applies the thresholds: offload the oldest closed ledgers while the
// bookies keep more than ThresholdBytes of the log, and every closed ledger older than
// ThresholdSeconds (0 = at once, -1 = never). It returns the position before which to
// offload.
func (ml *ManagedLedger) offloadTriggerLocked(t offload.Trigger, now time.Time) (Position, bool) {
	n := len(ml.ledgers)
	if n < 2 || ml.add.writer == nil && ml.state != stateClosed {
		return Position{}, false
	}
	upTo := -1 // newest ledger index to offload
	if t.ThresholdBytes >= 0 {
		kept := ml.ledgers[n-1].Size // the current ledger stays
		for i := n - 2; i >= 0; i-- {
			kept += ml.ledgers[i].Size
			if kept > t.ThresholdBytes {
				upTo = max(upTo, i)
				break
			}
		}
	}
	if t.ThresholdSeconds >= 0 {
		cutoff := now.Add(-time.Duration(t.ThresholdSeconds) * time.Second).UnixMilli()
		for i := n - 2; i >= 0; i-- {
			if ml.ledgers[i].Timestamp <= cutoff {
				upTo = max(upTo, i)
				break
			}
		}
	}
	if upTo < 0 {
		return Position{}, false
	}
	for _, l := range ml.ledgers[:upTo+1] {
		if l.Entries > 0 && (l.Offload == nil || !l.Offload.Complete) {
			return Position{ml.ledgers[upTo+1].LedgerID, 0}, true
		}
	}
	return Position{}, false
}

// deleteBookieCopy records bookkeeperDeleted (reads move to tiered storage), then deletes
// the ledger from the bookies.
func (ml *ManagedLedger) deleteBookieCopy(ctx context.Context, id int64) error {
	ml.mu.Lock()
	i := ml.indexLocked(id)
	if i >= len(ml.ledgers) || ml.ledgers[i].LedgerID != id || ml.ledgers[i].Offload == nil {
		ml.mu.Unlock()
		return errTrimmed
	}
	oc := *ml.ledgers[i].Offload
	ml.mu.Unlock()
	oc.BookkeeperDeleted = true
	if err := ml.setOffloadContext(ctx, id, &oc); err != nil {
		return err
	}
	ml.mu.Lock()
	if r := ml.readers[id]; r != nil {
		if _, offloaded := r.(offload.ReadHandle); !offloaded {
			_ = r.Close()
			delete(ml.readers, id)
		}
	}
	ml.mu.Unlock()
	ml.deleteLedgerQuietly(id)
	ml.log.Info("deleted the bookie copy of an offloaded ledger", "ledger", id, "uuid", oc.UUID)
	return nil
}

// deleteOffloaded deletes the objects of ledgers that left the list (retention, deletion).
func (ml *ManagedLedger) deleteOffloaded(ls []ledgerInfo) {
	for _, l := range ls {
		if l.Offload != nil && l.Offload.UUID != "" {
			ctx, cancel := context.WithTimeout(context.Background(), ledgerOpTimeout)
			ml.deleteObjects(ctx, l.LedgerID, l.Offload)
			cancel()
		}
	}
}

// deleteObjects deletes one ledger's objects, queueing a refused delete for retries.
func (ml *ManagedLedger) deleteObjects(ctx context.Context, id int64, oc *offloadContext) {
	d := pendingDelete{ref: offload.Ref{LedgerID: id, UUID: oc.UUID, Driver: oc.DriverName, Metadata: oc.DriverMetadata, Topic: ml.name},
		oc: oc, release: noRelease}
	var err error
	if d.o, d.release, err = ml.acquireOffloaderAt(ctx, id, oc); err == nil {
		err = d.try(ctx)
	}
	if err != nil {
		ml.log.Warn("deleting offloaded objects failed; retrying", "ledger", id, "uuid", oc.UUID, "err", err)
		ml.f.offloadDeletes.add(ml.log, d, err)
		return
	}
	d.done()
}

// OffloadedSize is the bytes of this log's ledgers that are in tiered storage
// (pulsar_storage_offloaded_size).
func (ml *ManagedLedger) OffloadedSize() int64 {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	var n int64
	for _, l := range ml.ledgers {
		if l.Offload != nil && l.Offload.Complete {
			n += l.Size
		}
	}
	return n
}

// pendingDelete is an object deletion the store refused.
type pendingDelete struct {
	ref offload.Ref
	oc  *offloadContext
	// o deletes (nil: none could be had yet; the retry asks again); release ends its lease.
	o        offload.Offloader
	release  func()
	attempts int
	lastErr  error
}

// done ends the delete's hold on its offloader.
func (d *pendingDelete) done() {
	if d.release != nil {
		d.release()
		d.release = nil
	}
}

func (d *pendingDelete) try(ctx context.Context) error {
	if d.o == nil {
		return fmt.Errorf("%w: cannot delete the objects of ledger %d (%s)", ErrOffloadDisabled, d.ref.LedgerID, d.ref.Driver)
	}
	return d.o.Delete(ctx, d.ref)
}

// offloadDeleteQueue holds refused object deletions of all managed ledgers of a factory
// (they outlive a deleted topic). Bounded: past maxPendingDeletes the oldest are dropped
// with an error log naming their objects.
type offloadDeleteQueue struct {
	mu    sync.Mutex
	items []pendingDelete
}

const maxPendingDeletes = 10000

func (q *offloadDeleteQueue) add(log *slog.Logger, d pendingDelete, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	d.attempts++
	d.lastErr = err
	q.items = append(q.items, d)
	if n := len(q.items); n > maxPendingDeletes {
		for _, x := range q.items[:n-maxPendingDeletes] {
			x.done()
			log.Error("giving up deleting offloaded objects; delete them by hand", "topic", x.ref.Topic,
				"data", offload.DataKey(x.ref.UUID, x.ref.LedgerID), "index", offload.IndexKey(x.ref.UUID, x.ref.LedgerID), "err", x.lastErr)
		}
		q.items = append([]pendingDelete(nil), q.items[n-maxPendingDeletes:]...)
	}
}

// PendingOffloadDelete reports one refused deletion of offloaded objects.
type PendingOffloadDelete struct {
	Topic     string
	LedgerID  int64
	UUID      string
	Attempts  int
	LastError string
}

// PendingOffloadDeletes lists object deletions that failed and are being retried.
func (f *Factory) PendingOffloadDeletes() []PendingOffloadDelete {
	f.offloadDeletes.mu.Lock()
	defer f.offloadDeletes.mu.Unlock()
	out := make([]PendingOffloadDelete, 0, len(f.offloadDeletes.items))
	for _, d := range f.offloadDeletes.items {
		out = append(out, PendingOffloadDelete{Topic: d.ref.Topic, LedgerID: d.ref.LedgerID, UUID: d.ref.UUID, Attempts: d.attempts, LastError: d.lastErr.Error()})
	}
	return out
}

// retryOffloadDeletes tries every queued deletion once more.
func (f *Factory) retryOffloadDeletes(ctx context.Context) {
	f.offloadDeletes.mu.Lock()
	items := f.offloadDeletes.items
	f.offloadDeletes.items = nil
	f.offloadDeletes.mu.Unlock()
	for _, d := range items {
		var err error
		if d.o == nil {
			d.o, d.release, err = f.offloaderAt(ctx, d.ref.LedgerID, d.oc, offload.Config{})
		}
		if err == nil {
			err = d.try(ctx)
		}
		if err != nil {
			f.log.Warn("deleting offloaded objects failed again", "topic", d.ref.Topic, "ledger", d.ref.LedgerID,
				"uuid", d.ref.UUID, "attempts", d.attempts+1, "err", err)
			f.offloadDeletes.add(f.log, d, err)
			continue
		}
		d.done()
	}
}
