// Package resources is typed access to the cluster's configuration in the metadata store:
// clusters, tenants, namespaces with their policies, and partitioned-topic metadata. The
// broker, the admin REST API and standalone's bootstrap all go through it, so the key layout
// and JSON shapes live in one place.
//
// Key layout (values are JSON with Pulsar's field names, so tools that parse them work):
//
//	/admin/clusters/{cluster}                                ClusterData
//	/admin/policies/{tenant}                                 TenantInfo
//	/admin/policies/{tenant}/{namespace}                     Policies
//	/admin/partitioned-topics/{tenant}/{namespace}/{domain}/{topic}   PartitionedTopicMetadata
//	/admin/topics/{tenant}/{namespace}/{domain}/{topic}               TopicRecord (written "{}" by the broker)
//	/admin/topic-policies/{tenant}/{namespace}/{domain}/{topic}       TopicPolicies (topic-level overrides)
//	/kafka/groups/{group}, /kafka/producer-ids, /kafka/log-start/{partition}, /kafka/offsets/{group}/{partition}   the Kafka front end's (kafka.go)
//
// Every update is a read-modify-CAS loop (Update), so two admins changing different
// policies of one namespace never lose either change.
package resources
