// Package perf holds the load generators behind `magnetar perf`. RunBookie drives one bookie
// over its TCP protocol with a fixed number of adds in flight and records every add's latency
// (from the call to the done callback, which fires after the bookie's journal fsync) in an
// HDR histogram, like pulsar-perf. ProbeSync measures the raw write+fdatasync rate of a
// directory's disk, the ceiling the bookie's journal is compared with.
//
// RunProduce and RunConsume (broker.go) are pulsar-perf produce/consume over the Go client.
// Payload format: the first 8 bytes of every produced message are the send time in
// nanoseconds since the Unix epoch, big endian; the rest is zeros. Consume reads it for the
// end-to-end latency and ignores messages shorter than 8 bytes (latency 0).
package perf
