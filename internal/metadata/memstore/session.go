package memstore

import (
	"context"
	"fmt"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

type session struct {
	id     int64
	st     *state
	handle *Store
	ttl    time.Duration

	// Guarded by st.mu.
	keys  map[string]struct{}
	ended bool
	done  chan struct{}
}

var _ metadata.Session = (*session)(nil)

func (ss *session) Done() <-chan struct{} { return ss.done }

func (ss *session) PutEphemeral(ctx context.Context, key string, value []byte, expected metadata.Version) (metadata.Version, error) {
	if err := ss.handle.check(ctx); err != nil {
		return 0, err
	}
	return ss.st.write(func() (metadata.Version, error) {
		if ss.ended {
			return 0, fmt.Errorf("%w: put %s", metadata.ErrSessionLost, key)
		}
		return ss.st.put(key, value, expected, ss)
	})
}

func (ss *session) Close() error {
	ss.end()
	ss.handle.mu.Lock()
	delete(ss.handle.sessions, ss)
	ss.handle.mu.Unlock()
	return nil
}

// end deletes the session's keys, withdraws its candidacies and closes Done, once.
func (ss *session) end() {
	_, _ = ss.st.write(func() (metadata.Version, error) {
		ss.endLocked()
		return 0, nil
	})
	// A failed store publishes nothing, but the session is over all the same.
	ss.st.mu.Lock()
	if !ss.ended {
		ss.ended = true
		close(ss.done)
	}
	ss.st.mu.Unlock()
}

func (ss *session) endLocked() {
	if ss.ended {
		return
	}
	ss.ended = true
	for key := range ss.keys {
		ss.st.remove(key)
	}
	var mine []*candidate
	for _, el := range ss.st.elections {
		for _, c := range el.candidates {
			if c.sess == ss {
				mine = append(mine, c)
			}
		}
	}
	for _, c := range mine {
		ss.st.withdraw(c)
	}
	ss.st.signal(ss.done)
}

// election is the queue of candidates for one election name; the first one leads.
type election struct {
	name       string
	candidates []*candidate
}

type candidate struct {
	el   *election
	sess *session
	key  string        // its candidacy key, bound to sess
	won  chan struct{} // closed when this candidate becomes the leader
	gone chan struct{} // closed when it resigns or its session ends
	out  bool
}

func (ss *session) Campaign(ctx context.Context, name string, value []byte) (metadata.Leadership, error) {
	if err := ss.handle.check(ctx); err != nil {
		return nil, err
	}
	var c *candidate
	if _, err := ss.st.write(func() (metadata.Version, error) {
		if ss.ended {
			return 0, fmt.Errorf("%w: campaign %s", metadata.ErrSessionLost, name)
		}
		// The candidacy key, as etcd's concurrency.Election names it: election/<lease hex>.
		key := fmt.Sprintf("%s/%x", name, ss.id)
		v, err := ss.st.put(key, value, metadata.AnyVersion, ss)
		if err != nil {
			return 0, err
		}
		el := ss.st.elections[name]
		if el == nil {
			el = &election{name: name}
			ss.st.elections[name] = el
		}
		c = &candidate{el: el, sess: ss, key: key, won: make(chan struct{}), gone: make(chan struct{})}
		el.candidates = append(el.candidates, c)
		if len(el.candidates) == 1 {
			ss.st.signal(c.won)
		}
		return v, nil
	}); err != nil {
		return nil, err
	}

	select {
	case <-c.won:
		return &leadership{c: c}, nil
	case <-c.gone:
		return nil, fmt.Errorf("%w: campaign %s", metadata.ErrSessionLost, name)
	case <-ctx.Done():
		ss.st.withdrawWrite(c)
		return nil, ctx.Err()
	}
}

// withdraw removes a candidate under st.mu and promotes the next one if it led.
func (st *state) withdraw(c *candidate) {
	if c.out {
		return
	}
	c.out = true
	if e, ok := st.kvs[c.key]; ok && e.owner == c.sess {
		st.remove(c.key)
	}
	el := c.el
	for i, x := range el.candidates {
		if x == c {
			el.candidates = append(el.candidates[:i], el.candidates[i+1:]...)
			if i == 0 && len(el.candidates) > 0 {
				st.signal(el.candidates[0].won)
			}
			break
		}
	}
	if len(el.candidates) == 0 {
		delete(st.elections, el.name)
	}
	st.signal(c.gone)
}

// withdrawWrite withdraws c as a write of its own.
func (st *state) withdrawWrite(c *candidate) {
	_, _ = st.write(func() (metadata.Version, error) {
		st.withdraw(c)
		return 0, nil
	})
}

type leadership struct{ c *candidate }

func (l *leadership) Done() <-chan struct{} { return l.c.gone }

func (l *leadership) Resign(ctx context.Context) error {
	l.c.sess.st.withdrawWrite(l.c)
	return nil
}

// Leader implements metadata.LeaderReader.
func (s *Store) Leader(ctx context.Context, name string) (metadata.KV, error) {
	if err := s.check(ctx); err != nil {
		return metadata.KV{}, err
	}
	var kv metadata.KV
	err := s.st.read(func() error {
		el := s.st.elections[name]
		if el == nil || len(el.candidates) == 0 {
			return fmt.Errorf("%w: no leader of %s", metadata.ErrNotFound, name)
		}
		c := el.candidates[0]
		e, ok := s.st.kvs[c.key]
		if !ok {
			return fmt.Errorf("%w: no leader of %s", metadata.ErrNotFound, name)
		}
		kv = metadata.KV{Key: c.key, Value: clone(e.value), Version: metadata.Version(e.version)}
		return nil
	})
	return kv, err
}
