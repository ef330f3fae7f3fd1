package etcdstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/internal/watchq"
)

// Options configure a Store.
type Options struct {
	// Endpoints are the etcd client URLs, e.g. http://10.0.0.1:2379.
	Endpoints []string
	// DialTimeout bounds connecting and the first request that proves the cluster answers.
	DialTimeout time.Duration
	// MaxWatchBacklog is how many change events may wait unread on one watch before it is
	// closed. Default 4096.
	MaxWatchBacklog int
	// ListPageSize is how many keys one List round trip fetches. Default 1000.
	ListPageSize int64
	// TLS, when set, is used towards https:// endpoints: the members' CA and this client's
	// certificate (etcd's credential when the members require client certificates).
	TLS *tls.Config
}

// DefaultOptions returns the defaults for endpoints.
func DefaultOptions(endpoints ...string) Options {
	return Options{Endpoints: endpoints, DialTimeout: 5 * time.Second, MaxWatchBacklog: 4096, ListPageSize: 1000}
}

// Store is a metadata.Store over an etcd client.
type Store struct {
	client    *clientv3.Client
	ownClient bool
	opts      Options
	logger    *slog.Logger

	ctx    context.Context // lives until Close: keep-alives and watches hang off it
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	sessions map[*session]struct{}
}

var _ metadata.Store = (*Store)(nil)

// Open connects to etcd and checks that it answers within DialTimeout.
func Open(ctx context.Context, opts Options, logger *slog.Logger) (*Store, error) {
	opts = withDefaults(opts)
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("etcdstore: no endpoints")
	}
	logger = logger.With("component", "etcdstore")
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   opts.Endpoints,
		DialTimeout: opts.DialTimeout,
		TLS:         opts.TLS,
		Logger:      zapToSlog(logger),
		// Without keep-alive pings a silently dead member would hold a watch forever.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("etcdstore: connect %v: %w", opts.Endpoints, err)
	}
	pctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	defer cancel()
	// A linearizable read proves a quorum with a leader answers, not only a TCP listener.
	if _, err := c.Get(pctx, "/", clientv3.WithCountOnly()); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("etcdstore: etcd at %v does not answer: %w", opts.Endpoints, err)
	}
	s := newStore(c, opts, logger)
	s.ownClient = true
	return s, nil
}

// NewFromClient wraps an existing client; Close leaves the client open.
func NewFromClient(c *clientv3.Client, opts Options, logger *slog.Logger) *Store {
	return newStore(c, withDefaults(opts), logger.With("component", "etcdstore"))
}

func withDefaults(o Options) Options {
	d := DefaultOptions()
	if o.DialTimeout <= 0 {
		o.DialTimeout = d.DialTimeout
	}
	if o.MaxWatchBacklog <= 0 {
		o.MaxWatchBacklog = d.MaxWatchBacklog
	}
	if o.ListPageSize <= 0 {
		o.ListPageSize = d.ListPageSize
	}
	return o
}

func newStore(c *clientv3.Client, opts Options, logger *slog.Logger) *Store {
	ctx, cancel := context.WithCancel(context.Background())
	return &Store{client: c, opts: opts, logger: logger, ctx: ctx, cancel: cancel, sessions: map[*session]struct{}{}}
}

// Client is the underlying etcd client, for tests and tools.
func (s *Store) Client() *clientv3.Client { return s.client }

func (s *Store) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return metadata.ErrClosed
	}
	return nil
}

// mapErr turns errors of a closed store into ErrClosed and leaves the rest wrapped.
func (s *Store) mapErr(op, key string, err error) error {
	if s.check() != nil {
		return fmt.Errorf("%w: %s %s", metadata.ErrClosed, op, key)
	}
	return fmt.Errorf("etcdstore: %s %s: %w", op, key, err)
}

// Get implements metadata.Store.
func (s *Store) Get(ctx context.Context, key string) (metadata.KV, error) {
	if err := s.check(); err != nil {
		return metadata.KV{}, err
	}
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return metadata.KV{}, s.mapErr("get", key, err)
	}
	if len(resp.Kvs) == 0 {
		return metadata.KV{}, fmt.Errorf("%w: %s", metadata.ErrNotFound, key)
	}
	return toKV(resp.Kvs[0]), nil
}

func toKV(kv *mvccpb.KeyValue) metadata.KV {
	v := kv.Value
	if v == nil {
		v = []byte{}
	}
	return metadata.KV{Key: string(kv.Key), Value: v, Version: metadata.Version(kv.ModRevision)}
}

// Put implements metadata.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte, expected metadata.Version) (metadata.Version, error) {
	return s.put(ctx, key, value, expected, clientv3.NoLease)
}

