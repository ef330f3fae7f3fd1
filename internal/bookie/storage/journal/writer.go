package journal

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
)

// Pos is a position in the journal: a file id and a byte offset in it.
type Pos struct {
	File   uint64
	Offset int64
}

// Less orders positions.
func (p Pos) Less(q Pos) bool {
	return p.File < q.File || (p.File == q.File && p.Offset < q.Offset)
}

// Options configures a Writer.
type Options struct {
	FS  vfs.FS
	Dir string
	// FirstFile is the id of the first file to create; it must not exist.
	FirstFile uint64
	SyncData  bool
	// WritebackBytes, when > 0 and SyncData is off, starts the kernel's writeback of the
	// journal every this many bytes (vfs.Writebacker). Without it nothing is written out
	// until the kernel's dirty-page expiry (30 s by default) and then a gigabyte at once,
	// which queued the entry-log flush's fdatasync behind it and stalled adds for 200 ms.
	WritebackBytes int64
	MaxGroupWait   time.Duration
	MaxGroupBytes  int
	QueueBytes     int
	MaxFileSize    int64
	PreallocSize   int64
	Logger         *slog.Logger
	// Admit runs under the writer's lock just before a record is queued, in journal order;
	// an error rejects the record (its callback gets the error). The storage checks master
	// key and fencing here, so that "checked" and "ordered" are one step.
	Admit func(r Record) error
	// Apply runs on the acker goroutine after the records are durable and before their
	// callbacks, in journal order; end is the position just past the last record.
	Apply func(recs []Record, end Pos)
	// FailErr is wrapped into the callbacks' error when a write or sync fails.
	FailErr error
	// ClosedErr is what Append reports after Close (default ErrClosed).
	ClosedErr error
	// OnFailure is told of every write or sync failure (the storage turns read-only).
	OnFailure func(err error)
	// OnGroup reports each group commit: records, bytes and the fdatasync duration.
	OnGroup func(records, bytes int, sync time.Duration)
	// OnAck reports each record's latency from Append to its callback.
	OnAck func(d time.Duration)
}

// nextFile is a journal file made ahead of its rotation (Writer.next).
type nextFile struct {
	id  uint64
	f   vfs.File
	err error
}

type ack struct {
	done  func(error)
	start time.Time
}

// batch is one group: encoded records and their callbacks.
type batch struct {
	data    []byte
	acks    []ack
	firstAt time.Time
	end     Pos
	err     error
	fileID  uint64 // the file the batch was written to
}

// Writer appends records with group commit. See the package doc for the design.
type Writer struct {
	opts Options
	log  *slog.Logger

	mu        sync.Mutex
	spaceCond *sync.Cond
	cur       *batch
	// ready holds full batches (MaxGroupBytes reached) the writer has not taken yet, in
	// order. Cutting batches at MaxGroupBytes keeps every buffer near one size, so the
	// recycled buffers fit and records are copied once, not again by slice growth.
	ready  []*batch
	queued int
	// free recycles batches and their buffers. A sync.Pool rather than a list: at load a
	// batch comes back within a group or two, and when the load falls the collector drops
	// the idle ones, where a list kept up to 2 x QueueBytes resident for good (11 MiB of a
	// standalone's heap in a catch-up drain after a max-rate fill).
	free   sync.Pool
	closed bool
	// target is the previous group's record count: a batch that has caught up with it
	// is committed without waiting out MaxGroupWait (see writeLoop).
	target int

	kick    chan struct{} // cap 1: "look at the current batch"
	acks    chan *batch
	stopped chan struct{} // closed when both goroutines have ended

	// Owned by the writer goroutine.
	file      vfs.File
	fileID    uint64
	off       int64
	wb        vfs.WritebackPacer // Options.WritebackBytes, when SyncData is off
	allocated int64
	broken    bool // the last write failed: start a new file before the next one
	// next delivers the file after the current one, created, preallocated and synced
	// (with its directory) on its own goroutine while the current file fills, so a
	// rotation only switches files: the header's and the directory's syncs wait behind
	// whatever the disk has queued (a ~230 ms step per rotation without journalSyncData),
	// and nothing may wait for that on the add path. nil when none is being made.
	next    chan nextFile
	recs    []Record
	group   []*batch
	written []*batch
}

