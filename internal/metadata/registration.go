package metadata

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// RegistrationOptions tune a Registration.
type RegistrationOptions struct {
	// TTL of the session that owns the key: how long after its owner stops answering the key
	// disappears for everyone else.
	TTL time.Duration
	// RetryInterval is the first wait after a failed attempt to register; it doubles up to
	// MaxRetryInterval while the store stays unreachable.
	RetryInterval    time.Duration
	MaxRetryInterval time.Duration
}

// DefaultRegistrationOptions returns the defaults: a 10 s TTL, retries from 100 ms to 5 s.
func DefaultRegistrationOptions() RegistrationOptions {
	return RegistrationOptions{TTL: 10 * time.Second, RetryInterval: 100 * time.Millisecond, MaxRetryInterval: 5 * time.Second}
}

// Registration keeps one session-bound key registered for as long as it runs: a bookie's
// availability key, a broker's liveness key. When the session is lost (the store did not hear
// from us for the TTL, or the store restarted), it logs, opens a new session and puts the key
// again, with backoff, until Close. The owner keeps serving meanwhile: losing the metadata
// session must not stop the data plane (PIP-118; the ledger layer's fencing, not session loss,
// is what stops an old writer).
//
// The key is written with AnyVersion: a registration takes the key over from an earlier
// session of the same owner (say, before a fast restart) instead of waiting for it to expire.
// Keys that must have one owner at a time (bundle ownership) use Session.PutEphemeral with
// NotExists instead.
//
// One goroutine owns the session and does every write, so writes never race and the value
// put after a loss is always the latest one given to Update.
type Registration struct {
	store  Store
	key    string
	opts   RegistrationOptions
	logger *slog.Logger

	mu        sync.Mutex
	value     []byte
	gen       uint64        // bumped by Update
	written   uint64        // the gen last written through a live session
	live      bool          // the key is held by a live session now (maybe with an older value)
	changed   chan struct{} // closed and replaced whenever written or registered changes
	wake      chan struct{}
	stop      chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once
}

// ErrRegistrationClosed is returned by Update after Close.
var ErrRegistrationClosed = errors.New("metadata: registration closed")

// Register puts key = value through a new session and keeps it registered in the background.
// It returns once the first registration succeeded, or with the error of the first attempt
// (the caller decides whether a store that is down at startup is fatal).
func Register(ctx context.Context, store Store, key string, value []byte, opts RegistrationOptions, logger *slog.Logger) (*Registration, error) {
	d := DefaultRegistrationOptions()
	if opts.TTL <= 0 {
		opts.TTL = d.TTL
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = d.RetryInterval
	}
	if opts.MaxRetryInterval < opts.RetryInterval {
		opts.MaxRetryInterval = max(opts.RetryInterval, d.MaxRetryInterval)
	}
	r := &Registration{
		store: store, key: key, opts: opts, logger: logger.With("component", "registration", "key", key),
		value: slices.Clone(value), gen: 1,
		changed: make(chan struct{}), wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}),
	}
	sess, err := r.register(ctx, r.value)
	if err != nil {
		return nil, err
	}
	r.written, r.live = 1, true
	go r.run(sess)
	return r, nil
}

// register opens a session and puts value through it.
func (r *Registration) register(ctx context.Context, value []byte) (Session, error) {
	sess, err := r.store.NewSession(ctx, r.opts.TTL)
	if err != nil {
		return nil, fmt.Errorf("metadata: register %s: %w", r.key, err)
	}
	if _, err := sess.PutEphemeral(ctx, r.key, value, AnyVersion); err != nil {
		_ = sess.Close()
		return nil, fmt.Errorf("metadata: register %s: %w", r.key, err)
	}
	return sess, nil
}

// Registered reports whether the key is held by a live session with the latest value given
// to Update.
func (r *Registration) Registered() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.registeredLocked()
}

func (r *Registration) registeredLocked() bool { return r.live && r.written >= r.gen }

// Value returns the value the registration keeps (the last one given to Update).
func (r *Registration) Value() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.value)
}

