package topics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/offload"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Namespace and topic policies on live topics.
//
// A topic resolves its policies when it loads (topic policies over namespace policies over
// the broker defaults of config.PoliciesConfig) and again whenever either record changes:
// policyManager watches /admin/policies/ and resources.TopicPoliciesRoot and re-applies
// the policies of the loaded topics under the changed key. Applying sets retention on the
// managed ledger (SetConfig), turns deduplication on or off and records the limits the
// producer/consumer admission checks read. A checker goroutine applies the time-driven
// ones every policyCheckIntervalSeconds (else messageExpiryCheckIntervalInMinutes /
// backlogQuotaCheckIntervalInSeconds): message TTL (subscriptions' mark-delete moves past
// expired entries) and backlog quotas (eviction moves slow cursors; the producer policies
// disconnect the producers, which then get ProducerBlockedQuotaExceededError (hold: the
// client keeps retrying with its messages queued) or ...Exception (its pending messages
// fail) until the backlog is under the quota again).

// effectivePolicies are a topic's resolved policies.
type effectivePolicies struct {
	dedup        bool
	ttl          time.Duration
	retention    *resources.RetentionPolicies
	quota        managedledger.BacklogQuota // zero limits: none
	maxProducers int                        // 0: unlimited
	maxConsumers int

	maxConsumersPerSub int // 0: unlimited
	maxSubscriptions   int // 0: unlimited
	// maxUnackedConsumer / maxUnackedSub: -1 when no policy sets them (the broker's
	// dynamic maxUnackedMessagesPerConsumer / PerSubscription apply); 0: unlimited.
	maxUnackedConsumer, maxUnackedSub int
	persistence                       *resources.PersistencePolicies // nil: the broker's E/Qw/Qa
	offload                           offload.Trigger
	offloadPolicies                   offload.Policies // where offloads go (managedledger.Config.OffloadPolicies)
	publishMsgs, publishBytes         int64            // per second; <= 0: unlimited (publish_rate.go)
	// autoSubscription overrides the broker's allowAutoSubscriptionCreation (nil: none).
	autoSubscription *bool
	// compactionThreshold: compact when the compaction backlog exceeds it (0: never;
	// compaction_monitor.go).
	compactionThreshold int64
}

// topicPolicyState is a topic's applied policies and last quota verdict.
type topicPolicyState struct {
	mu          sync.Mutex
	eff         effectivePolicies
	quotaExceed bool // last check: over a producer-policy quota

	pubRate publishRate // publish_rate.go

	// The unacked limits of eff plus one, read on the dispatch path without the lock
	// (0, the zero value: unset, also for topics whose policies never applied).
	unackedConsumer, unackedSub atomic.Int64
}

func (ps *topicPolicyState) get() effectivePolicies {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.eff
}

