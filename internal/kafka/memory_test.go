package kafka

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/txn"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// memBackend is the in-memory twin of the topic-service backend, for tests of this layer
// only (the real one is exercised by the end-to-end tests).
type memBackend struct {
	mu      sync.Mutex
	host    string
	port    int32
	topics  map[string]int // full name -> partitions (0: non-partitioned)
	logs    map[string]*memLog
	offsets map[string]map[string][2]string // partition -> group -> {offset, metadata}
	groups  map[string][]byte
	configs map[string]map[string]string
	nextPID int64
	auto    bool
	scram   map[string]map[string]resources.KafkaScramCredential
}

func newMemBackend() *memBackend {
	return &memBackend{topics: map[string]int{}, logs: map[string]*memLog{}, offsets: map[string]map[string][2]string{},
		groups: map[string][]byte{}, configs: map[string]map[string]string{}, auto: true,
		scram: map[string]map[string]resources.KafkaScramCredential{}}
}

func (b *memBackend) Partitions(_ context.Context, full string) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ok := b.topics[full]
	if !ok {
		return 0, fmt.Errorf("%w: %s", wire.ErrTopicNotFound, full)
	}
	return n, nil
}

func (b *memBackend) CreateTopic(_ context.Context, full string, n int, cfg map[string]string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.topics[full]; ok {
		return fmt.Errorf("%w: %s", ErrTopicExists, full)
	}
	b.topics[full] = n
	b.configs[full] = cfg
	return nil
}

func (b *memBackend) DeleteTopic(_ context.Context, full string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.topics[full]; !ok {
		return fmt.Errorf("%w: %s", wire.ErrTopicNotFound, full)
	}
	delete(b.topics, full)
	for name := range b.logs {
		if name == full || strings.HasPrefix(name, full+partitionSuffix) {
			delete(b.logs, name)
		}
	}
	return nil
}

func (b *memBackend) AddPartitions(_ context.Context, full string, n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.topics[full] = n
	return nil
}

func (b *memBackend) ListTopics(context.Context) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for t := range b.topics {
		out = append(out, t)
	}
	return out, nil
}

func (b *memBackend) NamespaceExists(_ context.Context, tenant, ns string) bool {
	return tenant == "public" && ns == "default" || tenant == "other" && ns == "ns"
}

func (b *memBackend) AutoCreate(context.Context, string, string) (bool, int) { return b.auto, 1 }

func (b *memBackend) Brokers(context.Context) ([]Node, error) {
	return []Node{{ID: 0, Host: b.host, Port: b.port}}, nil
}
func (b *memBackend) Leader(context.Context, string) (int32, error)      { return 0, nil }
func (b *memBackend) Coordinator(context.Context, string) (int32, error) { return 0, nil }

func (b *memBackend) Open(_ context.Context, name string) (Log, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.logs[name]
	if l == nil {
		l = &memLog{wake: make(chan struct{})}
		b.logs[name] = l
	}
	return l, nil
}

func (b *memBackend) StoreOffset(ctx context.Context, partition, group string, offset int64, md string) error {
	return b.CommitOffset(ctx, partition, group, offset, md)
}

// The in-memory twin has no transaction coordinator (txn_test.go runs on the topic service).
func (b *memBackend) TxnCoordinator(context.Context, string) (*txn.Coordinator, int32, error) {
	return nil, -1, errTxnsOff
}

func (b *memBackend) TxnProducer(context.Context, string) (resources.KafkaTxnProducer, metadata.Version, error) {
	return resources.KafkaTxnProducer{}, 0, resources.ErrNotFound
}

func (b *memBackend) PutTxnProducer(context.Context, string, resources.KafkaTxnProducer, metadata.Version) (metadata.Version, error) {
	return 0, errTxnsOff
}

// The in-memory twin keeps no quotas (quotas_test.go runs on the topic service).
func (b *memBackend) ClientQuotas(context.Context) ([]resources.KafkaQuota, error) { return nil, nil }
func (b *memBackend) UpdateClientQuota(context.Context, string, func(*resources.KafkaQuota) error) error {
	return nil
}

func (b *memBackend) TxnProducers(context.Context) ([]string, error) { return nil, nil }

func (b *memBackend) NextProducerID(context.Context) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextPID++
	return b.nextPID, nil
}

func (b *memBackend) CommitOffset(_ context.Context, partition, group string, offset int64, md string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.offsets[partition] == nil {
		b.offsets[partition] = map[string][2]string{}
	}
	b.offsets[partition][group] = [2]string{strconv.FormatInt(offset, 10), md}
	return nil
}

func (b *memBackend) CommittedOffset(_ context.Context, partition, group string) (int64, string, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.offsets[partition][group]
	if !ok {
		return 0, "", false, nil
	}
	off, _ := strconv.ParseInt(v[0], 10, 64)
	return off, v[1], true, nil
}

func (b *memBackend) DeleteOffset(_ context.Context, partition, group string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.offsets[partition], group)
	return nil
}

func (b *memBackend) SaveGroup(_ context.Context, g string, data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.groups[g] = data
	return nil
}

func (b *memBackend) LoadGroup(_ context.Context, g string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.groups[g], nil
}

func (b *memBackend) ListGroups(context.Context) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for g := range b.groups {
		out = append(out, g)
	}
	return out, nil
}

