// Package connector is the runtime of Pulsar IO connectors on Magnetar: the Source and Sink
// contracts a built-in connector implements, the registry of built-ins by their Pulsar names
// (builtin://debezium-postgres, builtin://jdbc-postgres, ...), and the instance runner that
// the functions worker starts for an instance of component type SOURCE or SINK.
//
// A source instance is the source plus one producer per destination topic: records are
// published asynchronously and a record's OnAck runs only after the broker's receipt, which
// is when the source may checkpoint past it (CDC sources acknowledge a replication slot's LSN
// or save a binlog position only then). A publish that fails stops the instance; the worker
// restarts it and the source resumes from its last checkpoint, so nothing acknowledged by the
// database is lost (at-least-once).
//
// A sink instance is one consumer over the inputs feeding the sink. The sink acknowledges
// each record (Ack) when it is durably written or fails it (Fail): a transient failure (the
// target is down) is retried by the sink with backoff until the target is back; a permanent
// one (a record the target refuses) is retried maxMessageRetries times and then published to
// the dead-letter topic and acknowledged, so one bad record never blocks the stream.
//
// Files:
//
//	connector.go   Record, Source, Sink, their contexts, Permanent errors
//	registry.go    Definition and Registry: the built-ins by name
//	config.go      Config: typed reads of a connector's configs map, errors naming the key
//	spec.go        Spec: what one instance runs (from SourceConfig / SinkConfig)
//	source.go      the source runner
//	sink.go        the sink runner, dead-letter topic
//	instance.go    Instance: status, metrics, health, stop (what the worker supervises)
//	(counters: pkg/pf/pfstats, the same Stats the Go SDK counts with; dead letters are
//	the deadLetteredTotal user metric)
//	batch.go       Batcher: size/time batching with retries, backoff and bad-record isolation
//	tracker.go     Tracker: the highest position whose records are all published
package connector
