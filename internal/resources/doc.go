// Package resources owns the metadata layout of the cluster: keys.go is the one table of
// every key prefix, and no other package spells a key (docs/ARCHITECTURE.md §7 lists each
// record's owner). It is also the typed access to the cluster's configuration: clusters,
// tenants, namespaces with their policies, topic records and partitioned-topic metadata,
// topic policies, the dynamic configuration overrides, and the shapes of the bookie
// records (registrations, cookies) that the bookie writes and the ledger client watches.
// The topic service, the admin REST API and standalone's bootstrap all go through it.
//
// Key layout of the records this package reads and writes (values are JSON with Pulsar's
// field names, so tools that parse them work):
//
//	/admin/clusters/{cluster}                                ClusterData
//	/admin/policies/{tenant}                                 TenantInfo
//	/admin/policies/{tenant}/{namespace}                     Policies
//	/admin/partitioned-topics/{tenant}/{namespace}/{domain}/{topic}   PartitionedTopicMetadata
//	/admin/topics/{tenant}/{namespace}/{domain}/{topic}               TopicRecord ("{}")
//	/admin/topic-policies/{tenant}/{namespace}/{domain}/{topic}       TopicPolicies (topic-level overrides)
//	/admin/configuration                                     {"key": "value", ...} dynamic overrides
//	/bookies/available/{host:port}                           BookieRegistration (written by the bookie)
//	/bookies/cookies/{host:port}                             BookieCookie (written by the bookie)
//	/kafka/groups/{group}, /kafka/producer-ids, /kafka/log-start/{partition}, /kafka/offsets/{group}/{partition}, /kafka/scram/{user}   the Kafka front end's (kafka.go)
//
// Every update is a read-modify-CAS loop (Update), so two admins changing different
// policies of one namespace never lose either change.
package resources
