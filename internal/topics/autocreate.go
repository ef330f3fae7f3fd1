package topics

import (
	"context"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// autoCreation is the topic auto-creation in force for name's namespace: the namespace's
// autoTopicCreation override (pulsar-admin namespaces set-auto-topic-creation) when it has
// one, else the broker's allowAutoTopicCreation, allowAutoTopicCreationType and
// defaultNumPartitions. partitions is 0 for non-partitioned creation. It is only asked
// about a topic that does not exist, so the namespace read stays off the common path; a
// namespace that cannot be read leaves the broker's settings (checkNamespace reports it).
func (s *Service) autoCreation(ctx context.Context, name Name) (allow bool, partitions int) {
	allow = s.cfg.AllowAutoTopicCreation
	if s.cfg.AllowAutoTopicCreationType == "partitioned" {
		partitions = s.cfg.DefaultNumPartitions
	}
	p, err := resources.New(s.store).Namespace(ctx, name.Tenant, name.Namespace)
	if err == nil && p.Deleted {
		// A forced namespace delete is under way (admin/nsdelete.go): a client reconnecting
		// to a topic it just deleted must not create it again, as in Pulsar.
		return false, 0
	}
	if err != nil || p.AutoTopicCreationOverride == nil {
		return allow, partitions
	}
	o := p.AutoTopicCreationOverride
	if o.TopicType != "partitioned" {
		return o.AllowAutoTopicCreation, 0
	}
	return o.AllowAutoTopicCreation, max(o.DefaultNumPartitions, 1)
}

// AutoCreation is autoCreation for front ends that create topics themselves (the Kafka
// front end's Metadata with allow_auto_topic_creation).
func (s *Service) AutoCreation(ctx context.Context, name Name) (allow bool, partitions int) {
	return s.autoCreation(ctx, name)
}

// autoCreateAllowed tells whether a missing topic of name's namespace may be created on use.
func (s *Service) autoCreateAllowed(ctx context.Context, name Name) bool {
	allow, _ := s.autoCreation(ctx, name)
	return allow
}
