// Package lakehouse makes topics with a schema also Apache Iceberg tables: their records
// are written as Parquet data files into an Iceberg table in an object store, and the
// Iceberg REST catalog is served on the HTTP port so that Trino, Spark, PyIceberg and every
// engine with a REST catalog client read them. docs/design/lakehouse.md is the chapter.
//
// # Which topics
//
// icebergEnabled turns the service on for a broker (with icebergWarehouse, s3://bucket/prefix
// or file:///dir). A topic is written when its effective icebergPolicies (namespace policy
// iceberg_policies, overridden field by field by the topic policy icebergPolicies; off by
// default) enable it and it has a schema (AVRO, JSON, PROTOBUF_NATIVE, a primitive, or
// KEY_VALUE of those). A partitioned topic is one table; each partition has its own writer
// and its own committed position. The table of persistent://t/ns/x is t.ns.x: the Pulsar
// tenant and namespace are the Iceberg namespace's two levels.
//
// # Columns
//
// The columns are internal/columns' mapping of the topic schema (shared with the SQL front
// end): __partition__, __event_time__, __publish_time__, __message_id__, __sequence_id__,
// __producer_name__, __key__, __properties__, then the value columns. New tables are
// partitioned by hour(__publish_time__) (policy partitioning: hour, day, month, year or
// none). Types: BOOLEAN boolean, INTEGER int, BIGINT long, REAL float, DOUBLE double,
// VARCHAR and JSON string, VARBINARY binary, TIMESTAMP timestamptz (microseconds), DATE
// date, TIME time, DECIMAL(p,s) decimal(p,s).
//
// # Exactly once
//
// A table's record in the metadata store (below) holds its current metadata file and, per
// partition, the last entry its data covers. A commit writes data files, manifests and a new
// metadata file, then swaps the record (metadata location and position together) with one
// compare-and-swap that also requires the position to be the one the commit started from.
// Files of a commit that never swapped are not referenced by any metadata: after a crash
// the writer starts again from the recorded position and writes those rows again. Two
// writers of one partition (an ownership change) cannot both commit: the second finds the
// position moved (ErrPositionMoved) and restarts from it. Commits cover whole entries, so
// every message of a batch is in the same commit.
//
// # The writer's hold on the topic
//
// Each written partition has a durable subscription, pulsar.iceberg (HoldSubscription),
// moved to the committed entry after every commit: the topic's retention keeps what the
// table does not have yet, and the subscription's backlog is the writer's lag. A stuck
// writer holds the topic for at most icebergWriterMaxHoldSeconds: then the subscription
// moves to the first message younger than that, retention may trim what lies before, and
// the writer, when it resumes, counts the gap (stats "gaps", the table record's "gaps").
// Turning the policy off deletes the subscription.
//
// # Table records (metadata store)
//
//	/iceberg/tables/<tenant>/<namespace>/<table>   (path-escaped) JSON:
//	  {"metadataLocation": "s3://.../metadata/00042-<uuid>.metadata.json",
//	   "topic": "persistent://t/ns/x",
//	   "committed": {"-1": {"ledgerId": 12, "entryId": 345}},   per partition index
//	   "gaps": {"-1": 1}}                                         optional
//
// Table files: <warehouse>/<tenant>/<namespace>/<table>/metadata/NNNNN-<uuid>.metadata.json,
// manifests (<uuid>-m0.avro) and manifest lists (snap-<id>-1-<uuid>.avro) beside them, data
// files under data/<partition field>=<value>/<uuid>.parquet.
//
// # The format, written here
//
// The package writes the Iceberg v2 format itself (no Iceberg library in the product: a
// library's table package costs every magnetar process tens of milliseconds of package init,
// issue 24; internal/archtest forbids importing github.com/apache/iceberg-go outside tests):
// tablemeta.go the metadata JSON, manifest.go manifests and manifest lists (Avro container
// files through hamba/avro, with the spec's field ids), datafile.go Parquet data files
// (arrow-go's pqarrow, field ids on the columns; colstats.go every column's counts and
// bounds in the manifest),
// fileio.go the warehouse (S3 through gocloud.dev, or local files), snapshots.go the
// snapshots: an append adds one manifest in front of the previous snapshot's; compaction,
// retention and manifest merging write the whole table state as one manifest; expiry drops
// old snapshots and deletes the files only they needed. The tests read every table back with
// iceberg-go and PyIceberg.
// Table properties: magnetar.topic, magnetar.schema-version (the topic schema version the
// table schema follows). Snapshot summaries of writer commits: magnetar.topic (the
// partition), magnetar.last-entry (ledgerId:entryId).
//
// # Schema evolution
//
// A message with a newer schema version than the table's first commits what was buffered,
// then commits the new table schema: new columns get new field ids and are optional; a
// dropped column stays (older rows keep values); a type change Iceberg allows (int to long,
// float to double, wider decimal) is applied, another keeps the table's type.
//
// # Dead letters
//
// A record that cannot be converted (malformed payload, unknown schema version, encrypted or
// chunked message, corrupt entry) goes to <topic>-iceberg-DLQ (icebergDeadLetterTopicSuffix,
// or the policy's deadLetterTopic) with its payload, key and properties plus
// ICEBERG_ORIGIN_TOPIC, ICEBERG_ORIGIN_MESSAGE_ID "(ledgerId,entryId,batchIndex)" and
// ICEBERG_ERROR; the table goes on. The position passes a record only once its dead letter
// is durable.
//
// # Maintenance
//
// Every icebergCompactionIntervalSeconds, for each table, the broker writing its lowest
// partition removes rows older than the policy's retentionHours (independently of the
// topic's retention: whole files by their __publish_time__ bounds, the file straddling the
// cutoff rewritten), compacts partitions with at least icebergCompactionMinFiles small files
// (under three quarters of icebergTargetFileSizeBytes) into files of about that size (a
// snapshot listing more than 100 manifests gets them merged even when no partition needs
// compaction), and expires snapshots older than five days.
//
// # HTTP
//
// Catalog (Service.Mount, rest.go), read-only: GET /iceberg/v1/config, namespaces (tenants,
// then tenant\x1fnamespace), tables, LoadTable (metadata and, for S3, the endpoint and,
// with icebergCatalogVendCredentials, credentials), HEAD variants, metrics reports
// (accepted). Changes by clients are 403 ForbiddenException. Admin (admin.go): icebergPolicies
// of namespaces and topics, a topic's icebergStats, icebergCompaction on demand.
//
// # Metrics
//
// pulsar_iceberg_lag_messages, pulsar_iceberg_commits_total,
// pulsar_iceberg_commit_errors_total, pulsar_iceberg_rows_total,
// pulsar_iceberg_dead_letters_total, pulsar_iceberg_gaps_total,
// pulsar_iceberg_last_commit_seconds (labels topic, table) and the histogram
// pulsar_iceberg_commit_latency_seconds.
package lakehouse
