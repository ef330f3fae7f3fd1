package bookie

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// registrar keeps the bookie's session-bound registration key
// (resources.BookieRegistrationsPrefix + advertised address) in the metadata store, on top of
// metadata.Registration (which re-registers after a session loss). It never stops the data
// plane: a store that is down at startup is retried in the background, and while registered
// it polls storage.ReadOnly and rewrites the value when the state changes, so ledger clients
// stop placing new ledgers on a read-only bookie.
type registrar struct {
	store    metadata.Store
	reg      resources.BookieRegistration
	readOnly func() bool
	opts     metadata.RegistrationOptions
	poll     time.Duration // how often readOnly is checked
	// verify, when set, checks the cluster-wide cookie before the first registration; a
	// mismatch keeps the bookie unregistered (clients never place ledgers on it).
	verify  func(context.Context) error
	log     *slog.Logger
	metrics *metrics

	current atomic.Pointer[metadata.Registration] // set while run holds a registration
}

// registered reports whether a live session holds the registration key with the latest value.
func (r *registrar) registered() bool {
	reg := r.current.Load()
	return reg != nil && reg.Registered()
}

func (r *registrar) key() string { return resources.BookieRegistrationKey(r.reg.Address) }

func (r *registrar) state() string {
	if r.readOnly() {
		return resources.BookieReadOnly
	}
	return resources.BookieWritable
}

func (r *registrar) value(state string) []byte {
	reg := r.reg
	reg.State = state
	val, err := json.Marshal(reg)
	if err != nil {
		panic(fmt.Sprintf("bookie: encoding a Registration cannot fail: %v", err)) // broken invariant
	}
	return val
}

func (r *registrar) setGauge(state string) {
	if state == resources.BookieReadOnly {
		r.metrics.registration.Set(2)
	} else {
		r.metrics.registration.Set(1)
	}
}

// run registers and keeps the registration until ctx ends, then closes it (the key is
// deleted at once rather than after the session TTL) before returning.
func (r *registrar) run(ctx context.Context) {
	defer r.metrics.registration.Set(0)
	t := time.NewTicker(r.poll)
	defer t.Stop()
	var reg *metadata.Registration
	state := r.state()
	backoff := r.opts.RetryInterval
	for reg == nil {
		var err error
		if r.verify != nil {
			vctx, cancel := context.WithTimeout(ctx, r.opts.TTL)
			err = r.verify(vctx)
			cancel()
			if errors.Is(err, ErrCookieMismatch) {
				r.log.Error("bookie not registered: its cluster-wide cookie names another storage instance", "err", err)
				<-ctx.Done()
				return
			}
			if err == nil {
				r.verify = nil
			}
		}
		if err == nil { // (otherwise the store does not answer yet: retry below)
			if reg, err = metadata.Register(ctx, r.store, r.key(), r.value(state), r.opts, r.log); err == nil {
				break
			}
		}
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("bookie registration failed; serving continues, retrying", "err", err, "retryIn", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, r.opts.MaxRetryInterval)
		state = r.state()
	}
	r.current.Store(reg)
	defer func() { r.current.Store(nil); _ = reg.Close() }()
	r.setGauge(state)
	r.log.Info("bookie registered", "key", r.key(), "state", state)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s := r.state()
			if s == state {
				continue
			}
			// Update keeps the value even when it times out, and writes it as soon as the
			// store answers or at the next re-registration; so the state is never lost.
			uctx, cancel := context.WithTimeout(ctx, r.opts.TTL)
			err := reg.Update(uctx, r.value(s))
			cancel()
			if err != nil && ctx.Err() == nil {
				r.log.Warn("bookie registration state not written yet; will be when the store answers", "state", s, "err", err)
			} else {
				r.log.Info("bookie registration state changed", "from", state, "to", s)
			}
			state = s
			r.setGauge(s)
		}
	}
}
