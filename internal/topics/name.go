package topics

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// Topic domains.
const (
	DomainPersistent    = "persistent"
	DomainNonPersistent = "non-persistent"
	partitionSuffix     = "-partition-"
)

// Name is a parsed topic name: {domain}://{tenant}/{namespace}/{local}, where a
// partition i of a partitioned topic X has the local name X-partition-i.
type Name struct {
	Domain    string // "persistent" or "non-persistent"
	Tenant    string
	Namespace string // may be "cluster/namespace" for legacy V1 names
	Local     string
	Partition int // -1 unless Local ends in -partition-<i>
}

// ParseName accepts full names and the short forms clients expand ("t" means
// persistent://public/default/t, "tenant/ns/t" means persistent://tenant/ns/t).
func ParseName(s string) (Name, error) {
	bad := func(why string) (Name, error) {
		return Name{}, fmt.Errorf("%w: %q: %s", wire.ErrInvalidTopicName, s, why)
	}
	domain, rest, ok := strings.Cut(s, "://")
	if !ok {
		domain, rest = DomainPersistent, s
		if !strings.Contains(s, "/") {
			rest = "public/default/" + s
		}
	}
	if domain != DomainPersistent && domain != DomainNonPersistent {
		return bad("domain must be persistent or non-persistent")
	}
	parts := strings.Split(rest, "/")
	var t Name
	switch len(parts) {
	case 3:
		t = Name{Domain: domain, Tenant: parts[0], Namespace: parts[1], Local: parts[2]}
	case 4:
		t = Name{Domain: domain, Tenant: parts[0], Namespace: parts[1] + "/" + parts[2], Local: parts[3]}
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
func (t Name) String() string {
	return t.Domain + "://" + t.Tenant + "/" + t.Namespace + "/" + t.Local
}

// Persistent tells whether the topic is stored.
func (t Name) Persistent() bool { return t.Domain == DomainPersistent }

// Base is the partitioned topic a partition belongs to (itself if not a partition).
func (t Name) Base() Name {
	if t.Partition < 0 {
		return t
	}
	b := t
	b.Local = t.Local[:strings.LastIndex(t.Local, partitionSuffix)]
	b.Partition = -1
	return b
}

// PartitionName is the name of partition i of t.
func (t Name) PartitionName(i int) Name {
	p := t
	p.Local = t.Local + partitionSuffix + strconv.Itoa(i)
	p.Partition = i
	return p
}

// ManagedLedgerName is the name of the topic's log: tenant/namespace/domain/local, as
// Pulsar names managed ledgers.
func (t Name) ManagedLedgerName() string {
	return t.Tenant + "/" + t.Namespace + "/" + t.Domain + "/" + t.Local
}

// NamespaceName is "tenant/namespace".
func (t Name) NamespaceName() string { return t.Tenant + "/" + t.Namespace }
