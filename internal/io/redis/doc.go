// Package redis is Pulsar's redis sink (builtin://redis): each message's key is set to its
// value in a Redis database, batched into one MULTI/EXEC transaction per batch, over a small
// RESP2 client of our own (resp.go: only what the sink sends and the replies it reads).
//
// Configs (Pulsar's RedisSinkConfig names): redisHosts (host:port, required; in Cluster mode
// host:port,... of any nodes), redisPassword, redisDatabase (0; a cluster has only 0),
// clientMode (Standalone or Cluster), connectTimeout (10000 ms), operationTimeout
// (10000 ms), batchSize (200), batchTimeMs (1000).
//
// Cluster mode (cluster.go) routes each key to its hash slot's primary, learnt from CLUSTER
// SLOTS, follows MOVED (reload the map, resend) and ASK (ASKING, resend once), and sends one
// pipeline per node per batch instead of MULTI/EXEC, which cannot span slots; node.go is one
// connection to one server, for both modes.
//
// A message without a key cannot be stored and goes to the dead-letter topic; a tombstone
// (a key and an empty value) deletes the key (ours; Pulsar's sink writes an empty value). A batch
// is acknowledged only after EXEC answered (with appendfsync always, after it is on disk);
// a connection error closes the connection and the batch is retried whole on a new one
// with backoff, so the sink resumes by itself after Redis restarts. SET and DEL by key are
// idempotent, so EFFECTIVELY_ONCE is accepted (a replayed batch rewrites the same values).
package redis
