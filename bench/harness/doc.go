// Package harness runs the same workloads against Magnetar standalone and NATS JetStream on
// one machine, interleaving the systems (A B B A), and reports absolute numbers and the
// Magnetar/NATS ratios with their spread over the pairs.
//
// Flow (run.go:Run): probe the environment, build or find both servers, then for every
// workload variant start a fresh server per block with a fresh data directory on the same
// disk, measure readiness, drive it with the in-process load generator (load.go), sample the
// server's /proc counters around the measurement window, stop it, and finally write the
// markdown report, the raw JSON and the latency-vs-throughput PNG.
//
// Payload format (the only byte format here): every message starts with an 8-byte
// little-endian signed integer, the send time in nanoseconds since the harness started
// (Go monotonic clock; producers and consumers run in this one process, so the clock is
// shared), followed by pseudo-random filler up to the message size. Open-loop runs write the
// intended send time instead of the actual one, so a stalled system is charged for the
// queueing it causes (no coordinated omission).
package harness
