// Package kafka is the Kafka protocol front end of the broker: Kafka clients, tools and
// Kafka Connect talk to Magnetar topics over it, with the same data the Pulsar protocol
// serves (one topic, two protocols, one copy).
//
// # Shape
//
//	server.go     listeners (kafkaListeners), connections
//	conn.go       one read loop + one write loop per connection; responses in request
//	              order; a malformed request closes that connection only
//	header.go     request/response framing and headers (byte layout there)
//	apis.go       the API/version table (ApiVersions answers from it; docs/kafka.md lists it)
//	errors.go     the one Go error -> Kafka error code table
//	naming.go     Kafka topic names <-> persistent://tenant/namespace/topic(-partition-i)
//	records.go    Kafka record batches <-> Pulsar entries (byte layouts there)
//	codec.go      Kafka's compression codecs (gzip, snappy raw and xerial, lz4 frame, zstd)
//	partition.go  an open partition: idempotent producers' sequence state
//	produce.go fetch.go metadata.go groups.go admin.go   one file per API family
//	group/        the group coordinator's membership state machine (classic protocol)
//	backend.go    what the front end needs from the topic service (Backend, Log)
//
// Requests are decoded and encoded with franz-go's kmsg, which has every request and
// response type of every version; this package owns only the framing, the dispatch and the
// semantics.
//
// # Offsets
//
// A Kafka partition's offsets are contiguous message numbers. Each stored entry carries,
// in its broker entry metadata, the index of its last message (PIP-70), so an entry of n
// messages holds offsets index-n+1..index and the log can map an offset to an entry by a
// bounded search (Log.Read), and a timestamp to an offset (Log.OffsetForTime). A Kafka
// record batch is stored as one entry, a Pulsar batch of its records, so offsets assigned
// by a Kafka produce and a Pulsar publish interleave in one sequence.
//
// # Invariants
//
//   - A Produce response for acks != 0 is sent only after every batch of it is durable
//     (Log.Append's callback), and it carries the base offset the log assigned.
//   - Responses on a connection leave in request order (conn.go), whatever order the
//     handlers finish in.
//   - An idempotent producer's retried batch is never stored twice and never acknowledged
//     before its original is durable (partition.go).
//   - Bad input gets a Kafka error code or closes only its own connection; it never
//     panics the process (fuzz_test.go).
package kafka
