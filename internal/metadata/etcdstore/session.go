package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

type session struct {
	store *Store
	cs    *concurrency.Session
	ttl   time.Duration

	closeOnce sync.Once
	closeErr  error
}

var _ metadata.Session = (*session)(nil)

func (ss *session) Done() <-chan struct{} { return ss.cs.Done() }

func (ss *session) lost() bool {
	select {
	case <-ss.cs.Done():
		return true
	default:
		return false
	}
}

func (ss *session) PutEphemeral(ctx context.Context, key string, value []byte, expected metadata.Version) (metadata.Version, error) {
	if ss.lost() {
		return 0, fmt.Errorf("%w: put %s", metadata.ErrSessionLost, key)
	}
	return ss.store.put(ctx, key, value, expected, ss.cs.Lease())
}

func (ss *session) Close() error {
	err := ss.close()
	ss.store.mu.Lock()
	delete(ss.store.sessions, ss)
	ss.store.mu.Unlock()
	return err
}

// close stops the keep-alives and revokes the lease, so the session's keys go at once.
func (ss *session) close() error {
	ss.closeOnce.Do(func() {
		wasLost := ss.lost()
		ss.cs.Orphan()
		if wasLost {
			return // the lease is gone already; revoking would only log a failure
		}
		// Bounded well below the TTL: Close must be prompt even when etcd is unreachable, and
		// an unrevoked lease still expires on its own.
		ctx, cancel := context.WithTimeout(context.Background(), min(ss.ttl, 2*time.Second))
		defer cancel()
		_, err := ss.store.client.Revoke(ctx, ss.cs.Lease())
		if err != nil && !ss.lostErr(err) {
			// The lease will still expire on its own after the TTL.
			ss.closeErr = fmt.Errorf("etcdstore: revoke lease %x: %w", ss.cs.Lease(), err)
		}
	})
	return ss.closeErr
}

func (ss *session) lostErr(err error) bool {
	return errors.Is(err, rpctypes.ErrLeaseNotFound) || errors.Is(err, context.Canceled)
}

func (ss *session) Campaign(ctx context.Context, name string, value []byte) (metadata.Leadership, error) {
	if err := ss.store.check(); err != nil {
		return nil, err
	}
	if ss.lost() {
		return nil, fmt.Errorf("%w: campaign %s", metadata.ErrSessionLost, name)
	}
	// concurrency.Election waits for earlier candidates only; it would not notice that our
	// own lease expired meanwhile. Tie the wait to the session as well.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-ss.cs.Done():
			cancel()
		case <-cctx.Done():
		}
	}()
	el := concurrency.NewElection(ss.cs, name)
	// etcd's Campaign, when its context ends, resigns with the client's own context, which
	// waits as long as etcd is unreachable: a candidate told to stop would hang its
	// process's shutdown. So wait for it only as long as ctx; an abandoned Campaign ends
	// when the client closes, and its candidacy key goes with the session's lease.
	campaigned := make(chan error, 1)
	go func() { campaigned <- el.Campaign(cctx, string(value)) }()
	var err error
	select {
	case err = <-campaigned:
	case <-cctx.Done():
		err = cctx.Err()
	}
	if err != nil {
		if ss.lost() {
			return nil, fmt.Errorf("%w: campaign %s", metadata.ErrSessionLost, name)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("etcdstore: campaign %s: %w", name, err)
	}
	// Check that our candidacy key still exists as created: the lease may have expired just
	// before the predecessors went away.
	key := el.Key()
	resp, err := ss.store.client.Get(ctx, key)
	if err != nil || len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != el.Rev() {
		_ = el.Resign(context.WithoutCancel(ctx))
		if err != nil {
			return nil, fmt.Errorf("etcdstore: campaign %s: %w", name, err)
		}
		return nil, fmt.Errorf("%w: campaign %s: candidacy key gone", metadata.ErrSessionLost, name)
	}
	l := &leadership{ss: ss, el: el, done: make(chan struct{}), resign: make(chan struct{})}
	go l.watch(key, resp.Header.Revision)
	return l, nil
}

// leadership ends (Done closes) on Resign, on session loss, or when its key is deleted.
type leadership struct {
	ss       *session
	el       *concurrency.Election
	done     chan struct{}
	resign   chan struct{}
	resignMu sync.Mutex
	resigned bool
}

func (l *leadership) Done() <-chan struct{} { return l.done }

func (l *leadership) watch(key string, rev int64) {
	defer close(l.done)
	ctx, cancel := context.WithCancel(l.ss.store.ctx)
	defer cancel()
	wch := l.ss.store.client.Watch(ctx, key, clientv3.WithRev(rev+1), clientv3.WithFilterPut())
	for {
		select {
		case resp, ok := <-wch:
			if !ok {
				return
			}
			if resp.Err() != nil {
				// A broken watch cannot prove we still lead; give leadership up.
				l.ss.store.logger.Warn("leadership watch failed; stepping down", "key", key, "err", resp.Err())
				_ = l.Resign(context.Background())
				return
			}
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypeDelete {
					return
				}
			}
		case <-l.ss.cs.Done():
			return
		case <-l.resign:
			return
		}
	}
}

func (l *leadership) Resign(ctx context.Context) error {
	l.resignMu.Lock()
	defer l.resignMu.Unlock()
	if l.resigned {
		return nil
	}
	l.resigned = true
	err := l.el.Resign(ctx)
	close(l.resign)
	if err != nil && !l.ss.lost() {
		return fmt.Errorf("etcdstore: resign %s: %w", l.el.Key(), err)
	}
	return nil
}

// Leader implements metadata.LeaderReader: the candidacy key with the lowest create revision
// under the election's prefix leads, as in concurrency.Election.
func (s *Store) Leader(ctx context.Context, name string) (metadata.KV, error) {
	if err := s.check(); err != nil {
		return metadata.KV{}, err
	}
	resp, err := s.client.Get(ctx, name+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return metadata.KV{}, s.mapErr("leader", name, err)
	}
	if len(resp.Kvs) == 0 {
		return metadata.KV{}, fmt.Errorf("%w: no leader of %s", metadata.ErrNotFound, name)
	}
	return toKV(resp.Kvs[0]), nil
}
