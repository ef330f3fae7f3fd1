package memstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/internal/watchq"
)

// Options tune a memory store.
type Options struct {
	// MaxWatchBacklog is how many change events may wait unread on one watch before the watch
	// is closed (the consumer must watch again). Default 4096.
	MaxWatchBacklog int
}

// DefaultOptions returns the defaults.
func DefaultOptions() Options { return Options{MaxWatchBacklog: 4096} }

// state is the data every handle shares; one mutex guards all of it. Event delivery happens
// under the mutex (watchq.Push never blocks), which keeps events in revision order.
type state struct {
	mu          sync.Mutex
	rev         int64
	kvs         map[string]*entry
	watchers    map[*watcher]struct{}
	elections   map[string]*election
	nextSession int64
}

type entry struct {
	value   []byte
	version int64
	owner   *session // nil for a persistent key
}

type watcher struct {
	key    string
	prefix bool
	q      *watchq.Queue
}

func (w *watcher) matches(key string) bool {
	if w.prefix {
		return strings.HasPrefix(key, w.key)
	}
	return key == w.key
}

// Store is one client handle on a memory store. It implements metadata.Store.
type Store struct {
	st   *state
	opts Options

	mu       sync.Mutex // guards the fields below; taken before st.mu, never after
	closed   bool
	sessions map[*session]struct{}
	cancel   context.CancelFunc // ends this handle's watches
	ctx      context.Context
}

var _ metadata.Store = (*Store)(nil)

// New returns a handle on a new, empty memory store.
func New(opts Options) *Store {
	if opts.MaxWatchBacklog <= 0 {
		opts.MaxWatchBacklog = DefaultOptions().MaxWatchBacklog
	}
	st := &state{kvs: map[string]*entry{}, watchers: map[*watcher]struct{}{}, elections: map[string]*election{}}
	return newHandle(st, opts)
}

func newHandle(st *state, opts Options) *Store {
	ctx, cancel := context.WithCancel(context.Background())
	return &Store{st: st, opts: opts, sessions: map[*session]struct{}{}, ctx: ctx, cancel: cancel}
}

// NewClient opens another handle on the same data, as another process's client would.
func (s *Store) NewClient() *Store { return newHandle(s.st, s.opts) }

func (s *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return metadata.ErrClosed
	}
	return nil
}

// Get implements metadata.Store.
func (s *Store) Get(ctx context.Context, key string) (metadata.KV, error) {
	if err := s.check(ctx); err != nil {
		return metadata.KV{}, err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	e, ok := s.st.kvs[key]
	if !ok {
		return metadata.KV{}, fmt.Errorf("%w: %s", metadata.ErrNotFound, key)
	}
	return metadata.KV{Key: key, Value: clone(e.value), Version: metadata.Version(e.version)}, nil
}

// Put implements metadata.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte, expected metadata.Version) (metadata.Version, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.put(key, value, expected, nil)
}

// put writes under st.mu; owner is the session for an ephemeral key, nil otherwise. As in
// etcd, a plain put over an ephemeral key makes it persistent, and an ephemeral put moves the
// key to the new session.
func (st *state) put(key string, value []byte, expected metadata.Version, owner *session) (metadata.Version, error) {
	if key == "" {
		return 0, errors.New("memstore: empty key")
	}
	e, ok := st.kvs[key]
	if err := checkVersion(key, e, ok, expected, true); err != nil {
		return 0, err
	}
	st.rev++
	if ok && e.owner != nil && e.owner != owner {
		delete(e.owner.keys, key)
	}
	ne := &entry{value: clone(value), version: st.rev, owner: owner}
	st.kvs[key] = ne
	if owner != nil {
		owner.keys[key] = struct{}{}
	}
	st.notify(metadata.Event{Type: metadata.EventPut, Key: key, Value: ne.value, Version: metadata.Version(st.rev)})
	return metadata.Version(st.rev), nil
}

func checkVersion(key string, e *entry, exists bool, expected metadata.Version, isPut bool) error {
	switch {
	case expected == metadata.AnyVersion:
		if !exists && !isPut {
			return fmt.Errorf("%w: %s", metadata.ErrNotFound, key)
		}
	case !exists:
		if isPut && expected == metadata.NotExists {
			return nil
		}
		if !isPut {
			return fmt.Errorf("%w: %s", metadata.ErrNotFound, key)
		}
		return fmt.Errorf("%w: %s does not exist, expected version %d", metadata.ErrBadVersion, key, expected)
	case expected == metadata.NotExists && isPut:
		return fmt.Errorf("%w: %s already exists (version %d)", metadata.ErrBadVersion, key, e.version)
	case e.version != int64(expected):
		return fmt.Errorf("%w: %s is at version %d, expected %d", metadata.ErrBadVersion, key, e.version, expected)
	}
	return nil
}

