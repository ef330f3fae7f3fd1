// Package kafka is Pulsar's kafka connector (builtin://kafka): a source that reads a topic
// of an Apache Kafka cluster in a consumer group and publishes each record to the
// connector's Pulsar topic, and a sink that writes a Pulsar topic's messages to a Kafka
// topic (github.com/twmb/franz-go).
//
// Configs are Pulsar's KafkaSourceConfig / KafkaSinkConfig names:
//
//	both    bootstrapServers (required), topic (required), securityProtocol (PLAINTEXT, SSL,
//	        SASL_PLAINTEXT, SASL_SSL), saslMechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512),
//	        saslJaasConfig (username="..." password="..." is read from it), sslTruststoreLocation
//	        (a PEM file of CA certificates; ours: no Java trust stores here)
//	source  groupId (required), fetchMinBytes (1), autoCommitEnabled (true),
//	        autoCommitIntervalMs (5000), sessionTimeoutMs (30000), heartbeatIntervalMs (3000),
//	        autoOffsetReset (earliest, latest; default earliest), copyHeadersEnabled (false)
//	sink    acks (all, 1, 0; default all), batchSize (16384 bytes), maxRequestSize (1048576),
//	        batchTimeMs (ours, 10: how long records wait for their batch)
//	source  consumerConfigProperties, sink producerConfigProperties: Kafka client properties
//	        (a JSON object, or flat "producerConfigProperties.linger.ms" keys), translated to
//	        franz-go options in props.go; a connector field wins over the same property
//
// Properties honoured: client.id, metadata.max.age.ms, connections.max.idle.ms,
// socket.connection.setup.timeout.ms, retry.backoff.ms, and the ones that carry a field
// (bootstrap.servers, security.protocol, sasl.mechanism, sasl.jaas.config,
// ssl.truststore.location, group.id, fetch.min.bytes, session.timeout.ms,
// heartbeat.interval.ms, auto.offset.reset, auto.commit.interval.ms, acks, batch.size,
// max.request.size, linger.ms); for the source also fetch.max.bytes,
// max.partition.fetch.bytes, fetch.max.wait.ms, client.rack, group.instance.id,
// isolation.level, partition.assignment.strategy; for the sink compression.type,
// enable.idempotence, max.in.flight.requests.per.connection, retries, delivery.timeout.ms,
// request.timeout.ms, buffer.memory. Serializers are ignored (bytes in, bytes out); any
// other property is named in a warning when the connector starts, not refused.
//
// Source delivery is at-least-once whatever autoCommitEnabled says: a record's offset is
// committed to the group only after the broker acknowledged its publish (per partition, the
// highest offset below which every record is published), every autoCommitIntervalMs, on a
// rebalance that takes partitions away, and on stop. A crash redelivers from the last commit.
// The Pulsar message key is the Kafka key; event time is the record's timestamp; with
// copyHeadersEnabled the headers become message properties.
//
// Sink delivery is at-least-once: a batch of records is produced and acknowledged once
// Kafka acknowledged every record of it (acks); a failed batch is retried whole with backoff
// (a retried batch may repeat records), a record Kafka refuses (too large, invalid) goes to
// the dead-letter topic. The Kafka key is the message key; properties become headers.
package kafka
