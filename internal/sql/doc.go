// Package sql answers SQL over topics through the MySQL protocol (go-mysql-server's engine
// and server), with Pulsar SQL's model: a database per namespace ("tenant/namespace"), a
// table per persistent topic (a partitioned topic is one table), the columns of the topic's
// schema (internal/columns) and the internal columns __partition__, __event_time__,
// __publish_time__, __message_id__, __sequence_id__, __producer_name__, __key__ and
// __properties__. It is read-only.
//
// Reads go through Source (source.go), implemented by the composition over managed-ledger
// read-only snapshots (internal/sqlworker): never a subscription, nothing held back from
// retention. A scan (scan.go) snapshots each partition when it starts, cuts it into splits
// per ledger range, reads them in parallel and decodes only the columns the statement uses;
// conjuncts on __publish_time__, __partition__ and __message_id__ narrow what it reads
// (constraints.go, analyzer.go). Limits (query.go): a deadline, bytes and rows scanned,
// statements at once and memory per statement, each failing the statement with an error
// that names its config key. server.go is the listener (TLS with the broker's keys,
// sqlRequireSecureTransport), authentication (a Pulsar token as the password) and per-table
// consume authorization; database.go lists each role only what it may consume; metrics.go
// the pulsar_sql_* series.
//
// docs/design/sql.md is the reader's guide.
package sql