// resolvePolicies computes a topic's policies from the metadata store.
func (s *Service) resolvePolicies(ctx context.Context, name Name) (effectivePolicies, error) {
	pc := s.cfg.Policies
	eff := effectivePolicies{
		dedup:        pc.BrokerDeduplicationEnabled,
		ttl:          time.Duration(pc.TTLDurationDefaultInSeconds) * time.Second,
		maxProducers: pc.MaxProducersPerTopic,
		maxConsumers: pc.MaxConsumersPerTopic,
		quota: managedledger.BacklogQuota{
			LimitBytes: pc.BacklogQuotaDefaultLimitBytes,
			LimitTime:  time.Duration(pc.BacklogQuotaDefaultLimitSecond) * time.Second,
			Policy:     managedledger.BacklogQuotaPolicy(pc.BacklogQuotaDefaultRetentionPolicy),
		},
	}
	res := resources.New(s.store)
	ns, err := res.Namespace(ctx, name.Tenant, name.Namespace)
	if err != nil && !errors.Is(err, resources.ErrNotFound) && !errors.Is(err, resources.ErrInvalid) {
		return eff, fmt.Errorf("%w: policies of %s: %w", wire.ErrMetadata, name.NamespaceName(), err)
	}
	tp, err := res.TopicPolicies(ctx, name.Domain, name.Tenant, name.Namespace, name.Base().Local)
	if err != nil && !errors.Is(err, resources.ErrInvalid) {
		return eff, fmt.Errorf("%w: topic policies of %s: %w", wire.ErrMetadata, name, err)
	}
	pick := func(nsv, tv *int, dst *int) {
		if tv != nil {
			*dst = *tv
		} else if nsv != nil {
			*dst = *nsv
		}
	}
	if v := firstNonNil(tp.DeduplicationEnabled, ns.DeduplicationEnabled); v != nil {
		eff.dedup = *v
	}
	ttl := -1
	pick(ns.MessageTTLInSeconds, tp.MessageTTLInSeconds, &ttl)
	if ttl >= 0 {
		eff.ttl = time.Duration(ttl) * time.Second
	}
	pick(ns.MaxProducersPerTopic, tp.MaxProducerPerTopic, &eff.maxProducers)
	pick(ns.MaxConsumersPerTopic, tp.MaxConsumerPerTopic, &eff.maxConsumers)
	eff.maxConsumersPerSub, eff.maxSubscriptions = pc.MaxConsumersPerSubscription, pc.MaxSubscriptionsPerTopic
	pick(ns.MaxConsumersPerSub, tp.MaxConsumersPerSubscription, &eff.maxConsumersPerSub)
	pick(ns.MaxSubscriptionsPerTopic, tp.MaxSubscriptionsPerTopic, &eff.maxSubscriptions)
	eff.maxUnackedConsumer, eff.maxUnackedSub = -1, -1
	pick(ns.MaxUnackedPerConsumer, tp.MaxUnackedMessagesOnConsumer, &eff.maxUnackedConsumer)
	pick(ns.MaxUnackedPerSubscription, tp.MaxUnackedMessagesOnSubscription, &eff.maxUnackedSub)
	eff.persistence = firstNonNil(tp.Persistence, ns.Persistence)
	eff.publishMsgs, eff.publishBytes = pc.MaxPublishRatePerTopicInMessages, pc.MaxPublishRatePerTopicInBytes
	if r, ok := ns.PublishMaxMessageRate[s.cfg.ClusterName]; ok {
		eff.publishMsgs, eff.publishBytes = int64(r.RateInMsg), r.RateInByte
	}
	if r := tp.PublishRate; r != nil {
		eff.publishMsgs, eff.publishBytes = int64(r.RateInMsg), r.RateInByte
	}
	if o := tp.AutoSubscriptionCreation; o != nil {
		eff.autoSubscription = &o.AllowAutoSubscriptionCreation
	}
	eff.compactionThreshold = pc.BrokerServiceCompactionThresholdInBytes
	if v := firstNonNil(tp.CompactionThreshold, ns.CompactionThreshold); v != nil {
		eff.compactionThreshold = *v
	}
	eff.offload, eff.offloadPolicies = s.resolveOffload(&ns, &tp)
	eff.retention = firstNonNil(tp.RetentionPolicies, ns.RetentionPolicies)
	quotas := ns.BacklogQuotaMap
	if len(tp.BackLogQuotaMap) > 0 {
		quotas = tp.BackLogQuotaMap
	}
	if len(quotas) > 0 {
		eff.quota = managedledger.BacklogQuota{LimitBytes: -1, LimitTime: -1, Policy: managedledger.ProducerRequestHold}
		if q, ok := quotas["destination_storage"]; ok {
			eff.quota.LimitBytes, eff.quota.Policy = q.LimitSize, managedledger.BacklogQuotaPolicy(q.Policy)
		}
		if q, ok := quotas["message_age"]; ok {
			eff.quota.LimitTime = time.Duration(q.LimitTime) * time.Second
			if _, both := quotas["destination_storage"]; !both {
				eff.quota.Policy = managedledger.BacklogQuotaPolicy(q.Policy)
			}
		}
	}
	return eff, nil
}