// Update changes the registered value (a bookie turning read-only) and waits until it is
// written or ctx is done. If ctx ends first the new value is still kept: it is written as
// soon as the store is reachable again, and at every re-registration.
func (r *Registration) Update(ctx context.Context, value []byte) error {
	r.mu.Lock()
	select {
	case <-r.stop:
		r.mu.Unlock()
		return ErrRegistrationClosed
	default:
	}
	r.value = slices.Clone(value)
	r.gen++
	want := r.gen
	r.mu.Unlock()
	r.poke()
	for {
		r.mu.Lock()
		done, changed := r.written >= want, r.changed
		r.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-r.stopped:
			return ErrRegistrationClosed
		case <-ctx.Done():
			return fmt.Errorf("metadata: update %s (kept, will be written when the store answers): %w", r.key, ctx.Err())
		}
	}
}

// WaitRegistered blocks until Registered is true (or ctx is done).
func (r *Registration) WaitRegistered(ctx context.Context) error {
	for {
		r.mu.Lock()
		ok, changed := r.registeredLocked(), r.changed
		r.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-r.stopped:
			return ErrRegistrationClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close stops keeping the key and closes the session, so the key disappears now.
func (r *Registration) Close() error {
	r.closeOnce.Do(func() { close(r.stop) })
	<-r.stopped
	return nil
}

func (r *Registration) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// set records progress under mu and wakes waiters.
func (r *Registration) set(live bool, written uint64) {
	r.mu.Lock()
	r.live = live
	if written > r.written {
		r.written = written
	}
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

func (r *Registration) snapshot() ([]byte, uint64, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.value, r.gen, r.written
}

// run owns the session: it writes new values, notices loss and registers again.
func (r *Registration) run(sess Session) {
	defer close(r.stopped)
	// ctx ends every store call when Close is called, so Close never waits for a timeout.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	backoff := r.opts.RetryInterval
	retry := func() bool {
		t := time.NewTimer(backoff)
		defer t.Stop()
		backoff = min(2*backoff, r.opts.MaxRetryInterval)
		select {
		case <-t.C:
			return true
		case <-r.stop:
			return false
		}
	}
	var lostAt time.Time
	for {
		value, gen, written := r.snapshot()
		switch {
		case sess == nil:
			actx, acancel := context.WithTimeout(ctx, r.opts.TTL)
			s, err := r.register(actx, value)
			acancel()
			if errors.Is(err, ErrClosed) {
				r.logger.Warn("metadata store closed; giving up the registration")
				return
			}
			if err != nil {
				r.logger.Warn("registering again failed; retrying", "err", err, "retryIn", backoff, "lostFor", time.Since(lostAt).Round(time.Millisecond))
				if !retry() {
					return
				}
				continue
			}
			sess, backoff = s, r.opts.RetryInterval
			r.set(true, gen)
			r.logger.Info("registered again after losing the metadata session", "lostFor", time.Since(lostAt).Round(time.Millisecond))
			continue
		case written < gen:
			actx, acancel := context.WithTimeout(ctx, r.opts.TTL)
			_, err := sess.PutEphemeral(actx, r.key, value, AnyVersion)
			acancel()
			if err == nil {
				backoff = r.opts.RetryInterval
				r.set(true, gen)
				continue
			}
			if errors.Is(err, ErrClosed) {
				r.logger.Warn("metadata store closed; giving up the registration")
				return
			}
			if !errors.Is(err, ErrSessionLost) {
				r.logger.Warn("updating the registration failed; retrying", "err", err, "retryIn", backoff)
				if !retry() {
					_ = sess.Close()
					return
				}
				continue
			}
			// The session is gone; fall through to wait for Done below, which is closed.
		}
		select {
		case <-sess.Done():
			lostAt = time.Now()
			r.set(false, 0)
			r.logger.Warn("metadata session lost; registering again, serving continues meanwhile")
			sess = nil
		case <-r.wake:
		case <-r.stop:
			_ = sess.Close()
			return
		}
	}
}
