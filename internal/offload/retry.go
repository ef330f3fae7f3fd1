package offload

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/magnetar-io/magnetar/internal/ledger"
)

// Retry is a bounded exponential backoff for transient errors: a store or bookie that
// answers with an error a moment later may not (a throttled request, a dropped
// connection). Permanent errors (Permanent) return at once.
type Retry struct {
	Attempts int           // tries in all, >= 1
	Initial  time.Duration // first pause; doubles, with jitter, up to Max
	Max      time.Duration
}

// DefaultRetry tries 4 times over about 3 s.
func DefaultRetry() Retry {
	return Retry{Attempts: 4, Initial: 200 * time.Millisecond, Max: 2 * time.Second}
}

// Permanent reports whether retrying err cannot help: bad configuration or arguments, a
// corrupt or missing object, a missing ledger or entry, a canceled context.
func Permanent(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrConfig) ||
		errors.Is(err, errClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ledger.ErrNoSuchLedger) || errors.Is(err, ledger.ErrNoSuchEntry) ||
		errors.Is(err, ledger.ErrCorrupt) || errors.Is(err, ledger.ErrBadArgument) || errors.Is(err, ledger.ErrUnauthorized)
}

// Do runs f until it succeeds, fails permanently, runs out of attempts or ctx ends.
func (r Retry) Do(ctx context.Context, f func() error) error {
	pause := r.Initial
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || attempt >= r.Attempts || Permanent(err) {
			return err
		}
		d := pause/2 + time.Duration(rand.Int64N(int64(pause/2)+1))
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		}
		pause = min(2*pause, r.Max)
	}
}
