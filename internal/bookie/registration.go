package bookie

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

// registrar keeps the bookie's session-bound registration key
// (bookieproto.RegistrationPrefix + address) in the metadata store. It runs beside the data
// plane and never stops it: when the session is lost (network partition, store restart) it
// logs, waits a little and registers again with a new session, forever, until its context
// ends. While registered it polls readOnly and rewrites the value when the state changes, so
// ledger clients stop placing new ledgers on a read-only bookie.
type registrar struct {
	store    metadata.Store
	reg      bookieproto.Registration
	readOnly func() bool
	ttl      time.Duration
	poll     time.Duration // how often readOnly is checked
	log      *slog.Logger
	metrics  *metrics

	mu   sync.Mutex
	sess metadata.Session // current session, for tests that expire it
}

// Key is the registration key of this bookie.
func (r *registrar) key() string { return bookieproto.RegistrationPrefix + r.reg.Address }

func (r *registrar) state() string {
	if r.readOnly() {
		return bookieproto.StateReadOnly
	}
	return bookieproto.StateWritable
}

// run registers and keeps the registration until ctx ends, then closes the session (which
// deletes the key) before returning.
func (r *registrar) run(ctx context.Context) {
	var backoff time.Duration
	for {
		err := r.session(ctx)
		r.metrics.registration.Set(0)
		if ctx.Err() != nil {
			return
		}
		backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
		r.log.Warn("bookie registration lost; the bookie keeps serving and registers again", "err", err, "retryIn", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

// session runs one session: create it, put the key, follow the read-only state until the
// session ends (an error) or ctx ends (nil, after deleting the key).
func (r *registrar) session(ctx context.Context) error {
	sess, err := r.store.NewSession(ctx, r.ttl)
	if err != nil {
		return fmt.Errorf("bookie: new metadata session: %w", err)
	}
	r.mu.Lock()
	r.sess = sess
	r.mu.Unlock()
	defer func() {
		// Closing the session deletes the key; on shutdown that tells clients at once
		// instead of after the TTL.
		_ = sess.Close()
	}()
	state := r.state()
	if err := r.put(ctx, sess, state); err != nil {
		return err
	}
	r.log.Info("bookie registered", "key", r.key(), "state", state)
	t := time.NewTicker(r.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sess.Done():
			return metadata.ErrSessionLost
		case <-t.C:
			if s := r.state(); s != state {
				if err := r.put(ctx, sess, s); err != nil {
					return err
				}
				r.log.Info("bookie registration state changed", "from", state, "to", s)
				state = s
			}
		}
	}
}

// put writes the registration with AnyVersion: a key left by this bookie's previous process
// (whose session has not expired yet) is taken over by the new session.
func (r *registrar) put(ctx context.Context, sess metadata.Session, state string) error {
	reg := r.reg
	reg.State = state
	val, err := json.Marshal(reg)
	if err != nil {
		return fmt.Errorf("bookie: encoding registration: %w", err)
	}
	if _, err := sess.PutEphemeral(ctx, r.key(), val, metadata.AnyVersion); err != nil {
		return fmt.Errorf("bookie: registering %s: %w", r.key(), err)
	}
	if state == bookieproto.StateReadOnly {
		r.metrics.registration.Set(2)
	} else {
		r.metrics.registration.Set(1)
	}
	return nil
}

func (r *registrar) currentSession() metadata.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sess
}
