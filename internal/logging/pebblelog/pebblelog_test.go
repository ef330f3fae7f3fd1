package pebblelog

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/logging"
)

func newLogger(inCall bool, onFatal func(error)) *Logger {
	return &Logger{Printf: logging.Printf{Log: slog.New(slog.DiscardHandler)}, InCall: func() bool { return inCall }, OnFatal: onFatal}
}

// A failed commit's Fatalf, and any Fatalf while InCall, panic with a FatalError that
// Recover turns into the caller's error.
func TestFatalfOnTheCallersGoroutineIsAnError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inCall bool
		format string
	}{{"commit", false, "pebble: fatal commit error: %v"}, {"open", true, "MANIFEST sync failed: %v"}} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLogger(tc.inCall, func(error) { t.Error("OnFatal for a Fatalf the caller recovers") })
			err := func() (err error) {
				defer Recover(&err)
				l.Fatalf(tc.format, errors.New("EIO"))
				return nil
			}()
			var fe FatalError
			if !errors.As(err, &fe) {
				t.Fatalf("err %v, want a FatalError", err)
			}
		})
	}
}

// Recover lets a panic that is not a Fatalf's go on.
func TestRecoverPassesOtherPanics(t *testing.T) {
	defer func() {
		if r := recover(); r != "not ours" {
			t.Fatalf("recovered %v, want the original panic", r)
		}
	}()
	var err error
	defer Recover(&err)
	panic("not ours")
}

// A background Fatalf parks its goroutine and reports once, however many follow.
func TestBackgroundFatalfParksAndReportsOnce(t *testing.T) {
	reports := make(chan error, 4)
	l := newLogger(false, func(err error) { reports <- err })
	returned := make(chan struct{}, 2)
	for range 2 {
		go func() {
			l.Fatalf("MANIFEST sync failed: %v", errors.New("EIO"))
			returned <- struct{}{}
		}()
	}
	if err := <-reports; !errors.As(err, new(FatalError)) {
		t.Fatalf("report %v, want a FatalError", err)
	}
	select {
	case err := <-reports:
		t.Fatalf("second report %v", err)
	case <-returned:
		t.Fatal("a background Fatalf returned")
	case <-time.After(200 * time.Millisecond): // neither may ever come; this only bounds the wait
	}
}

// TestParkedKeepsTheFirstFailure: the owner's error names the job that parked first; a
// second park (another job hitting the same fault) neither replaces it nor panics on the
// closed channel.
func TestParkedKeepsTheFirstFailure(t *testing.T) {
	p := NewParked()
	if p.Err() != nil {
		t.Fatalf("Err before a park: %v", p.Err())
	}
	p.Set(FatalError("MANIFEST sync failed"))
	p.Set(FatalError("second"))
	if got := p.Err(); got == nil || got.Error() != "pebble: MANIFEST sync failed" {
		t.Fatalf("Err = %v, want the first failure", got)
	}
}