// NewWriter creates the first journal file and starts the writer and acker goroutines.
func NewWriter(opts Options) (*Writer, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	w := &Writer{
		opts:    opts,
		log:     opts.Logger,
		cur:     &batch{},
		kick:    make(chan struct{}, 1),
		acks:    make(chan *batch, 16),
		stopped: make(chan struct{}),
		fileID:  opts.FirstFile - 1,
		target:  1,
		wb:      vfs.WritebackPacer{Step: opts.WritebackBytes},
	}
	w.spaceCond = sync.NewCond(&w.mu)
	if err := w.roll(); err != nil {
		return nil, err
	}
	ackerDone := make(chan struct{})
	go func() { w.ackLoop(); close(ackerDone) }()
	go func() { w.writeLoop(); close(w.acks); <-ackerDone; close(w.stopped) }()
	return w, nil
}

// Append queues a record; done is called exactly once (see the package doc). It blocks
// while QueueBytes are queued. The record's slices are copied before Append returns.
func (w *Writer) Append(r Record, done func(error)) {
	if err := r.Validate(); err != nil {
		done(err)
		return
	}
	n := r.EncodedSize()
	start := time.Now()
	w.mu.Lock()
	for w.queued > 0 && w.queued+n > w.opts.QueueBytes && !w.closed {
		w.spaceCond.Wait()
	}
	if w.closed {
		w.mu.Unlock()
		if w.opts.ClosedErr != nil {
			done(w.opts.ClosedErr)
		} else {
			done(ErrClosed)
		}
		return
	}
	if w.opts.Admit != nil {
		if err := w.opts.Admit(r); err != nil {
			w.mu.Unlock()
			done(err)
			return
		}
	}
	b := w.cur
	if len(b.data) >= w.opts.MaxGroupBytes {
		w.ready = append(w.ready, b)
		b = w.newBatch()
		w.cur = b
	}
	first := len(b.acks) == 0
	if first {
		b.firstAt = start
	}
	b.data = r.AppendTo(b.data)
	b.acks = append(b.acks, ack{done: done, start: start})
	w.queued += n
	full := len(b.data) >= w.opts.MaxGroupBytes || len(b.acks) == w.target
	w.mu.Unlock()
	if first || full {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// Close stops accepting records, commits what is queued and stops the goroutines.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	w.closed = true
	w.spaceCond.Broadcast()
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
	<-w.stopped
	w.dropNext()
	if w.file != nil {
		return w.file.Close()
	}
	return nil
}

// dropNext removes a file made ahead that no rotation took: it holds no record, and
// leaving it would only make the next open replay an empty file.
func (w *Writer) dropNext() {
	if w.next == nil {
		return
	}
	n := <-w.next
	w.next = nil
	if n.f != nil {
		_ = n.f.Close()
		_ = w.opts.FS.Remove(filepath.Join(w.opts.Dir, FileName(n.id)))
	}
}

// writeLoop is the one goroutine that writes and syncs: it forms groups (max wait, max
// bytes) and hands committed batches to the acker.
func (w *Writer) writeLoop() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		w.mu.Lock()
		b, closed := w.cur, w.closed
		if len(b.acks) == 0 && len(w.ready) == 0 {
			w.mu.Unlock()
			if closed {
				return
			}
			<-w.kick
			continue
		}
		// A group is committed when its oldest record has waited MaxGroupWait, when it
		// holds MaxGroupBytes (a full batch is ready), or when it has as many records as
		// the previous group. The last rule is the adaptive part: with N adds in flight,
		// the N acknowledged by the previous fsync come back as the next group, and
		// waiting longer adds latency without adding entries. Groups still grow with
		// load, because everything that arrives during an fsync joins the next group.
		wait := w.opts.MaxGroupWait - time.Since(b.firstAt)
		if len(w.ready) == 0 && wait > 0 && len(b.data) < w.opts.MaxGroupBytes && len(b.acks) < w.target && !closed {
			w.mu.Unlock()
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-w.kick:
				if !timer.Stop() {
					<-timer.C
				}
			}
			continue
		}
		group := append(w.group[:0], w.ready...)
		clear(w.ready)
		w.ready = w.ready[:0]
		records := 0
		if len(b.acks) > 0 {
			group = append(group, b)
			w.cur = w.newBatch()
		}
		for _, g := range group {
			records += len(g.acks)
		}
		w.target = records
		w.mu.Unlock()
		w.commit(group)
		for i, g := range group {
			w.acks <- g
			group[i] = nil
		}
		w.group = group[:0]
	}
}

