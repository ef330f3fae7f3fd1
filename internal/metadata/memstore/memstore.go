package memstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/RaduBerinde/btreemap"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/internal/watchq"
)

// Options tune a memory store.
type Options struct {
	// MaxWatchBacklog is how many change events may wait unread on one watch before the watch
	// is closed (the consumer must watch again). Default 4096.
	MaxWatchBacklog int
	// MaxBytes bounds the keys and values held (etcd's quota-backend-bytes): a put that would
	// go beyond it fails with ErrSpaceExceeded; deletes always succeed. 0: no bound.
	MaxBytes int64
	// Journal, when set, makes every change durable before it becomes visible (localstore);
	// nil keeps the store in memory only.
	Journal Journal
}

// Journal records a store's changes durably. Under the store's lock, for one group of
// writes, the store calls Put and Delete for each change in revision order and then Commit
// once; nothing of the group is visible to readers, watches or the writers themselves
// before Commit has returned. A Commit error fails the store for good (its memory may then
// hold changes the journal lost): every later call returns that error.
type Journal interface {
	Put(key string, value []byte, version int64, ephemeral bool)
	Delete(key string)
	// Commit makes the recorded changes and the store revision rev durable, atomically.
	Commit(rev int64) error
}

// ErrSpaceExceeded is returned by a put that would take the store beyond Options.MaxBytes.
var ErrSpaceExceeded = errors.New("memstore: metadata store size quota exceeded")

// DefaultOptions returns the defaults.
func DefaultOptions() Options { return Options{MaxWatchBacklog: 4096} }

// state is the data every handle shares; one mutex guards all of it. A write changes the data
// under the mutex, and its events and signals (closed channels) are published at the end of
// its critical section (watchq.Push never blocks), which keeps events in revision order; with
// a journal, only after the journal's Commit (see write).
type state struct {
	mu          sync.Mutex
	rev         int64
	kvs         map[string]*entry
	keys        *btreemap.BTreeMap[string, struct{}] // kvs' keys in order, for prefix lists
	bytes       int64                                // len(key)+len(value) over kvs
	watchers    map[*watcher]struct{}
	elections   map[string]*election
	nextSession int64

	maxBytes int64
	journal  Journal
	failed   error            // a journal commit failed: the store is unusable
	events   []metadata.Event // changes of the current write, not yet published
	signals  []chan struct{}  // channels to close when the current write is published

	qmu        sync.Mutex // guards queue and committing (group commit); never held with mu
	queue      []*pendingWrite
	committing bool
}

// pendingWrite is a write waiting for its group commit.
type pendingWrite struct {
	fn   func() (metadata.Version, error)
	v    metadata.Version
	err  error
	done chan struct{}
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
	s, _ := Restore(opts, 0, nil)
	return s
}

// Restore returns a handle on a store that holds kvs (persistent keys) at revision rev, as a
// journal recorded them; later changes go to opts.Journal.
func Restore(opts Options, rev int64, kvs []metadata.KV) (*Store, error) {
	if opts.MaxWatchBacklog <= 0 {
		opts.MaxWatchBacklog = DefaultOptions().MaxWatchBacklog
	}
	st := &state{
		rev: rev, kvs: make(map[string]*entry, len(kvs)), keys: newKeyIndex(),
		watchers: map[*watcher]struct{}{}, elections: map[string]*election{},
		maxBytes: opts.MaxBytes, journal: opts.Journal,
	}
	for _, kv := range kvs {
		if kv.Key == "" || int64(kv.Version) <= 0 || int64(kv.Version) > rev {
			return nil, fmt.Errorf("memstore: restore: key %q at version %d, store revision %d", kv.Key, kv.Version, rev)
		}
		if _, dup := st.kvs[kv.Key]; dup {
			return nil, fmt.Errorf("memstore: restore: key %q twice", kv.Key)
		}
		st.kvs[kv.Key] = &entry{value: clone(kv.Value), version: int64(kv.Version)}
		st.keys.ReplaceOrInsert(kv.Key, struct{}{})
		st.bytes += int64(len(kv.Key) + len(kv.Value))
	}
	return newHandle(st, opts), nil
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

// write runs fn, which reads and changes the data under st.mu, and publishes what it changed.
// Without a journal that happens at once. With one, writes are group-committed: the first
// writer to arrive commits every write queued behind it, running them in order under st.mu,
// then one journal Commit, then publishing, all before releasing st.mu, so a reader never sees
// a change that is not durable and one fsync covers the whole group. A queued write is
// carried out even if its caller's context ends meanwhile (as with etcd, a request may be
// applied although its caller gave up), so the caller always learns the outcome.
func (st *state) write(fn func() (metadata.Version, error)) (metadata.Version, error) {
	if st.journal == nil {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.run(fn)
	}
	w := &pendingWrite{fn: fn, done: make(chan struct{})}
	st.qmu.Lock()
	st.queue = append(st.queue, w)
	if st.committing {
		st.qmu.Unlock()
		<-w.done
		return w.v, w.err
	}
	st.committing = true
	for len(st.queue) > 0 {
		group := st.queue
		st.queue = nil
		st.qmu.Unlock()
		st.commitGroup(group)
		st.qmu.Lock()
	}
	st.committing = false
	st.qmu.Unlock()
	return w.v, w.err
}

// run is one write without a journal, under st.mu.
func (st *state) run(fn func() (metadata.Version, error)) (metadata.Version, error) {
	if st.failed != nil {
		return 0, st.failed
	}
	v, err := fn()
	st.publish()
	return v, err
}

func (st *state) commitGroup(group []*pendingWrite) {
	st.mu.Lock()
	for _, w := range group {
		if st.failed != nil {
			w.err = st.failed
			continue
		}
		w.v, w.err = w.fn()
	}
	if st.failed == nil && (len(st.events) > 0 || len(st.signals) > 0) {
		if err := st.journal.Commit(st.rev); err != nil {
			st.failed = fmt.Errorf("memstore: journal commit failed, the store is unusable until restarted: %w", err)
			// The changes are not published; the signals still are (a session ended, a
			// candidacy withdrawn), so nobody waits forever on a store that is gone.
			st.events = nil
			for _, w := range group {
				w.v, w.err = 0, st.failed
			}
		}
	}
	st.publish()
	st.mu.Unlock()
	for _, w := range group {
		close(w.done)
	}
}

// publish hands the current write's events to the watches and closes its signal channels,
// under st.mu.
func (st *state) publish() {
	for _, ev := range st.events {
		st.notify(ev)
	}
	for _, ch := range st.signals {
		close(ch)
	}
	st.events, st.signals = st.events[:0], st.signals[:0]
}

// signal closes ch when the current write is published.
func (st *state) signal(ch chan struct{}) { st.signals = append(st.signals, ch) }

// read runs fn under st.mu unless the store failed.
func (st *state) read(fn func() error) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.failed != nil {
		return st.failed
	}
	return fn()
}

