package kafka

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// Enforcement of the byte-rate client quotas (quotas.go stores them): producer_byte_rate
// on Produce (the request's record bytes) and consumer_byte_rate on Fetch (the response's
// record bytes), for the (user, client id) of the connection, resolved in Kafka's order of
// precedence. As Kafka does since KIP-219, a request over its quota is answered at once
// with throttle_time_ms, and the connection is muted (its next request is not read) for
// that long, so a client that ignores the throttle time is held back all the same. A
// throttled Fetch still carries its data (Kafka sends an empty one): the debt it leaves
// lengthens the next throttles, so the rate over time stays at the quota.
//
// Each quota is a leaky bucket of bytes draining at the quota's rate; a request that
// leaves more than one second's worth in it is throttled by the time the excess takes to
// drain, at most Kafka's 11 s (quota.window.num x quota.window.size.seconds). Buckets are
// shared by what Kafka's metric tags group: a /users/alice quota by all of alice's
// clients, a /users/<default> one per user.

const (
	quotaProduce = "producer_byte_rate"
	quotaConsume = "consumer_byte_rate"
	// quotaRefresh is how often a broker reads the quota records again (an alter on this
	// broker applies at once; another broker's within this).
	quotaRefresh = 10 * time.Second
	quotaBurst   = time.Second
	maxThrottle  = 11 * time.Second
	// anonymousUser is Kafka's principal name of an unauthenticated connection, which
	// quotas of /users/<default> apply to.
	anonymousUser = "ANONYMOUS"
)

type quotaEnforcer struct {
	// set and loadedAt let a request skip the lock while no quota is set (the common
	// case, on the produce and fetch paths of every connection).
	set      atomic.Bool
	loadedAt atomic.Int64 // unix ns
	loading  atomic.Bool

	mu      sync.Mutex
	values  map[string]map[string]float64 // by entity record name (quotaEntityKey)
	buckets map[string]*quotaBucket
}

type quotaBucket struct {
	level float64 // bytes
	at    time.Time
}

// reloadQuotas reads every quota record into the enforcer.
func (s *Server) reloadQuotas(ctx context.Context) error {
	qs, err := s.be.ClientQuotas(ctx)
	if err != nil {
		return err
	}
	values := make(map[string]map[string]float64, len(qs))
	for _, q := range qs {
		if _, key, err := quotaEntityKey(q.Entity); err == nil {
			values[key] = q.Values
		}
	}
	e := &s.quotas
	e.mu.Lock()
	e.values = values
	e.set.Store(len(values) > 0)
	e.mu.Unlock()
	e.loadedAt.Store(time.Now().UnixNano())
	return nil
}

// refreshQuotas starts a reload when the records are older than quotaRefresh.
func (s *Server) refreshQuotas(now time.Time) {
	e := &s.quotas
	if now.UnixNano()-e.loadedAt.Load() < int64(quotaRefresh) || !e.loading.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer e.loading.Store(false)
		ctx, cancel := context.WithTimeout(s.ctx, adminTimeout)
		defer cancel()
		if err := s.reloadQuotas(ctx); err != nil {
			e.loadedAt.Store(time.Now().UnixNano()) // keep what we had; try again later
			if s.ctx.Err() == nil {
				s.log.Warn("kafka client quotas could not be read", "err", err)
			}
		}
	}()
}

// quotaLevel is one step of Kafka's precedence: which entity applies, as (user, client)
// components, each absent, the default (name nil) or the connection's own.
type quotaLevel struct {
	user, client       bool // the component is part of the entity
	userOwn, clientOwn bool // ... with the connection's name (else the default)
	tagUser, tagClient bool // the bucket is per user / per client id
}

var quotaLevels = []quotaLevel{
	{user: true, client: true, userOwn: true, clientOwn: true, tagUser: true, tagClient: true},
	{user: true, client: true, userOwn: true, tagUser: true, tagClient: true},
	{user: true, userOwn: true, tagUser: true},
	{user: true, client: true, clientOwn: true, tagUser: true, tagClient: true},
	{user: true, client: true, tagUser: true, tagClient: true},
	{user: true, tagUser: true},
	{client: true, clientOwn: true, tagClient: true},
	{client: true, tagClient: true},
}

// throttle records n bytes against the connection's quota of kind key and returns the
// throttle time (0 when there is no such quota or it is not exceeded), muting the
// connection for it.
func (c *conn) throttle(key string, n int) int32 {
	e := &c.s.quotas
	user := c.principal.Role
	if user == "" {
		user = anonymousUser
	}
	now := time.Now()
	c.s.refreshQuotas(now)
	if !e.set.Load() {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, l := range quotaLevels {
		var entity []resources.KafkaQuotaEntity
		if l.user {
			entity = append(entity, resources.KafkaQuotaEntity{Type: quotaUser, Name: ownName(l.userOwn, user)})
		}
		if l.client {
			entity = append(entity, resources.KafkaQuotaEntity{Type: quotaClientID, Name: ownName(l.clientOwn, c.clientID)})
		}
		_, ek, err := quotaEntityKey(entity)
		if err != nil {
			continue
		}
		rate, ok := e.values[ek][key]
		if !ok || rate <= 0 {
			continue
		}
		bk := key + "|"
		if l.tagUser {
			bk += "u=" + user
		}
		if l.tagClient {
			bk += "|c=" + c.clientID
		}
		d := e.recordLocked(bk, rate, float64(n), now)
		if d > 0 {
			until := now.Add(d).UnixNano()
			if until > c.throttleUntil.Load() {
				c.throttleUntil.Store(until)
			}
		}
		return int32(d / time.Millisecond)
	}
	return 0
}

func ownName(own bool, name string) *string {
	if own {
		return &name
	}
	return nil
}

func (e *quotaEnforcer) recordLocked(key string, rate, n float64, now time.Time) time.Duration {
	if e.buckets == nil || len(e.buckets) > 10_000 {
		e.pruneLocked(now)
	}
	b := e.buckets[key]
	if b == nil {
		b = &quotaBucket{at: now}
		e.buckets[key] = b
	}
	b.level = max(0, b.level-rate*now.Sub(b.at).Seconds()) + n
	b.at = now
	over := b.level - rate*quotaBurst.Seconds()
	if over <= 0 {
		return 0
	}
	return min(time.Duration(over/rate*float64(time.Second)), maxThrottle)
}

// pruneLocked drops buckets idle for a minute, which have drained unless their rate is
// tiny; dropping one forgives what it still held.
func (e *quotaEnforcer) pruneLocked(now time.Time) {
	if e.buckets == nil {
		e.buckets = map[string]*quotaBucket{}
		return
	}
	for k, b := range e.buckets {
		if now.Sub(b.at) > time.Minute {
			delete(e.buckets, k)
		}
	}
}

// waitThrottle holds the read loop while the connection is muted.
func (c *conn) waitThrottle() error {
	d := time.Until(time.Unix(0, c.throttleUntil.Load()))
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-c.ctx.Done():
		return c.ctx.Err()
	}
}