// newBatch takes a recycled batch or makes one.
func (w *Writer) newBatch() *batch {
	if b, ok := w.free.Get().(*batch); ok {
		return b
	}
	// Room for a full group and one more record of a common size, so appends to a new
	// batch do not grow (copy) its buffer.
	return &batch{data: make([]byte, 0, w.opts.MaxGroupBytes+batchSlack)}
}

// batchSlack is what a batch buffer holds beyond MaxGroupBytes: the record that crosses it.
const batchSlack = 128 << 10

// commit writes a group's batches (one pwrite each, in order) and covers them with one
// fdatasync. A batch whose write fails fails alone; a failed sync fails every batch it
// should have covered. Either way the file's tail is now undefined, so the next write
// starts a new file (broken). When the file must roll inside a group, what is written to
// the old file is synced first, so a failed rotation cannot leave an acknowledged batch
// covered by nothing.
func (w *Writer) commit(group []*batch) {
	written := w.written[:0]
	for _, b := range group {
		if w.broken || w.off+int64(len(b.data)) > w.opts.MaxFileSize && w.off > HeaderSize {
			w.sync(written)
			written = written[:0]
			if err := w.roll(); err != nil {
				w.broken = true
				w.fail(err, b)
				continue
			}
		}
		if w.write(b) {
			written = append(written, b)
		}
	}
	w.sync(written)
	clear(written)
	w.written = written[:0]
}

// sync makes written batches of the current file durable, or fails them all.
func (w *Writer) sync(written []*batch) {
	if len(written) == 0 {
		return
	}
	var syncTime time.Duration
	if w.opts.SyncData {
		t := time.Now()
		if err := w.file.Sync(); err != nil {
			w.broken = true
			err = fmt.Errorf("journal: fdatasync %s: %w", FileName(w.fileID), err)
			w.fail(err, written...)
			return
		}
		syncTime = time.Since(t)
	} else {
		// Nothing waits on this but the writer, and only for the chunk before: an error
		// here would show at the next write or sync anyway.
		_ = w.wb.Advance(w.file, w.off)
	}
	if w.opts.OnGroup != nil {
		records, bytes := 0, 0
		for _, b := range written {
			records += len(b.acks)
			bytes += len(b.data)
		}
		w.opts.OnGroup(records, bytes, syncTime)
	}
}

// write appends one batch at the end of the current file, preallocating first, and
// records where it ended; false (and the batch's error set) if it could not.
func (w *Writer) write(b *batch) bool {
	b.err, b.fileID = nil, w.fileID
	if need := w.off + int64(len(b.data)); need > w.allocated {
		step := max(w.opts.PreallocSize, need-w.allocated)
		if err := w.file.Preallocate(w.allocated, step); err != nil {
			w.broken = true
			w.fail(fmt.Errorf("journal: preallocate %s: %w", FileName(w.fileID), err), b)
			return false
		}
		w.allocated += step
	}
	if _, err := w.file.WriteAt(b.data, w.off); err != nil {
		w.broken = true
		w.fail(fmt.Errorf("journal: write %s: %w", FileName(w.fileID), err), b)
		return false
	}
	w.off += int64(len(b.data))
	b.end = Pos{File: w.fileID, Offset: w.off}
	return true
}

// fail records err on batches: their records fail, and the owner is told once.
func (w *Writer) fail(err error, bs ...*batch) {
	records := 0
	for _, b := range bs {
		records += len(b.acks)
	}
	w.log.Error("journal write failed; the batches' adds fail and the next batch starts a new file",
		"file", FileName(bs[0].fileID), "batches", len(bs), "records", records, "err", err)
	if w.opts.OnFailure != nil {
		w.opts.OnFailure(err)
	}
	if w.opts.FailErr != nil {
		err = fmt.Errorf("%w: %w", w.opts.FailErr, err)
	}
	for _, b := range bs {
		b.err = err
	}
}

