// Package broker is the Pulsar-compatible broker core: it serves the Pulsar binary protocol
// (internal/wire) to unmodified Pulsar clients, owns topics, and stores persistent topics
// in managed ledgers (internal/managedledger).
//
// Shape: Server accepts connections (server.go); each conn (conn.go) has a read loop that
// runs command handlers in arrival order (cmd_*.go, one file per command family), a write
// loop that batches outgoing frames, and a keep-alive pinger. Topics (topic.go, topics.go)
// hold producers (producer.go) and subscriptions (subscription.go), each with a dispatcher
// goroutine reading from its cursor. Storage is reached through the small logStorage seam
// (storage.go) implemented over the managed ledger in storage_ml.go.
//
// Guarantees: SEND_RECEIPTs per producer in SEND order, after the durable append; entries
// stored as the exact bytes received; FLOW permits counted in messages; unacknowledged
// messages redelivered when their consumer goes; bad input closes only its own connection.
//
// Topic records live in the metadata store under Pulsar's layout:
//
//	/admin/partitioned-topics/<tenant>/<namespace>/<domain>/<topic>  {"partitions": N}
//	/admin/topics/<tenant>/<namespace>/<domain>/<topic>              {} (non-partitioned)
//
// See docs/design/broker.md for the publish and consume paths.
package broker