func (s *Store) put(ctx context.Context, key string, value []byte, expected metadata.Version, lease clientv3.LeaseID) (metadata.Version, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	var opts []clientv3.OpOption
	if lease != clientv3.NoLease {
		opts = append(opts, clientv3.WithLease(lease))
	}
	put := clientv3.OpPut(key, string(value), opts...)
	if expected == metadata.AnyVersion {
		resp, err := s.client.Do(ctx, put)
		if err != nil {
			return 0, s.putErr(key, lease, err)
		}
		return metadata.Version(resp.Put().Header.Revision), nil
	}
	var cmp clientv3.Cmp
	if expected == metadata.NotExists {
		cmp = clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	} else {
		cmp = clientv3.Compare(clientv3.ModRevision(key), "=", int64(expected))
	}
	resp, err := s.client.Txn(ctx).If(cmp).Then(put).Else(clientv3.OpGet(key, clientv3.WithKeysOnly())).Commit()
	if err != nil {
		return 0, s.putErr(key, lease, err)
	}
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return 0, fmt.Errorf("%w: %s does not exist, expected version %d", metadata.ErrBadVersion, key, expected)
		}
		if expected == metadata.NotExists {
			return 0, fmt.Errorf("%w: %s already exists (version %d)", metadata.ErrBadVersion, key, kvs[0].ModRevision)
		}
		return 0, fmt.Errorf("%w: %s is at version %d, expected %d", metadata.ErrBadVersion, key, kvs[0].ModRevision, expected)
	}
	return metadata.Version(resp.Header.Revision), nil
}

func (s *Store) putErr(key string, lease clientv3.LeaseID, err error) error {
	if lease != clientv3.NoLease && errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("%w: put %s: lease %x expired", metadata.ErrSessionLost, key, lease)
	}
	return s.mapErr("put", key, err)
}

