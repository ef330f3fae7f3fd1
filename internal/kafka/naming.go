package kafka

import (
	"fmt"
	"strconv"
	"strings"
)

// Naming. A Kafka topic name maps onto a Pulsar topic:
//
//	t                          persistent://{kafkaTenant}/{kafkaNamespace}/t
//	tenant.namespace.t         persistent://tenant/namespace/t, when tenant/namespace exists
//	persistent://tn/ns/t       itself (what Pulsar tools print; most Kafka clients refuse "/")
//
// and Kafka partition i of it is the Pulsar partition t-partition-i of a partitioned topic. A
// non-partitioned Pulsar topic is a Kafka topic with one partition, 0, which is the topic
// itself. Metadata answers with the name the client asked for, so a client never sees the
// mapping.

// partitionSuffix is Pulsar's partition naming: X-partition-i.
const partitionSuffix = "-partition-"

// maxTopicNameLen is Kafka's limit (249 characters, so that a partition's directory name
// fits a file system name).
const maxTopicNameLen = 249

// TopicRef is a Kafka topic resolved to its Pulsar name.
type TopicRef struct {
	Kafka     string // the name the client used
	Tenant    string
	Namespace string
	Local     string // the Pulsar local name (without -partition-i)
}

// Full is the Pulsar topic name persistent://tenant/namespace/local.
func (r TopicRef) Full() string {
	return "persistent://" + r.Tenant + "/" + r.Namespace + "/" + r.Local
}

// NamespaceName is tenant/namespace.
func (r TopicRef) NamespaceName() string { return r.Tenant + "/" + r.Namespace }

// Partition is the Pulsar name of Kafka partition i of a partitioned topic.
func (r TopicRef) Partition(i int32) string {
	return r.Full() + partitionSuffix + strconv.Itoa(int(i))
}

// Namer resolves Kafka topic names. NamespaceExists decides whether a dotted name
// (tenant.namespace.t) reaches another namespace; nil means only the default namespace.
type Namer struct {
	Tenant, Namespace string
	NamespaceExists   func(tenant, namespace string) bool
}

// Resolve maps a Kafka topic name, or reports why it is not a legal one
// (ErrInvalidTopic).
func (n Namer) Resolve(name string) (TopicRef, error) {
	if rest, ok := strings.CutPrefix(name, "persistent://"); ok {
		parts := strings.Split(rest, "/")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return TopicRef{}, fmt.Errorf("%w: %q: want persistent://tenant/namespace/topic", ErrInvalidTopic, name)
		}
		if err := legalLocal(parts[2]); err != nil {
			return TopicRef{}, fmt.Errorf("%w: %q: %v", ErrInvalidTopic, name, err)
		}
		return TopicRef{Kafka: name, Tenant: parts[0], Namespace: parts[1], Local: parts[2]}, nil
	}
	if err := legalKafkaName(name); err != nil {
		return TopicRef{}, fmt.Errorf("%w: %q: %v", ErrInvalidTopic, name, err)
	}
	if n.NamespaceExists != nil {
		if tn, rest, ok := strings.Cut(name, "."); ok {
			if ns, local, ok := strings.Cut(rest, "."); ok && tn != "" && ns != "" && local != "" {
				if n.NamespaceExists(tn, ns) {
					return TopicRef{Kafka: name, Tenant: tn, Namespace: ns, Local: local}, nil
				}
			}
		}
	}
	return TopicRef{Kafka: name, Tenant: n.Tenant, Namespace: n.Namespace, Local: name}, nil
}

// KafkaName is the Kafka name of Pulsar topic tenant/namespace/local as Metadata lists it:
// the plain local name in the default namespace, tenant.namespace.local elsewhere.
func (n Namer) KafkaName(tenant, namespace, local string) string {
	if tenant == n.Tenant && namespace == n.Namespace {
		return local
	}
	return tenant + "." + namespace + "." + local
}

// KafkaPartition is the Kafka topic (as KafkaName lists it) and partition of a Pulsar
// partition name: t-partition-i is partition i of t, a non-partitioned topic partition 0.
func (n Namer) KafkaPartition(full string) (topic string, partition int32, ok bool) {
	rest, ok := strings.CutPrefix(full, "persistent://")
	parts := strings.SplitN(rest, "/", 3)
	if !ok || len(parts) != 3 {
		return "", 0, false
	}
	local := parts[2]
	if i := strings.LastIndex(local, partitionSuffix); i >= 0 {
		if k, err := strconv.ParseInt(local[i+len(partitionSuffix):], 10, 32); err == nil {
			local, partition = local[:i], int32(k)
		}
	}
	return n.KafkaName(parts[0], parts[1], local), partition, true
}

// legalKafkaName applies Kafka's rule: 1-249 characters of [a-zA-Z0-9._-], not "." or "..".
func legalKafkaName(s string) error {
	if s == "" {
		return fmt.Errorf("empty name")
	}
	if len(s) > maxTopicNameLen {
		return fmt.Errorf("longer than %d characters", maxTopicNameLen)
	}
	if s == "." || s == ".." {
		return fmt.Errorf("%q is reserved", s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("character %q not allowed (use [a-zA-Z0-9._-])", c)
		}
	}
	return legalLocal(s)
}

// legalLocal refuses local names that would collide with Pulsar's partition naming.
func legalLocal(s string) error {
	if strings.Contains(s, partitionSuffix) {
		return fmt.Errorf("name contains %q, which Pulsar reserves for partitions", partitionSuffix)
	}
	if strings.ContainsAny(s, "/:") {
		return fmt.Errorf("name contains '/' or ':'")
	}
	return nil
}
