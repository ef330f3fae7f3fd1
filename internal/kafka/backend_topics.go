package kafka

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/ownership"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/txn"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// TopicsBackend is the production Backend: the topic service (logs, topic lifecycle),
// resources (group records, producer ids, topic settings) and, in a cluster, bundle
// ownership (which broker leads a partition or coordinates a group). Offsets are the topic
// service's message indexes (PIP-70 broker entry metadata, topics/index.go); a group's
// committed offset on a partition is its durable subscription there (named after the
// group), so Pulsar's backlog, retention and stats see Kafka groups.
type TopicsBackend struct {
	svc *topics.Service
	res *resources.Resources
	// own is bundle ownership in a cluster (nil: standalone, this broker serves all).
	own *ownership.Manager
	// self is this broker as Kafka clients reach it (the advertised Kafka listener).
	self Node
	// offsetsTopics is how many coordinator keys groups hash to (the bundles of
	// persistent://{kafkaTenant}/{kafkaNamespace}/__consumer_offsets-<i> decide who
	// coordinates).
	offsetsTopics int
	tenant, ns    string
	// maxMetadata bounds a commit's metadata string (kafkaOffsetMetadataMaxBytes).
	maxMetadata int
	// txns are the broker's transaction coordinators (nil: transactions off).
	txns *txn.Coordinators
}

// TopicsBackendOptions configure NewTopicsBackend.
type TopicsBackendOptions struct {
	Topics    *topics.Service
	Resources *resources.Resources
	// Ownership is the cluster's bundle ownership (nil: standalone).
	Ownership *ownership.Manager
	// Advertised is this broker's advertised Kafka address (host:port).
	Advertised string
	// Tenant and Namespace hold the group coordinator keys (kafkaTenant, kafkaNamespace).
	Tenant, Namespace string
	// OffsetMetadataMaxBytes bounds a commit's metadata (kafkaOffsetMetadataMaxBytes; 0: 512).
	OffsetMetadataMaxBytes int
	// Transactions are the broker's transaction coordinators, the ones Pulsar
	// transactions use (nil: transactionCoordinatorEnabled off, Kafka transactions refused).
	Transactions *txn.Coordinators
}

