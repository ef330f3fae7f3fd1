// Package admin serves the HTTP side of a broker: Pulsar's admin REST API v2 under
// /admin/v2, Prometheus metrics on /metrics, and the /status.html health check load
// balancers poll.
//
// Errors leave through one table (errors.go:statusFor): every handler returns a Go error and
// writeError turns it into Pulsar's {"reason": "..."} body with the status code Pulsar uses
// (404 missing, 409 exists, 412 precondition, 400 bad input, 501 not offered, 503 not
// ready, 500 otherwise). The mux's own 404/405 answers get the same body (server.go:cleanPath).
//
// Topics and subscriptions go through the Broker interface (broker.go) with full topic
// names as strings, so this package never imports the broker; internal/broker/adminapi.go
// implements it. Partitioned topics are expanded here: stats are summed over partitions and
// subscription operations run on every partition.
//
// Peek and get-message-by-id answer with the stored payload as the body and the message id,
// publish time, batch size and properties in X-Pulsar-* headers (topics.go:rawResponse), as
// Pulsar's Java broker does; a compressed entry is returned as stored.
//
// /metrics adds the Pulsar series the broker's own collector lacks (metrics.go:
// pulsar_msg_backlog, pulsar_storage_backlog_size, pulsar_topics_count), computed at scrape
// time from the loaded topics.
package admin