func firstNonNil[T any](vs ...*T) *T {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

// applyPolicies resolves and applies t's policies. Called at load (an error fails the
// load) and on changes (errors are logged).
func (s *Service) applyPolicies(ctx context.Context, t *Topic) error {
	if t.log == nil {
		return nil
	}
	eff, err := s.resolvePolicies(ctx, t.name)
	if err != nil {
		return err
	}
	if l := t.log; l != nil {
		cfg := l.ml.Config()
		s.policyLogConfig(&cfg, eff)
		if err := l.ml.SetConfig(cfg); err != nil {
			return fmt.Errorf("%w: storage policies of %s: %w", wire.ErrNotAllowed, t.full, err)
		}
	}
	if t.dedup == nil {
		t.dedup = newDedup(t)
	}
	err = t.dedup.setEnabled(ctx, eff.dedup)
	// Recorded after deduplication switched, so eff reads as what is in force.
	t.pol.mu.Lock()
	t.pol.eff = eff
	t.pol.unackedConsumer.Store(int64(eff.maxUnackedConsumer) + 1)
	t.pol.unackedSub.Store(int64(eff.maxUnackedSub) + 1)
	t.pol.mu.Unlock()
	t.pol.pubRate.set(eff.publishMsgs, eff.publishBytes)
	if t.log != nil {
		t.pokeSubscriptions() // a raised unacked limit may let consumers receive again
	}
	return err
}

// policyLogConfig sets the parts of a managed-ledger config that policies decide:
// persistence (E/Qw/Qa of the ledgers created from now on, the cursor mark-delete rate),
// retention and offload. Unset, each falls back to the broker's default.
func (s *Service) policyLogConfig(cfg *managedledger.Config, eff effectivePolicies) {
	def := s.ledgers.DefaultConfig()
	cfg.EnsembleSize, cfg.WriteQuorum, cfg.AckQuorum = def.EnsembleSize, def.WriteQuorum, def.AckQuorum
	cfg.MarkDeleteRateLimit = def.MarkDeleteRateLimit
	if p := eff.persistence; p != nil {
		cfg.EnsembleSize, cfg.WriteQuorum, cfg.AckQuorum = p.BookkeeperEnsemble, p.BookkeeperWriteQuorum, p.BookkeeperAckQuorum
		if p.ManagedLedgerMaxMarkDeleteRate > 0 {
			cfg.MarkDeleteRateLimit = p.ManagedLedgerMaxMarkDeleteRate
		}
	}
	cfg.RetentionTime, cfg.RetentionSizeBytes = 0, 0
	if r := eff.retention; r != nil {
		cfg.RetentionTime = retentionValue(int64(r.RetentionTimeInMinutes), time.Minute)
		cfg.RetentionSizeBytes = retentionValue[int64](r.RetentionSizeInMB, 1<<20)
	}
	cfg.Offload, cfg.OffloadPolicies = eff.offload, eff.offloadPolicies
}

// logConfig is the managed-ledger config a topic's log opens with: the broker defaults
// with its policies applied, so even the first ledger has the namespace's persistence.
func (s *Service) logConfig(ctx context.Context, name Name) (managedledger.Config, error) {
	cfg := s.ledgers.DefaultConfig()
	eff, err := s.resolvePolicies(ctx, name)
	if err != nil {
		return cfg, err
	}
	s.policyLogConfig(&cfg, eff)
	return cfg, nil
}

// resolveOffload merges the offload policies: the topic's offloadPolicies over the
// namespace's offload_policies over its legacy offload_threshold(_in_seconds) and
// offload_deletion_lag_ms fields over the broker's keys (the factory's defaults). The
// merged policies go to the managed ledger too, whose factory picks the offloader of
// their driver settings over the broker's (managedledger/ml_offload.go:acquireOffloader).
func (s *Service) resolveOffload(ns *resources.Policies, tp *resources.TopicPolicies) (offload.Trigger, offload.Policies) {
	legacy := offload.Policies{ThresholdInBytes: ns.OffloadThreshold, ThresholdInSeconds: ns.OffloadThresholdInSeconds,
		DeletionLagInMillis: ns.OffloadDeletionLagMs}
	p := legacy
	if ns.OffloadPolicies != nil {
		p = (*offload.Policies)(ns.OffloadPolicies).Merge(p)
	}
	if tp.OffloadPolicies != nil {
		p = (*offload.Policies)(tp.OffloadPolicies).Merge(p)
	}
	t := s.ledgers.DefaultConfig().Offload
	if p.ThresholdInBytes != nil {
		t.ThresholdBytes = *p.ThresholdInBytes
	}
	if p.ThresholdInSeconds != nil {
		t.ThresholdSeconds = *p.ThresholdInSeconds
	}
	if p.DeletionLagInMillis != nil {
		t.DeletionLagMillis = *p.DeletionLagInMillis
	}
	if p.ReadPriority != nil && *p.ReadPriority != "" {
		t.ReadPriority = *p.ReadPriority
	}
	return t, p
}

// pokeSubscriptions wakes every subscription's dispatcher (a limit changed).
func (t *Topic) pokeSubscriptions() {
	t.mu.Lock()
	subs := make([]*Subscription, 0, len(t.subs))
	for _, s := range t.subs {
		subs = append(subs, s)
	}
	t.mu.Unlock()
	for _, s := range subs {
		s.poke()
	}
}

// maxUnackedPerConsumer / maxUnackedPerSubscription are the unacked-message limits in
// force (policy, else the broker's dynamic setting; 0: none). Read on the dispatch path.
func (t *Topic) maxUnackedPerConsumer() int {
	if v := t.pol.unackedConsumer.Load(); v > 0 {
		return int(v - 1)
	}
	return t.s.dyn.maxUnackedConsumer()
}

func (t *Topic) maxUnackedPerSubscription() int {
	if v := t.pol.unackedSub.Load(); v > 0 {
		return int(v - 1)
	}
	return t.s.dyn.maxUnackedSub()
}

// retentionValue maps Pulsar's retention number (-1 infinite, 0 none, n units) to the
// managed ledger's (-1 infinite, 0 unset, positive).
func retentionValue[T time.Duration | int64](n int64, unit T) T {
	switch {
	case n < 0:
		return -1
	case n == 0:
		return 0
	}
	return T(n) * unit
}

// admitProducer applies max producers and backlog quotas to a new producer. Caller does
// not hold t.mu.
func (t *Topic) admitProducer() error {
	eff := t.pol.get()
	t.mu.Lock()
	n := len(t.producers)
	t.mu.Unlock()
	if eff.maxProducers > 0 && n >= eff.maxProducers {
		return fmt.Errorf("%w: topic %s reached max producers %d", wire.ErrProducerBusy, t.full, eff.maxProducers)
	}
	t.pol.mu.Lock()
	exceeded := t.pol.quotaExceed
	t.pol.mu.Unlock()
	if exceeded {
		return quotaError(t, eff.quota.Policy)
	}
	return nil
}

func quotaError(t *Topic, p managedledger.BacklogQuotaPolicy) error {
	err := fmt.Errorf("%w on %s (policy %s)", wire.ErrQuotaExceeded, t.full, p)
	if p == managedledger.ProducerException {
		return err // ProducerBlockedQuotaExceededException: the client fails pending messages
	}
	return quotaHoldError{err}
}

// quotaHoldError is the producer_request_hold answer, ProducerBlockedQuotaExceededError:
// the client keeps its messages and retries.
type quotaHoldError struct{ error }

func (e quotaHoldError) ServerError() pb.ServerError {
	return pb.ServerError_ProducerBlockedQuotaExceededError
}
func (e quotaHoldError) Unwrap() error { return e.error }

// admitConsumerLocked applies reserved names, max consumers per topic and per
// subscription, and (for a subscription not yet attached) max subscriptions per topic.
// Caller holds t.mu.
func (t *Topic) admitConsumerLocked(sub string) error {
	if isSystemCursor(sub) {
		return fmt.Errorf("%w: subscription name %q is reserved", wire.ErrNotAllowed, sub)
	}
	eff := t.pol.get()
	if eff.maxConsumers > 0 {
		n := 0
		for _, s := range t.subs {
			n += len(s.consumersSnapshot())
		}
		if n >= eff.maxConsumers {
			return fmt.Errorf("%w: topic %s reached max consumers %d", wire.ErrConsumerBusy, t.full, eff.maxConsumers)
		}
	}
	if s := t.subs[sub]; s != nil {
		if eff.maxConsumersPerSub > 0 && len(s.consumersSnapshot()) >= eff.maxConsumersPerSub {
			return fmt.Errorf("%w: subscription %s of %s reached max consumers per subscription %d", wire.ErrConsumerBusy, sub, t.full, eff.maxConsumersPerSub)
		}
		return nil
	}
	return t.admitSubscriptionLocked(sub, eff)
}

// admitSubscriptionLocked applies max subscriptions per topic to a subscription about to
// be created or attached (Pulsar counts durable and non-durable ones; NotAllowed, as
// Pulsar's "Topic reached max subscriptions limit"). Caller holds t.mu.
func (t *Topic) admitSubscriptionLocked(sub string, eff effectivePolicies) error {
	if eff.maxSubscriptions <= 0 {
		return nil
	}
	names := make(map[string]struct{}, len(t.subs))
	for n := range t.subs {
		names[n] = struct{}{}
	}
	if t.log != nil {
		for _, c := range t.log.ml.Cursors() {
			if !isSystemCursor(c.Name()) {
				names[c.Name()] = struct{}{}
			}
		}
	}
	if _, ok := names[sub]; ok {
		return nil // a stored durable subscription being attached again
	}
	if len(names) >= eff.maxSubscriptions {
		return fmt.Errorf("%w: topic %s reached max subscriptions limit %d", wire.ErrNotAllowed, t.full, eff.maxSubscriptions)
	}
	return nil
}

// checkTopicQuota applies max topics per namespace to the creation of n topics (a
// partitioned topic counts its partitions), Pulsar's "Exceed maximum number of topics in
// namespace".
func (s *Service) checkTopicQuota(ctx context.Context, name Name, n int) error {
	max := s.cfg.Policies.MaxTopicsPerNamespace
	ns, err := s.res.Namespace(ctx, name.Tenant, name.Namespace)
	if err != nil && !errors.Is(err, resources.ErrNotFound) {
		return fmt.Errorf("%w: policies of %s: %w", wire.ErrMetadata, name.NamespaceName(), err)
	}
	if ns.MaxTopicsPerNamespace != nil {
		max = *ns.MaxTopicsPerNamespace
	}
	if max <= 0 {
		return nil
	}
	have, err := s.ListTopics(ctx, name.NamespaceName(), "")
	if err != nil {
		return err
	}
	if len(have)+n > max {
		return fmt.Errorf("%w: Exceed maximum number of topics in namespace %s (%d)", wire.ErrNotAllowed, name.NamespaceName(), max)
	}
	return nil
}

// checkTopic runs the periodic policies of one topic: TTL, backlog quota, dedup snapshot.
func (s *Service) checkTopic(ctx context.Context, t *Topic) {
	l := t.log
	if l == nil {
		return
	}
	eff := t.pol.get()
	t.dedup.tick()
	if eff.ttl > 0 {
		var expired int64
		for _, c := range l.ml.Cursors() {
			if isSystemCursor(c.Name()) {
				continue
			}
			n, err := c.ExpireMessages(ctx, eff.ttl, entryPublishTime)
			if err != nil && !errors.Is(err, managedledger.ErrClosed) {
				t.logg.Warn("message TTL check failed", "cursor", c.Name(), "err", err)
			}
			expired += n
		}
		if expired > 0 {
			t.logg.Info("expired messages past the TTL", "entries", expired, "ttl", eff.ttl)
		}
	}
	q := eff.quota
	if q.LimitBytes <= 0 && q.LimitTime <= 0 {
		t.setQuotaExceeded(false)
		return
	}
	// The deduplication cursor lags by at most one snapshot interval; bring it up to date so
	// its lag never counts as backlog.
	if err := t.dedup.snapshotSync(); err != nil {
		t.logg.Debug("deduplication snapshot before the quota check failed", "err", err)
	}
	res, err := l.ml.Retention().CheckBacklogQuota(ctx, q)
	if err != nil {
		t.logg.Warn("backlog quota check failed", "err", err)
		return
	}
	exceeded := res.Exceeded() && q.Policy != managedledger.ConsumerBacklogEviction
	if exceeded && t.setQuotaExceeded(true) {
		t.logg.Warn("backlog quota exceeded; disconnecting producers", "policy", q.Policy,
			"backlog_bytes", res.BacklogBytes, "oldest", res.OldestBacklogAge)
		t.disconnectProducers()
	} else if !exceeded && t.setQuotaExceeded(false) {
		t.logg.Info("backlog quota no longer exceeded; producers admitted again")
	}
}

// setQuotaExceeded records the verdict and tells whether it changed.
func (t *Topic) setQuotaExceeded(v bool) bool {
	t.pol.mu.Lock()
	defer t.pol.mu.Unlock()
	changed := t.pol.quotaExceed != v
	t.pol.quotaExceed = v
	return changed
}

// policyManager runs the watches and the periodic checker of a Server.
type policyManager struct {
	s      *Service
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{} // run a check now (tests, policy changes)
}

func startPolicies(s *Service) *policyManager {
	ctx, cancel := context.WithCancel(context.Background())
	pm := &policyManager{s: s, cancel: cancel, kick: make(chan struct{}, 1)}
	pm.wg.Add(4)
	go pm.watch(ctx, resources.PoliciesPrefix)
	go pm.watch(ctx, resources.TopicPoliciesRoot+"/")
	go pm.checker(ctx)
	go pm.compactionMonitor(ctx) // compaction_monitor.go
	return pm
}

func (pm *policyManager) stop() {
	pm.cancel()
	pm.wg.Wait()
}

// watch re-applies policies of loaded topics under changed keys, re-watching when the
// store drops the watch.
func (pm *policyManager) watch(ctx context.Context, prefix string) {
	defer pm.wg.Done()
	log := pm.s.log.With("watch", prefix)
	for ctx.Err() == nil {
		ch, err := pm.s.store.Watch(ctx, prefix, true)
		if err != nil {
			if !errors.Is(err, metadata.ErrClosed) && ctx.Err() == nil {
				log.Warn("watching policies failed; retrying", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range ch {
			pm.changed(ctx, strings.TrimPrefix(ev.Key, prefix))
		}
	}
}

// changed re-applies the policies of loaded topics under rel, which is
// "tenant/ns" (namespace policies) or "tenant/ns/domain/topic" (topic policies).
func (pm *policyManager) changed(ctx context.Context, rel string) {
	parts := strings.Split(rel, "/")
	if len(parts) != 2 && len(parts) != 4 {
		return // a tenant record or something else
	}
	for _, t := range pm.s.LoadedTopics() {
		if t.log == nil || t.name.Tenant != parts[0] || t.name.Namespace != parts[1] {
			continue
		}
		if len(parts) == 4 && (t.name.Domain != parts[2] || t.name.Base().Local != parts[3]) {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, opTimeout)
		if err := pm.s.applyPolicies(actx, t); err != nil && ctx.Err() == nil {
			t.logg.Warn("applying changed policies failed", "err", err)
		}
		cancel()
	}
	select {
	case pm.kick <- struct{}{}:
	default:
	}
}

func (pm *policyManager) interval() time.Duration {
	pc := pm.s.cfg.Policies
	if pc.PolicyCheckIntervalSeconds > 0 {
		return time.Duration(pc.PolicyCheckIntervalSeconds) * time.Second
	}
	return min(time.Duration(pc.MessageExpiryCheckIntervalInMinutes)*time.Minute,
		time.Duration(pc.BacklogQuotaCheckIntervalInSeconds)*time.Second)
}

func (pm *policyManager) checker(ctx context.Context) {
	defer pm.wg.Done()
	tick := time.NewTicker(pm.interval())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-pm.kick:
		}
		for _, t := range pm.s.LoadedTopics() {
			if t.log == nil {
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, opTimeout)
			pm.s.checkTopic(cctx, t)
			cancel()
		}
	}
}

// dropTopicPolicies removes the topic-level policies of a deleted topic, so a topic created
// later under the same name starts from its namespace's policies. Partitions share their
// partitioned topic's record, which goes with the partitioned topic.
func (s *Service) dropTopicPolicies(ctx context.Context, name Name) error {
	if name.Partition >= 0 {
		return nil
	}
	if err := resources.New(s.store).DeleteTopicPolicies(ctx, name.Domain, name.Tenant, name.Namespace, name.Local); err != nil {
		return fmt.Errorf("%w: delete policies of %s: %w", wire.ErrMetadata, name, err)
	}
	return nil
}

// DeduplicationEnabled tells whether message deduplication is in force on the topic (its
// policies resolved: topic over namespace over brokerDeduplicationEnabled).
func (t *Topic) DeduplicationEnabled() bool { return t.pol.get().dedup }