// roll closes the current file and switches to the next one, made ahead by precreate (or
// now, if that failed), then starts making the one after.
func (w *Writer) roll() error {
	if w.file != nil {
		// Without journalSyncData nothing waits for the disk, and neither may a rotation:
		// syncing up to journalMaxSizeMB of unsynced journal here stalled every add for
		// half a second at 2 GiB (publish p99 at half of max 574 ms over a minute).
		if w.opts.SyncData {
			if err := w.file.Sync(); err != nil && !w.broken {
				return fmt.Errorf("journal: sync before rotation: %w", err)
			}
		}
		_ = w.file.Close()
		w.file = nil
	}
	id := w.fileID + 1
	var f vfs.File
	if w.next != nil {
		n := <-w.next
		w.next = nil
		switch {
		case n.err == nil && n.id == id:
			f = n.f
		case n.f != nil: // made for another id: never, but do not leave it open
			_ = n.f.Close()
			_ = w.opts.FS.Remove(filepath.Join(w.opts.Dir, FileName(n.id)))
		}
	}
	if f == nil {
		var err error
		if f, err = w.create(id); err != nil {
			return err
		}
	}
	// The file id advances only once the file exists, so a failed roll is retried with
	// the same id.
	w.file, w.fileID, w.off, w.allocated, w.broken = f, id, HeaderSize, w.opts.PreallocSize, false
	w.wb.Reset()
	w.precreate(id + 1)
	return nil
}

// precreate starts making file id on its own goroutine; roll takes it from w.next.
func (w *Writer) precreate(id uint64) {
	ch := make(chan nextFile, 1)
	w.next = ch
	go func() {
		f, err := w.create(id)
		ch <- nextFile{id: id, f: f, err: err}
	}()
}

// create makes journal file id: preallocated, its header written and synced, and its
// directory entry synced, so a record acknowledged in it is found after a crash. A file
// that could not be made whole is removed.
func (w *Writer) create(id uint64) (vfs.File, error) {
	name := filepath.Join(w.opts.Dir, FileName(id))
	f, err := w.opts.FS.Create(name)
	if err != nil {
		return nil, fmt.Errorf("journal: create %s: %w", name, err)
	}
	err = f.Preallocate(0, w.opts.PreallocSize)
	if err == nil {
		_, err = f.WriteAt(fileHeader(id), 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = w.opts.FS.SyncDir(w.opts.Dir)
	}
	if err != nil {
		_ = f.Close()
		_ = w.opts.FS.Remove(name)
		return nil, fmt.Errorf("journal: start %s: %w", name, err)
	}
	return f, nil
}

func (w *Writer) ackLoop() {
	for b := range w.acks {
		if b.err == nil && w.opts.Apply != nil {
			w.recs = w.recs[:0]
			for off := 0; off < len(b.data); {
				r, n, err := Decode(b.data[off:])
				if err != nil { // our own encoding: a broken invariant, not bad input
					panic(fmt.Sprintf("journal: decoding own batch: %v", err))
				}
				w.recs = append(w.recs, r)
				off += n
			}
			w.opts.Apply(w.recs, b.end)
			clear(w.recs) // do not pin the batch's buffer through old records
		}
		// The records are in the write cache now: free their queue space before the
		// callbacks, so waiting appenders go on while the callbacks run.
		w.mu.Lock()
		w.queued -= len(b.data)
		w.spaceCond.Broadcast()
		w.mu.Unlock()
		now := time.Now()
		for _, a := range b.acks {
			if w.opts.OnAck != nil && b.err == nil {
				w.opts.OnAck(now.Sub(a.start))
			}
			a.done(b.err)
		}
		clear(b.acks)
		b.data, b.acks, b.err = b.data[:0], b.acks[:0], nil
		// A buffer that grew past its usual size for a huge record is not kept.
		if cap(b.data) <= 2*(w.opts.MaxGroupBytes+batchSlack) {
			w.free.Put(b)
		}
	}
}

// RemoveBefore deletes journal files with ids below id (they are covered by a checkpoint).
func RemoveBefore(fs vfs.FS, dir string, id uint64) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if fid, ok := ParseFileName(n); ok && fid < id {
			if err := fs.Remove(filepath.Join(dir, n)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