// Delete implements metadata.Store.
func (s *Store) Delete(ctx context.Context, key string, expected metadata.Version) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	e, ok := s.st.kvs[key]
	if err := checkVersion(key, e, ok, expected, false); err != nil {
		return err
	}
	s.st.remove(key)
	return nil
}

// remove deletes an existing key under st.mu.
func (st *state) remove(key string) {
	e := st.kvs[key]
	if e.owner != nil {
		delete(e.owner.keys, key)
	}
	delete(st.kvs, key)
	st.rev++
	st.notify(metadata.Event{Type: metadata.EventDelete, Key: key, Version: metadata.Version(st.rev)})
	// Deleting a candidacy key ends that candidacy, as in etcd, where the election only sees
	// keys: the leader loses leadership and the next candidate leads.
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		if el := st.elections[key[:i]]; el != nil {
			for _, c := range el.candidates {
				if c.key == key {
					st.withdraw(c)
					break
				}
			}
		}
	}
}

// notify hands an event to every matching watch, each with its own copy of the value, as
// etcd does: a consumer that modifies an event must not change the store or other watchers.
func (st *state) notify(ev metadata.Event) {
	for w := range st.watchers {
		if !w.matches(ev.Key) {
			continue
		}
		e := ev
		e.Value = slices.Clone(ev.Value)
		if !w.q.Push(e) {
			delete(st.watchers, w)
		}
	}
}

// List implements metadata.Store.
func (s *Store) List(ctx context.Context, prefix string) ([]metadata.KV, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.list(prefix), nil
}

func (st *state) list(prefix string) []metadata.KV {
	var out []metadata.KV
	for k, e := range st.kvs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, metadata.KV{Key: k, Value: clone(e.value), Version: metadata.Version(e.version)})
		}
	}
	slices.SortFunc(out, func(a, b metadata.KV) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Watch implements metadata.Store.
func (s *Store) Watch(ctx context.Context, key string, prefix bool) (<-chan metadata.Event, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	// The watch ends with ctx or with this handle, whichever comes first.
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	s.st.mu.Lock()
	var initial []metadata.Event
	if prefix {
		for _, kv := range s.st.list(key) {
			initial = append(initial, metadata.Event{Type: metadata.EventPut, Key: kv.Key, Value: kv.Value, Version: kv.Version})
		}
	} else if e, ok := s.st.kvs[key]; ok {
		initial = append(initial, metadata.Event{Type: metadata.EventPut, Key: key, Value: clone(e.value), Version: metadata.Version(e.version)})
	}
	w := &watcher{key: key, prefix: prefix, q: watchq.New(wctx, s.opts.MaxWatchBacklog, initial)}
	s.st.watchers[w] = struct{}{}
	s.st.mu.Unlock()
	go func() {
		<-w.q.Done()
		stop()
		cancel()
		s.st.mu.Lock()
		delete(s.st.watchers, w)
		s.st.mu.Unlock()
	}()
	return w.q.C(), nil
}

// NewSession implements metadata.Store. The ttl is recorded but never enforced: an in-process
// session cannot miss keep-alives. Use ExpireSession to simulate that.
func (s *Store) NewSession(ctx context.Context, ttl time.Duration) (metadata.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("memstore: session ttl must be positive, got %v", ttl)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, metadata.ErrClosed
	}
	s.st.mu.Lock()
	s.st.nextSession++
	ss := &session{id: s.st.nextSession, st: s.st, handle: s, ttl: ttl, keys: map[string]struct{}{}, done: make(chan struct{})}
	s.st.mu.Unlock()
	s.sessions[ss] = struct{}{}
	return ss, nil
}

// ExpireSession ends a session as if its keep-alives had stopped for its TTL: its ephemeral
// keys are deleted, its leaderships end and Done is closed. It is the test hook for session
// loss; sess must come from this store's state.
func (s *Store) ExpireSession(sess metadata.Session) error {
	ss, ok := sess.(*session)
	if !ok || ss.st != s.st {
		return fmt.Errorf("memstore: ExpireSession: %T is not a session of this store", sess)
	}
	ss.end()
	return nil
}

// Close implements metadata.Store: it ends the handle's sessions and watches.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	sessions := s.sessions
	s.sessions = nil
	s.mu.Unlock()
	for ss := range sessions {
		ss.end()
	}
	s.cancel()
	return nil
}

func clone(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return slices.Clone(b)
}
