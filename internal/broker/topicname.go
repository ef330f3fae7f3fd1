package broker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// Topic domains.
const (
	domainPersistent    = "persistent"
	domainNonPersistent = "non-persistent"
	partitionSuffix     = "-partition-"
)

// TopicName is a parsed topic name: {domain}://{tenant}/{namespace}/{local}, where a
// partition i of a partitioned topic X has the local name X-partition-i.
type TopicName struct {
	Domain    string // "persistent" or "non-persistent"
	Tenant    string
	Namespace string // may be "cluster/namespace" for legacy V1 names
	Local     string
	Partition int // -1 unless Local ends in -partition-<i>
}

// ParseTopicName accepts full names and the short forms clients expand ("t" means
// persistent://public/default/t, "tenant/ns/t" means persistent://tenant/ns/t).
func ParseTopicName(s string) (TopicName, error) {
	bad := func(why string) (TopicName, error) {
		return TopicName{}, fmt.Errorf("%w: %q: %s", wire.ErrInvalidTopicName, s, why)
	}
	domain, rest, ok := strings.Cut(s, "://")
	if !ok {
		domain, rest = domainPersistent, s
		if !strings.Contains(s, "/") {
			rest = "public/default/" + s
		}
	}
	if domain != domainPersistent && domain != domainNonPersistent {
		return bad("domain must be persistent or non-persistent")
	}
	parts := strings.Split(rest, "/")
	var t TopicName
	switch len(parts) {
	case 3:
		t = TopicName{Domain: domain, Tenant: parts[0], Namespace: parts[1], Local: parts[2]}
	case 4:
		t = TopicName{Domain: domain, Tenant: parts[0], Namespace: parts[1] + "/" + parts[2], Local: parts[3]}
	default:
		return bad("want tenant/namespace/topic")
	}
	for _, p := range parts {
		if p == "" {
			return bad("empty name component")
		}
	}
	t.Partition = -1
	if i := strings.LastIndex(t.Local, partitionSuffix); i > 0 {
		if n, err := strconv.Atoi(t.Local[i+len(partitionSuffix):]); err == nil && n >= 0 {
			t.Partition = n
		}
	}
	return t, nil
}

// String is the full name.
func (t TopicName) String() string {
	return t.Domain + "://" + t.Tenant + "/" + t.Namespace + "/" + t.Local
}

// Persistent tells whether the topic is stored.
func (t TopicName) Persistent() bool { return t.Domain == domainPersistent }

// Base is the partitioned topic a partition belongs to (itself if not a partition).
func (t TopicName) Base() TopicName {
	if t.Partition < 0 {
		return t
	}
	b := t
	b.Local = t.Local[:strings.LastIndex(t.Local, partitionSuffix)]
	b.Partition = -1
	return b
}

// PartitionName is the name of partition i of t.
func (t TopicName) PartitionName(i int) TopicName {
	p := t
	p.Local = t.Local + partitionSuffix + strconv.Itoa(i)
	p.Partition = i
	return p
}

// ManagedLedgerName is the name of the topic's log: tenant/namespace/domain/local, as
// Pulsar names managed ledgers.
func (t TopicName) ManagedLedgerName() string {
	return t.Tenant + "/" + t.Namespace + "/" + t.Domain + "/" + t.Local
}

// Namespace is "tenant/namespace".
func (t TopicName) NamespaceName() string { return t.Tenant + "/" + t.Namespace }

// Metadata-store keys of topics (Pulsar's layout). The value of a partitioned-topic key is
// JSON {"partitions": N}; a non-partitioned topic's key holds "{}" and records that the
// topic exists (needed when auto-creation is off).
const (
	PartitionedTopicsRoot = "/admin/partitioned-topics"
	TopicsRoot            = "/admin/topics"
)

// PartitionedTopicKey is the metadata key of t's partitioned-topic metadata.
func PartitionedTopicKey(t TopicName) string {
	b := t.Base()
	return PartitionedTopicsRoot + "/" + b.Tenant + "/" + b.Namespace + "/" + b.Domain + "/" + b.Local
}

// TopicKey is the metadata key recording that the non-partitioned topic (or partition) t
// exists.
func TopicKey(t TopicName) string {
	return TopicsRoot + "/" + t.Tenant + "/" + t.Namespace + "/" + t.Domain + "/" + t.Local
}