func (b *memBackend) DeleteGroup(_ context.Context, g string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.groups, g)
	return nil
}

func (b *memBackend) ScramUser(_ context.Context, user string) (map[string]resources.KafkaScramCredential, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.scram[user]), nil
}

func (b *memBackend) ScramUsers(context.Context) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Sorted(maps.Keys(b.scram)), nil
}

func (b *memBackend) UpdateScramUser(_ context.Context, user string, modify func(map[string]resources.KafkaScramCredential) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	creds := maps.Clone(b.scram[user])
	if creds == nil {
		creds = map[string]resources.KafkaScramCredential{}
	}
	if err := modify(creds); err != nil {
		return err
	}
	if len(creds) == 0 {
		delete(b.scram, user)
	} else {
		b.scram[user] = creds
	}
	return nil
}

func (b *memBackend) Configs(_ context.Context, full string) (map[string]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]string{}
	for k, v := range b.configs[full] {
		out[k] = v
	}
	return out, nil
}

func (b *memBackend) SetConfigs(_ context.Context, full string, set map[string]*string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.configs[full] == nil {
		b.configs[full] = map[string]string{}
	}
	for k, v := range set {
		if v == nil {
			delete(b.configs[full], k)
		} else {
			b.configs[full][k] = *v
		}
	}
	return nil
}

// memLog assigns offsets the way the topic service does: each entry's base is the previous
// entry's last offset + 1.
type memLog struct {
	mu      sync.Mutex
	entries []Entry
	times   []int64
	next    int64
	start   int64
	wake    chan struct{}
}

func (l *memLog) Append(entry []byte, count int, _ *txn.ID, done func(int64, error)) {
	l.mu.Lock()
	base := l.next
	l.entries = append(l.entries, Entry{Base: base, Count: count, Data: entry})
	l.times = append(l.times, publishTime(entry))
	l.next += int64(count)
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
	done(base, nil)
}

func publishTime(entry []byte) int64 {
	e, err := wire.ParseEntry(entry, false)
	if err != nil {
		return 0
	}
	md, err := wire.ParseMetadata(e.Metadata)
	if err != nil {
		return 0
	}
	return int64(md.GetPublishTime())
}

func (l *memLog) Read(_ context.Context, offset int64, maxBytes int) ([]Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Entry
	size := 0
	for _, e := range l.entries {
		if e.Base+int64(e.Count) <= offset || e.Base+int64(e.Count) <= l.start {
			continue
		}
		if len(out) > 0 && size+len(e.Data) > maxBytes {
			break
		}
		out = append(out, e)
		size += len(e.Data)
	}
	return out, nil
}

func (l *memLog) Wait(offset int64) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.next > offset {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return l.wake
}

func (l *memLog) HighWatermark() int64 { l.mu.Lock(); defer l.mu.Unlock(); return l.next }

// LastStable: the in-memory twin has no transactions.
func (l *memLog) TxnOpen(txn.ID) bool                       { return false }
func (l *memLog) AbortTxn(context.Context, txn.ID) error    { return nil }
func (l *memLog) LastStable(context.Context) (int64, error) { return l.HighWatermark(), nil }
func (l *memLog) StartOffset() int64                        { l.mu.Lock(); defer l.mu.Unlock(); return l.start }

func (l *memLog) OffsetForTime(_ context.Context, ms int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, t := range l.times {
		if t >= ms {
			return l.entries[i].Base, nil
		}
	}
	return l.next, nil
}

func (l *memLog) Truncate(_ context.Context, offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.start = max(l.start, offset)
	return nil
}

type kafkaConfigT = config.KafkaConfig

// testutilCount reads the malformed-request counter.
func testutilCount(s *Server) float64 { return promtestutil.ToFloat64(s.metrics.malformed) }

// startMem runs a Kafka server on a memory backend and returns its address.
func startMem(t testing.TB, mutate ...func(*config.KafkaConfig)) (*Server, *memBackend, string) {
	t.Helper()
	be := newMemBackend()
	cfg := config.DefaultKafkaConfig()
	cfg.Listeners = "PLAINTEXT://127.0.0.1:0"
	cfg.GroupInitialRebalanceDelayMs = 0
	cfg.GroupMinSessionTimeoutMs = 100
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := New(Options{Config: cfg, Backend: be, ClusterID: "test-cluster"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().(*net.TCPAddr)
	be.host, be.port = "127.0.0.1", int32(addr.Port)
	s.Serve(l)
	t.Cleanup(func() { _ = s.Close() })
	return s, be, addr.String()
}

// pulsarEntry builds an entry as a Pulsar producer would (for cross-format tests).
func pulsarEntry(t *testing.T, key string, value []byte, props map[string]string, eventTime uint64) []byte {
	t.Helper()
	md := &pb.MessageMetadata{ProducerName: strPtr("pulsar-producer"), SequenceId: u64Ptr(0), PublishTime: u64Ptr(uint64(time.Now().UnixMilli()))}
	if key != "" {
		md.PartitionKey = &key
	}
	if eventTime > 0 {
		md.EventTime = &eventTime
	}
	for k, v := range props {
		md.Properties = append(md.Properties, &pb.KeyValue{Key: strPtr(k), Value: strPtr(v)})
	}
	e, err := wire.AppendEntry(nil, md, value)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func strPtr(s string) *string { return &s }
func u64Ptr(v uint64) *uint64 { return &v }