// Delete implements metadata.Store.
func (s *Store) Delete(ctx context.Context, key string, expected metadata.Version) error {
	if err := s.check(); err != nil {
		return err
	}
	if expected == metadata.AnyVersion {
		resp, err := s.client.Delete(ctx, key)
		if err != nil {
			return s.mapErr("delete", key, err)
		}
		if resp.Deleted == 0 {
			return fmt.Errorf("%w: %s", metadata.ErrNotFound, key)
		}
		return nil
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", int64(expected))).
		Then(clientv3.OpDelete(key)).
		Else(clientv3.OpGet(key, clientv3.WithKeysOnly())).Commit()
	if err != nil {
		return s.mapErr("delete", key, err)
	}
	if resp.Succeeded {
		// ModRevision = 0 also matches an absent key: nothing was deleted.
		if resp.Responses[0].GetResponseDeleteRange().Deleted == 0 {
			return fmt.Errorf("%w: %s", metadata.ErrNotFound, key)
		}
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return fmt.Errorf("%w: %s", metadata.ErrNotFound, key)
	}
	return fmt.Errorf("%w: %s is at version %d, expected %d", metadata.ErrBadVersion, key, kvs[0].ModRevision, expected)
}

// prefixRange returns the [start, end) range of keys that start with prefix. The empty
// prefix is every key, which etcd spells as "\x00" to "\x00".
func prefixRange(prefix string) (start, end string) {
	if prefix == "" {
		return "\x00", "\x00"
	}
	return prefix, clientv3.GetPrefixRangeEnd(prefix)
}

// List implements metadata.Store.
func (s *Store) List(ctx context.Context, prefix string) ([]metadata.KV, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	kvs, _, err := s.list(ctx, prefix)
	return kvs, err
}

// list reads every key under prefix at one revision and returns that revision.
func (s *Store) list(ctx context.Context, prefix string) ([]metadata.KV, int64, error) {
	// Compaction can remove the pinned revision between pages; start over a few times.
	for attempt := 0; ; attempt++ {
		kvs, rev, err := s.listOnce(ctx, prefix)
		if errors.Is(err, rpctypes.ErrCompacted) && attempt < 3 {
			continue
		}
		return kvs, rev, err
	}
}

func (s *Store) listOnce(ctx context.Context, prefix string) ([]metadata.KV, int64, error) {
	start, end := prefixRange(prefix)
	var out []metadata.KV
	var rev int64
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(s.opts.ListPageSize),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.client.Get(ctx, start, opts...)
		if err != nil {
			return nil, 0, s.mapErr("list", prefix, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			out = append(out, toKV(kv))
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, rev, nil
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// Watch implements metadata.Store.
func (s *Store) Watch(ctx context.Context, key string, prefix bool) (<-chan metadata.Event, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var initial []metadata.Event
	var rev int64
	if prefix {
		kvs, r, err := s.list(ctx, key)
		if err != nil {
			return nil, err
		}
		rev = r
		for _, kv := range kvs {
			initial = append(initial, metadata.Event{Type: metadata.EventPut, Key: kv.Key, Value: kv.Value, Version: kv.Version})
		}
	} else {
		resp, err := s.client.Get(ctx, key)
		if err != nil {
			return nil, s.mapErr("watch", key, err)
		}
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			kv := toKV(kv)
			initial = append(initial, metadata.Event{Type: metadata.EventPut, Key: kv.Key, Value: kv.Value, Version: kv.Version})
		}
	}
	// The queue lives until the consumer's ctx or the store ends; the etcd watch under it
	// ends earlier when the queue is done or the stream fails, and the queue then drains.
	qctx, qcancel := context.WithCancel(ctx)
	stopQ := context.AfterFunc(s.ctx, qcancel)
	q := watchq.New(qctx, s.opts.MaxWatchBacklog, initial)
	wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(qctx))
	opts := []clientv3.OpOption{clientv3.WithRev(rev + 1)}
	wkey := key
	if prefix {
		var end string
		wkey, end = prefixRange(key)
		opts = append(opts, clientv3.WithRange(end))
	}
	wch := s.client.Watch(wctx, wkey, opts...)
	go func() {
		defer func() {
			wcancel()
			<-q.Done()
			stopQ()
			qcancel()
		}()
		for {
			select {
			case resp, ok := <-wch:
				if !ok {
					q.End()
					return
				}
				if err := resp.Err(); err != nil {
					s.logger.Warn("watch ended, the consumer will watch again", "key", key, "prefix", prefix, "err", err)
					q.End()
					return
				}
				for _, ev := range resp.Events {
					if !q.Push(toEvent(ev)) {
						if q.Overflowed() {
							s.logger.Warn("watch consumer fell behind; closing its watch", "key", key, "prefix", prefix, "maxWatchBacklog", s.opts.MaxWatchBacklog)
						}
						return
					}
				}
			case <-q.Done():
				return
			}
		}
	}()
	return q.C(), nil
}

func toEvent(ev *clientv3.Event) metadata.Event {
	if ev.Type == clientv3.EventTypeDelete {
		return metadata.Event{Type: metadata.EventDelete, Key: string(ev.Kv.Key), Version: metadata.Version(ev.Kv.ModRevision)}
	}
	kv := toKV(ev.Kv)
	return metadata.Event{Type: metadata.EventPut, Key: kv.Key, Value: kv.Value, Version: kv.Version}
}

// NewSession implements metadata.Store. The TTL is rounded up to whole seconds (etcd's lease
// granularity); etcd may raise a very short TTL to its minimum (1.5 election timeouts).
func (s *Store) NewSession(ctx context.Context, ttl time.Duration) (metadata.Session, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("etcdstore: session ttl must be positive, got %v", ttl)
	}
	secs := int64(math.Ceil(ttl.Seconds()))
	lease, err := s.client.Grant(ctx, secs)
	if err != nil {
		return nil, s.mapErr("grant lease", "", err)
	}
	// The keep-alive context is the store's, not ctx: ctx only bounds this call.
	cs, err := concurrency.NewSession(s.client, concurrency.WithLease(lease.ID), concurrency.WithContext(s.ctx))
	if err != nil {
		_, _ = s.client.Revoke(context.WithoutCancel(ctx), lease.ID)
		return nil, s.mapErr("keep lease alive", "", err)
	}
	ss := &session{store: s, cs: cs, ttl: time.Duration(secs) * time.Second}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = cs.Close()
		return nil, metadata.ErrClosed
	}
	s.sessions[ss] = struct{}{}
	return ss, nil
}

// ExpireSession revokes the session's lease from the server side, as if its keep-alives had
// stopped for the TTL: etcd deletes its keys and the keep-alive stream ends, closing Done.
// It is the test hook for session loss.
func (s *Store) ExpireSession(sess metadata.Session) error {
	ss, ok := sess.(*session)
	if !ok {
		return fmt.Errorf("etcdstore: ExpireSession: %T is not an etcd session", sess)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.DialTimeout)
	defer cancel()
	if _, err := s.client.Revoke(ctx, ss.cs.Lease()); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("etcdstore: revoke lease %x: %w", ss.cs.Lease(), err)
	}
	return nil
}

// Close implements metadata.Store: it ends the sessions opened through this store (revoking
// their leases, so their keys vanish now rather than after the TTL) and its watches.
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
		_ = ss.close()
	}
	s.cancel()
	if s.ownClient {
		return s.client.Close()
	}
	return nil
}
