// Package pebblelog routes a Pebble database's logger and background errors into slog, with
// a Fatalf the process survives. Pebble calls Fatalf where it cannot go on with the
// database; through logging.Printf that panic would end the process, which for a storage
// fault (a full disk, a failing fsync) is the one thing a bookie or a standalone must not
// do while it can still serve reads and tell writers the truth.
//
// Two kinds of Fatalf are told apart:
//
//   - on the caller's goroutine (a failed commit, always; and whatever Logger.InCall
//     claims, such as an open): it panics with a FatalError that the caller turns into an
//     error with Recover;
//   - on Pebble's own goroutines (a MANIFEST write or sync failed in a flush or a
//     compaction): a panic would end the process and a return would let Pebble go on from a
//     version it never recorded (deleting the sstable the unsynced MANIFEST record names,
//     which the next open then misses). The goroutine parks for good instead, so Pebble
//     does nothing more to the files, after Logger.OnFatal was told once. The owner must
//     then take no more writes and must not Close the database (Close would wait for the
//     parked job); a restart replays the files as they were left. Reads still work: the
//     parked job holds Pebble's mutex, which reads do not take.
package pebblelog

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/magnetar-io/magnetar/internal/logging"
)

// commitFatal starts the message of Pebble's Fatalf on a failed commit (db.go), which runs
// on the committing goroutine.
const commitFatal = "pebble: fatal commit error"

// FatalError is what a Logger's Fatalf panics with on the caller's goroutine.
type FatalError string

func (e FatalError) Error() string { return "pebble: " + string(e) }

// Recover, deferred, turns a panic with a FatalError into *err; any other panic goes on.
func Recover(err *error) {
	if r := recover(); r != nil {
		f, ok := r.(FatalError)
		if !ok {
			panic(r)
		}
		*err = f
	}
}

// Logger is a pebble.Logger on slog (see the package comment for Fatalf).
type Logger struct {
	logging.Printf
	// InCall, if set, tells whether a Fatalf now runs on a goroutine that defers Recover
	// (the owner's open of the database), besides a failed commit.
	InCall func() bool
	// OnFatal, if set, is called once, with the first Fatalf that parks its goroutine.
	OnFatal func(err error)

	fired atomic.Bool
}

var _ pebble.Logger = (*Logger)(nil)

// Fatalf implements pebble.Logger.
func (l *Logger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.Log.Error("fatal Pebble error", "msg", msg)
	if strings.HasPrefix(msg, commitFatal) || (l.InCall != nil && l.InCall()) {
		panic(FatalError(msg))
	}
	if l.fired.CompareAndSwap(false, true) {
		l.Log.Error("Pebble's background work failed beyond repair: the database takes no more writes until the process restarts", "msg", msg)
		if l.OnFatal != nil {
			l.OnFatal(FatalError(msg))
		}
	}
	select {} // for good: see the package comment
}

// Listener is an event listener that logs Pebble's background errors (a failed flush or
// compaction, which Pebble retries: a flush at once, so a lasting fault repeats it quickly
// and the log keeps at most one a second) and hands each to onErr (nil: logging only).
func Listener(log *slog.Logger, onErr func(error)) *pebble.EventListener {
	var last atomic.Int64 // unix nanos of the last logged error
	return &pebble.EventListener{BackgroundError: func(err error) {
		now := time.Now().UnixNano()
		if l := last.Load(); now-l >= int64(time.Second) && last.CompareAndSwap(l, now) {
			log.Warn("Pebble background work failed; Pebble retries it", "err", err)
		}
		if onErr != nil {
			onErr(err)
		}
	}}
}

// Parked is an owner's record of the first Fatalf that parked one of Pebble's goroutines:
// Set is the owner's Logger.OnFatal. A parked job holds Pebble's mutex for good, so a
// commit already under way that needs it (a memtable rotation) would wait for ever; Apply
// stops waiting for such a commit instead.
type Parked struct {
	err  atomic.Pointer[error]
	once sync.Once
	ch   chan struct{}
}

// NewParked returns a Parked that has not fired.
func NewParked() *Parked { return &Parked{ch: make(chan struct{})} }

// Set records err (the first one wins) and releases every Apply waiting.
func (p *Parked) Set(err error) {
	p.err.CompareAndSwap(nil, &err)
	p.once.Do(func() { close(p.ch) })
}

// Err is the recorded failure, nil before one.
func (p *Parked) Err() error {
	if e := p.err.Load(); e != nil {
		return *e
	}
	return nil
}

// Apply applies batch to db with sync on its own goroutine (a Fatalf of the commit itself
// is returned as an error, as Recover does) and waits for it, or for a park, whichever
// comes first. When abandoned, the goroutine is stuck behind the parked job and still
// owns batch: the caller must neither close nor reuse it, and err is the park's. One
// goroutine per commit is what this costs; the owners commit once per group or flush.
func (p *Parked) Apply(db *pebble.DB, batch *pebble.Batch) (abandoned bool, err error) {
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }()
		defer Recover(&err)
		err = db.Apply(batch, pebble.Sync)
	}()
	select {
	case err = <-done:
		return false, err
	case <-p.ch:
		select {
		case err = <-done: // finished as the job parked: its answer stands
			return false, err
		default:
			return true, p.Err()
		}
	}
}
