// Package schema is the schema registry: per-topic histories of schema versions kept in
// the metadata store, and the compatibility rules that decide whether a new version may be
// added (producers, the admin API) or a consumer may attach.
//
// A topic's schema is named by tenant/namespace/topic (ID): no domain, and partitions
// share their partitioned topic's history, as in Pulsar. Versions count from 0 and only
// grow; on the wire a version is 8 bytes, big-endian (VersionBytes).
//
// Key layout (values are JSON):
//
//	/schemas/{tenant}/{namespace}/{topic}/{version, 20 digits zero-padded}
//	    {"type":"AVRO","data":"<base64 definition>","properties":{...},"timestamp":<ms>,"deleted":false}
//
// One key per version, written with create-if-absent: adding version N+1 is a write that
// fails if another writer added it first, and the loser re-reads the history and checks
// again (Registry.put). No head key exists, so there is nothing to get out of step with
// the versions. A non-forced delete adds a tombstone version ("deleted":true, no data):
// versions before the last tombstone no longer count for compatibility, "latest" or
// lookups by number, but their keys stay so numbering goes on. A forced delete removes
// the keys; numbering starts again.
// Definitions are bounded by maxSchemaSizeBytes (default 512 KiB, below etcd's value
// limit) and a history by maxSchemaVersionsPerTopic (default 1000), so reading one stays
// bounded.
//
// Compatibility (compat.go): strategies are per namespace (schema_compatibility_strategy,
// else the legacy schema_auto_update_compatibility_strategy, else the broker's
// schemaCompatibilityStrategy, FULL by default). A type change is incompatible. AVRO and
// JSON definitions are Avro schemas and are compared by Avro schema resolution (avro.go:
// reader fields missing from the writer need defaults, promotions int->long->float->double
// and string<->bytes, enum symbols, unions, names and aliases of enums and fixed; records
// match by fields, as in Avro's resolver); KEY_VALUE schemas are
// checked part by part (keyvalue.go); PROTOBUF_NATIVE keeps its root message (Pulsar's
// ProtobufNativeSchemaCompatibilityCheck, which ignores the rest of the descriptor); every
// other type, as Pulsar's default check, only needs the same type. BACKWARD: the new schema reads the
// last one; FORWARD: the last one reads the new; FULL: both; *_TRANSITIVE: against every
// live version. Consumers follow PIP-44 (checkConsumer).
package schema