// NewTopicsBackend builds the backend; NodeID is the node id this broker must be given in
// kafka.Options.
func NewTopicsBackend(o TopicsBackendOptions) (*TopicsBackend, error) {
	host, port, err := net.SplitHostPort(o.Advertised)
	if err != nil {
		return nil, fmt.Errorf("kafka: advertised address %q: %w", o.Advertised, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("kafka: advertised port %q: %w", port, err)
	}
	b := &TopicsBackend{svc: o.Topics, res: o.Resources, own: o.Ownership, offsetsTopics: 50,
		tenant: o.Tenant, ns: o.Namespace, maxMetadata: cmp.Or(o.OffsetMetadataMaxBytes, 512), txns: o.Transactions}
	b.self = Node{ID: b.nodeOf(b.selfKey()), Host: host, Port: int32(p)}
	return b, nil
}

// NodeID is this broker's Kafka node id.
func (b *TopicsBackend) NodeID() int32 { return b.self.ID }

// selfKey is the broker's registration key (host:port of its Pulsar URL); standalone has
// one broker and node id 0.
func (b *TopicsBackend) selfKey() string {
	if b.own == nil {
		return ""
	}
	return hostOf(b.own.Self().NativeURL)
}

// nodeOf maps a broker's registration key to its Kafka node id: a hash, so every broker
// derives the same id for each without coordination (0 for standalone).
func (b *TopicsBackend) nodeOf(key string) int32 {
	if key == "" {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int32(h.Sum32() & 0x7fffffff)
}

func hostOf(u string) string {
	if pu, err := url.Parse(u); err == nil && pu.Host != "" {
		return pu.Host
	}
	return u
}

func parseTopic(full string) (topics.Name, error) {
	n, err := topics.ParseName(full)
	if err != nil {
		return n, fmt.Errorf("%w: %s: %w", ErrInvalidTopic, full, err)
	}
	return n, nil
}

// Partitions implements Backend.
func (b *TopicsBackend) Partitions(ctx context.Context, full string) (int, error) {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	n, err := parseTopic(full)
	if err != nil {
		return 0, err
	}
	parts, err := b.svc.Partitions(ctx, n)
	if err == nil {
		return parts, nil
	}
	if !errors.Is(err, resources.ErrNotFound) {
		return 0, err
	}
	ok, err := b.svc.TopicExists(ctx, n)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("%w: %s", ErrUnknownTopic, full)
	}
	return 0, nil
}

// CreateTopic implements Backend.
func (b *TopicsBackend) CreateTopic(ctx context.Context, full string, n int, configs map[string]string) error {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	name, err := parseTopic(full)
	if err != nil {
		return err
	}
	if err := b.svc.CheckNamespace(ctx, name); err != nil {
		return err
	}
	if _, err := b.Partitions(ctx, full); err == nil {
		return fmt.Errorf("%w: %s", ErrTopicExists, full)
	}
	if err := b.svc.CreateTopic(ctx, name, n); err != nil {
		if errors.Is(err, resources.ErrAlreadyExists) {
			return fmt.Errorf("%w: %s", ErrTopicExists, full)
		}
		return err
	}
	if len(configs) == 0 {
		return nil
	}
	set := map[string]*string{}
	for k, v := range configs {
		set[k] = &v
	}
	return b.SetConfigs(ctx, full, set)
}

// DeleteTopic implements Backend: every partition, then the partitioned topic's record,
// and the DeleteRecords marks of its partitions.
func (b *TopicsBackend) DeleteTopic(ctx context.Context, full string) error {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	name, err := parseTopic(full)
	if err != nil {
		return err
	}
	n, err := b.Partitions(ctx, full)
	if err != nil {
		return err
	}
	if n == 0 {
		if err := b.svc.DeleteTopic(ctx, name, true); err != nil {
			return err
		}
		return b.res.DeleteKafkaLogStart(ctx, full)
	}
	for i := 0; i < n; i++ {
		p := name.PartitionName(i)
		if err := b.svc.DeleteTopic(ctx, p, true); err != nil && !errors.Is(err, wire.ErrTopicNotFound) {
			return err
		}
		if err := b.res.DeleteKafkaLogStart(ctx, p.String()); err != nil {
			return err
		}
	}
	return b.res.DeletePartitionedTopic(ctx, name.Domain, name.Tenant, name.Namespace, name.Local)
}

// AddPartitions implements Backend.
func (b *TopicsBackend) AddPartitions(ctx context.Context, full string, n int) error {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	name, err := parseTopic(full)
	if err != nil {
		return err
	}
	err = b.res.UpdatePartitionedTopic(ctx, name.Domain, name.Tenant, name.Namespace, name.Local, func(m *resources.PartitionedTopicMetadata) error {
		if n <= m.Partitions {
			return fmt.Errorf("%w: %s has %d partitions; it can only grow", ErrInvalidPartitions, full, m.Partitions)
		}
		m.Partitions = n
		return nil
	})
	if errors.Is(err, resources.ErrNotFound) {
		return fmt.Errorf("%w: %s is not partitioned: its partition count cannot change", ErrInvalidPartitions, full)
	}
	return err
}

// ListTopics implements Backend: the persistent topics of every namespace, partitions
// folded into their topic.
func (b *TopicsBackend) ListTopics(ctx context.Context) ([]string, error) {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	tenants, err := b.res.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, t := range tenants {
		nss, err := b.res.Namespaces(ctx, t)
		if err != nil {
			return nil, err
		}
		for _, ns := range nss {
			if !strings.Contains(ns, "/") {
				ns = t + "/" + ns
			}
			ts, err := b.svc.ListTopics(ctx, ns, topics.DomainPersistent)
			if err != nil {
				return nil, err
			}
			for _, full := range ts {
				n, err := topics.ParseName(full)
				if err != nil {
					continue
				}
				seen[n.Base().String()] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	slices.Sort(out)
	return out, nil
}

// NamespaceExists implements Backend.
func (b *TopicsBackend) NamespaceExists(ctx context.Context, tenant, namespace string) bool {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	_, err := b.res.Namespace(ctx, tenant, namespace)
	return err == nil
}

// AutoCreate implements Backend: the broker's (or the namespace's) auto-creation policy.
// A non-partitioned policy gives Kafka clients a topic of one partition.
func (b *TopicsBackend) AutoCreate(ctx context.Context, tenant, namespace string) (bool, int) {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	return b.svc.AutoCreation(ctx, topics.Name{Domain: topics.DomainPersistent, Tenant: tenant, Namespace: namespace, Local: "x", Partition: -1})
}

// Brokers implements Backend: this broker in standalone, else every live broker that
// registered a Kafka listener.
func (b *TopicsBackend) Brokers(ctx context.Context) ([]Node, error) {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	if b.own == nil {
		return []Node{b.self}, nil
	}
	live, err := b.own.LiveBrokers(ctx)
	if err != nil {
		return nil, err
	}
	out := []Node{b.self}
	for key, info := range live {
		id := b.nodeOf(key)
		if id == b.self.ID {
			continue
		}
		if n, ok := nodeFromListener(id, info.Protocols["kafka"]); ok {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, c Node) int { return int(a.ID) - int(c.ID) })
	return out, nil
}

// nodeFromListener parses a registered "PLAINTEXT://host:port".
func nodeFromListener(id int32, listener string) (Node, bool) {
	_, addr, ok := strings.Cut(listener, "://")
	if !ok {
		return Node{}, false
	}
	host, port, err := net.SplitHostPort(addr)
	p, perr := strconv.Atoi(port)
	if err != nil || perr != nil {
		return Node{}, false
	}
	return Node{ID: id, Host: host, Port: int32(p)}, true
}

// Leader implements Backend: the owner of the partition's bundle (assigned now if free).
func (b *TopicsBackend) Leader(ctx context.Context, partition string) (int32, error) {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	if b.own == nil {
		return b.self.ID, nil
	}
	r, err := b.own.Lookup(ctx, partition, false)
	if err != nil {
		return -1, fmt.Errorf("%w: looking up %s: %w", ErrLeaderNotAvailable, partition, err)
	}
	if r.Self {
		return b.self.ID, nil
	}
	return b.nodeOf(hostOf(r.BrokerURL)), nil
}

// Coordinator implements Backend: the owner of the bundle of the key's offsets topic.
func (b *TopicsBackend) Coordinator(ctx context.Context, key string) (int32, error) {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	if b.own == nil {
		return b.self.ID, nil
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	topic := fmt.Sprintf("persistent://%s/%s/__consumer_offsets-%d", b.tenant, b.ns, h.Sum32()%uint32(b.offsetsTopics))
	id, err := b.Leader(ctx, topic)
	if err != nil {
		return -1, fmt.Errorf("%w: %w", ErrNotCoordinator, err)
	}
	return id, nil
}

// Open implements Backend.
func (b *TopicsBackend) Open(ctx context.Context, partition string) (Log, error) {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	name, err := parseTopic(partition)
	if err != nil {
		return nil, err
	}
	t, err := b.svc.Topic(ctx, name, topics.Load{Create: true})
	if err != nil {
		return nil, err
	}
	return openTopicLog(ctx, b, t)
}

// TxnCoordinator implements Backend: coordinator fnv32(id) % count, served by the owner of
// its partition of the assign topic (as for Pulsar clients).
func (b *TopicsBackend) TxnCoordinator(ctx context.Context, id string) (*txn.Coordinator, int32, error) {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	if b.txns == nil {
		return nil, -1, errTxnsOff
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	tc := uint64(h.Sum32() % uint32(b.txns.Count()))
	node, err := b.Leader(ctx, txn.AssignPartition(tc))
	if err != nil {
		return nil, -1, fmt.Errorf("%w: %w", kerr.CoordinatorNotAvailable, err)
	}
	if node != b.self.ID {
		return nil, node, nil
	}
	c, err := b.txns.Get(ctx, tc)
	if err != nil {
		return nil, -1, fmt.Errorf("%w: transaction coordinator %d: %w", kerr.CoordinatorLoadInProgress, tc, err)
	}
	return c, node, nil
}

// TxnProducer implements Backend.
func (b *TopicsBackend) TxnProducer(ctx context.Context, id string) (resources.KafkaTxnProducer, metadata.Version, error) {
	return b.res.KafkaTxnProducer(ctx, id)
}

// PutTxnProducer implements Backend.
func (b *TopicsBackend) PutTxnProducer(ctx context.Context, id string, p resources.KafkaTxnProducer, ver metadata.Version) (metadata.Version, error) {
	return b.res.PutKafkaTxnProducer(ctx, id, p, ver)
}

// ClientQuotas implements Backend.
func (b *TopicsBackend) ClientQuotas(ctx context.Context) ([]resources.KafkaQuota, error) {
	return b.res.KafkaQuotas(ctx)
}

// UpdateClientQuota implements Backend.
func (b *TopicsBackend) UpdateClientQuota(ctx context.Context, key string, modify func(*resources.KafkaQuota) error) error {
	return b.res.UpdateKafkaQuota(ctx, key, modify)
}

// TxnProducers implements Backend.
func (b *TopicsBackend) TxnProducers(ctx context.Context) ([]string, error) {
	return b.res.KafkaTxnProducers(ctx)
}

// NextProducerID implements Backend.
func (b *TopicsBackend) NextProducerID(ctx context.Context) (int64, error) {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	return b.res.NextKafkaProducerIDs(ctx, 1)
}

// Cursor property names of a group's subscription.
const (
	propOffset   = "kafka.offset"
	propCommitMs = "kafka.commit.ms"
	// Metadata is kept as its length and 8-byte chunks (cursor properties are numbers).
	propMetadataLen = "kafka.metadata.len"
	propMetadata    = "kafka.metadata."
)

// loaded returns the loaded topic of partition on this broker (loading it if needed).
func (b *TopicsBackend) loaded(ctx context.Context, partition string) (*topics.Topic, error) {
	name, err := parseTopic(partition)
	if err != nil {
		return nil, err
	}
	return b.svc.Topic(ctx, name, topics.Load{Create: false})
}

// CommitOffset implements Backend. On a partition this broker serves, the group's
// subscription is moved so that everything before the entry holding offset is consumed (an
// entry partly consumed stays in the backlog), and the exact offset, metadata and commit
// time become its cursor properties. A partition another broker owns (the group's
// coordinator is not always its leader) gets a metadata-store record instead
// (resources.KafkaOffset); reads take the newer of the two.
func (b *TopicsBackend) CommitOffset(ctx context.Context, partition, group string, offset int64, md string) error {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	if len(md) > b.maxMetadata {
		return fmt.Errorf("%w: offset metadata of %d bytes (at most %d, kafkaOffsetMetadataMaxBytes)", ErrOffsetMetadataTooBig, len(md), b.maxMetadata)
	}
	now := time.Now().UnixMilli()
	t, err := b.loaded(ctx, partition)
	if isRemote(err) {
		return b.res.PutKafkaOffset(ctx, group, partition, resources.KafkaOffset{Offset: offset, Metadata: md, CommitMs: now})
	}
	if err != nil {
		return err
	}
	pos, err := t.SearchIndex(ctx, offset)
	if err != nil {
		return err
	}
	markDelete := topics.Position{LedgerID: pos.LedgerID, EntryID: pos.EntryID - 1}
	if lc := t.LastConfirmed(); offset >= t.HighWatermark() && lc.EntryID >= 0 {
		// Everything is consumed. The search's "after the last entry" may be the start of
		// a ledger that holds nothing yet (after a restart or a rollover), which is beyond
		// the last confirmed entry: mark-delete that entry instead.
		markDelete = lc
	}
	props := map[string]int64{propOffset: offset, propCommitMs: now}
	if md != "" {
		props[propMetadataLen] = int64(len(md))
		for i := 0; i < len(md); i += 8 {
			var v int64
			for j := 0; j < 8 && i+j < len(md); j++ {
				v |= int64(md[i+j]) << (8 * j)
			}
			props[propMetadata+strconv.Itoa(i/8)] = v
		}
	}
	return t.CommitSubscription(ctx, group, markDelete, props)
}

// StoreOffset implements Backend.
func (b *TopicsBackend) StoreOffset(ctx context.Context, partition, group string, offset int64, md string) error {
	if len(md) > b.maxMetadata {
		return fmt.Errorf("%w: offset metadata of %d bytes (at most %d, kafkaOffsetMetadataMaxBytes)", ErrOffsetMetadataTooBig, len(md), b.maxMetadata)
	}
	return b.res.PutKafkaOffset(ctx, group, partition, resources.KafkaOffset{Offset: offset, Metadata: md, CommitMs: time.Now().UnixMilli()})
}

// isRemote tells whether loading a partition failed because another broker owns it.
func isRemote(err error) bool { return err != nil && errors.Is(err, wire.ErrServiceNotReady) }

// CommittedOffset implements Backend.
func (b *TopicsBackend) CommittedOffset(ctx context.Context, partition, group string) (int64, string, bool, error) {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	rec, rerr := b.res.KafkaOffset(ctx, group, partition)
	if rerr != nil && !errors.Is(rerr, resources.ErrNotFound) {
		return 0, "", false, rerr
	}
	haveRec := rerr == nil
	t, err := b.loaded(ctx, partition)
	switch {
	case isRemote(err) || errors.Is(err, wire.ErrTopicNotFound):
		return rec.Offset, rec.Metadata, haveRec, nil
	case err != nil:
		return 0, "", false, err
	}
	off, md, commitMs, ok := cursorCommit(t, group, b.maxMetadata)
	if haveRec && (!ok || rec.CommitMs > commitMs) {
		return rec.Offset, rec.Metadata, true, nil
	}
	return off, md, ok, nil
}

// cursorCommit reads a commit from the group's subscription's cursor properties.
func cursorCommit(t *topics.Topic, group string, maxMetadata int) (offset int64, md string, commitMs int64, ok bool) {
	_, props, ok := t.SubscriptionState(group)
	if !ok {
		return 0, "", 0, false
	}
	off, ok := props[propOffset]
	if !ok {
		// A Pulsar subscription of the same name: not a Kafka commit.
		return 0, "", 0, false
	}
	n := int(props[propMetadataLen])
	if n <= 0 || n > maxMetadata {
		return off, "", props[propCommitMs], true
	}
	buf := make([]byte, n)
	for i := 0; i < n; i++ {
		buf[i] = byte(props[propMetadata+strconv.Itoa(i/8)] >> (8 * (i % 8)))
	}
	return off, string(buf), props[propCommitMs], true
}

// DeleteOffset implements Backend.
func (b *TopicsBackend) DeleteOffset(ctx context.Context, partition, group string) error {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	name, err := parseTopic(partition)
	if err != nil {
		return err
	}
	if err := b.res.DeleteKafkaOffset(ctx, group, partition); err != nil {
		return err
	}
	err = b.svc.DeleteSubscription(ctx, name, group, true)
	if errors.Is(err, wire.ErrSubscriptionNotFound) || errors.Is(err, wire.ErrTopicNotFound) || isRemote(err) {
		return nil
	}
	return err
}

// SaveGroup implements Backend (the record is groups.go's groupRecord, the same JSON as
// resources.KafkaGroupRecord).
func (b *TopicsBackend) SaveGroup(ctx context.Context, group string, data []byte) error {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	var rec resources.KafkaGroupRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return fmt.Errorf("kafka: group %q record: %w", group, err)
	}
	return b.res.PutKafkaGroup(ctx, group, rec)
}

// LoadGroup implements Backend.
func (b *TopicsBackend) LoadGroup(ctx context.Context, group string) ([]byte, error) {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	rec, err := b.res.KafkaGroup(ctx, group)
	if errors.Is(err, resources.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(rec)
}

// ListGroups implements Backend.
func (b *TopicsBackend) ListGroups(ctx context.Context) ([]string, error) {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	return b.res.KafkaGroups(ctx)
}

// DeleteGroup implements Backend.
func (b *TopicsBackend) DeleteGroup(ctx context.Context, group string) error {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	if err := b.res.DeleteKafkaGroup(ctx, group); err != nil && !errors.Is(err, resources.ErrNotFound) {
		return err
	}
	return nil
}

// ScramUser implements Backend.
func (b *TopicsBackend) ScramUser(ctx context.Context, user string) (map[string]resources.KafkaScramCredential, error) {
	u, err := b.res.KafkaScramUser(ctx, user)
	if errors.Is(err, resources.ErrNotFound) {
		return map[string]resources.KafkaScramCredential{}, nil
	}
	return u.Credentials, err
}

// ScramUsers implements Backend.
func (b *TopicsBackend) ScramUsers(ctx context.Context) ([]string, error) {
	return b.res.KafkaScramUsers(ctx)
}

// UpdateScramUser implements Backend.
func (b *TopicsBackend) UpdateScramUser(ctx context.Context, user string, modify func(map[string]resources.KafkaScramCredential) error) error {
	return b.res.UpdateKafkaScramUser(ctx, user, func(u *resources.KafkaScramUser) error { return modify(u.Credentials) })
}

// configProp is the topic property holding a Kafka topic config as it was set.
const configProp = "kafka."

// Configs implements Backend: the settings as set, kept as properties of the topic's
// record.
func (b *TopicsBackend) Configs(ctx context.Context, full string) (map[string]string, error) {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	name, err := parseTopic(full)
	if err != nil {
		return nil, err
	}
	props, err := b.properties(ctx, name, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range props {
		if c, ok := strings.CutPrefix(k, configProp); ok {
			out[c] = v
		}
	}
	return out, nil
}

// SetConfigs implements Backend: the values go into the topic's record; retention.ms and
// retention.bytes also become the topic's retention policy, which is what enforces them.
func (b *TopicsBackend) SetConfigs(ctx context.Context, full string, set map[string]*string) error {
	ctx = topics.Internal(ctx) // authorized by the front end (sasl.go)
	name, err := parseTopic(full)
	if err != nil {
		return err
	}
	props, err := b.properties(ctx, name, func(p map[string]string) {
		for k, v := range set {
			if v == nil {
				delete(p, configProp+k)
			} else {
				p[configProp+k] = *v
			}
		}
	})
	if err != nil {
		return err
	}
	_, hasMs := set["retention.ms"]
	_, hasBytes := set["retention.bytes"]
	if !hasMs && !hasBytes {
		return nil
	}
	ms, msSet := props[configProp+"retention.ms"]
	by, bySet := props[configProp+"retention.bytes"]
	return b.res.UpdateTopicPolicies(ctx, name.Domain, name.Tenant, name.Namespace, name.Local, func(p *resources.TopicPolicies) error {
		if !msSet && !bySet {
			p.RetentionPolicies = nil
			return nil
		}
		rp := resources.RetentionPolicies{RetentionTimeInMinutes: -1, RetentionSizeInMB: -1}
		if p.RetentionPolicies != nil {
			rp = *p.RetentionPolicies
		}
		if msSet {
			rp.RetentionTimeInMinutes = -1
			if v, _ := strconv.ParseInt(ms, 10, 64); v >= 0 {
				rp.RetentionTimeInMinutes = int((time.Duration(v)*time.Millisecond + time.Minute - 1) / time.Minute)
			}
		}
		if bySet {
			rp.RetentionSizeInMB = -1
			if v, _ := strconv.ParseInt(by, 10, 64); v >= 0 {
				rp.RetentionSizeInMB = (v + (1<<20 - 1)) >> 20
			}
		}
		p.RetentionPolicies = &rp
		return nil
	})
}

// properties returns (and with modify, changes) the properties of a topic's record: the
// partitioned topic's metadata or the non-partitioned topic's record.
func (b *TopicsBackend) properties(ctx context.Context, name topics.Name, modify func(map[string]string)) (map[string]string, error) {
	var out map[string]string
	apply := func(p map[string]string) map[string]string {
		if p == nil {
			p = map[string]string{}
		}
		if modify != nil {
			modify(p)
		}
		out = p
		return p
	}
	err := b.res.UpdatePartitionedTopic(ctx, name.Domain, name.Tenant, name.Namespace, name.Local, func(m *resources.PartitionedTopicMetadata) error {
		m.Properties = apply(m.Properties)
		if modify == nil {
			return errNoChange
		}
		return nil
	})
	if errors.Is(err, resources.ErrNotFound) {
		err = b.res.UpdateTopic(ctx, name.Domain, name.Tenant, name.Namespace, name.Local, func(rec *resources.TopicRecord) error {
			rec.Properties = apply(rec.Properties)
			if modify == nil {
				return errNoChange
			}
			return nil
		})
	}
	switch {
	case errors.Is(err, errNoChange):
		return out, nil
	case errors.Is(err, resources.ErrNotFound):
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	return out, err
}

// errNoChange aborts a read-modify-write that only reads.
var errNoChange = errors.New("kafka: no change")