// Get implements metadata.Store.
func (s *Store) Get(ctx context.Context, key string) (metadata.KV, error) {
	if err := s.check(ctx); err != nil {
		return metadata.KV{}, err
	}
	var kv metadata.KV
	err := s.st.read(func() error {
		e, ok := s.st.kvs[key]
		if !ok {
			return fmt.Errorf("%w: %s", metadata.ErrNotFound, key)
		}
		kv = metadata.KV{Key: key, Value: clone(e.value), Version: metadata.Version(e.version)}
		return nil
	})
	return kv, err
}

// Put implements metadata.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte, expected metadata.Version) (metadata.Version, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	return s.st.write(func() (metadata.Version, error) { return s.st.put(key, value, expected, nil) })
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
	grow := int64(len(key) + len(value))
	if ok {
		grow -= int64(len(key) + len(e.value))
	}
	if st.maxBytes > 0 && grow > 0 && st.bytes+grow > st.maxBytes {
		return 0, fmt.Errorf("%w: putting %s (%d bytes) into %d of %d bytes", ErrSpaceExceeded, key, len(value), st.bytes, st.maxBytes)
	}
	st.bytes += grow
	st.rev++
	if ok && e.owner != nil && e.owner != owner {
		delete(e.owner.keys, key)
	}
	ne := &entry{value: clone(value), version: st.rev, owner: owner}
	st.kvs[key] = ne
	if !ok {
		st.keys.ReplaceOrInsert(key, struct{}{})
	}
	if owner != nil {
		owner.keys[key] = struct{}{}
	}
	if st.journal != nil {
		st.journal.Put(key, ne.value, st.rev, owner != nil)
	}
	st.events = append(st.events, metadata.Event{Type: metadata.EventPut, Key: key, Value: ne.value, Version: metadata.Version(st.rev)})
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
	_, err := s.st.write(func() (metadata.Version, error) {
		e, ok := s.st.kvs[key]
		if err := checkVersion(key, e, ok, expected, false); err != nil {
			return 0, err
		}
		s.st.remove(key)
		return 0, nil
	})
	return err
}

// remove deletes an existing key under st.mu.
func (st *state) remove(key string) {
	e := st.kvs[key]
	if e.owner != nil {
		delete(e.owner.keys, key)
	}
	delete(st.kvs, key)
	st.keys.Delete(key)
	st.bytes -= int64(len(key) + len(e.value))
	st.rev++
	if st.journal != nil {
		st.journal.Delete(key)
	}
	st.events = append(st.events, metadata.Event{Type: metadata.EventDelete, Key: key, Version: metadata.Version(st.rev)})
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
	var out []metadata.KV
	err := s.st.read(func() error { out = s.st.list(prefix); return nil })
	return out, err
}

// list walks the ordered index from prefix on, so it costs the keys it returns, not the
// store's size: opening a topic lists its cursors, and with one scan of every key per list
// a standalone with tens of thousands of topics created each new one in time growing with
// their number.
func (st *state) list(prefix string) []metadata.KV {
	var out []metadata.KV
	for k := range st.keys.Ascend(btreemap.GE(prefix), btreemap.Max[string]()) {
		if !strings.HasPrefix(k, prefix) {
			break
		}
		e := st.kvs[k]
		out = append(out, metadata.KV{Key: k, Value: clone(e.value), Version: metadata.Version(e.version)})
	}
	return out
}

// keyIndexDegree is the index's B-tree degree: nodes of up to 2*32-1 keys, a few cache
// lines of string headers, as Pebble's own users of this B-tree choose.
const keyIndexDegree = 32

func newKeyIndex() *btreemap.BTreeMap[string, struct{}] {
	return btreemap.New[string, struct{}](keyIndexDegree, strings.Compare)
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
	if err := s.st.failed; err != nil {
		s.st.mu.Unlock()
		cancel()
		stop()
		return nil, err
	}
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
