package sql

import (
	"context"
	"errors"

	"github.com/magnetar-io/magnetar/internal/schema"
)

// Source is what the SQL front end reads topics through: the catalog (namespaces, topics,
// schemas) and read-only snapshots of each partition's log. The composition implements it
// (internal/sqlworker/storage.go over the managed ledger's read-only snapshots today; the
// topic service's reader API once it has one), so switching is one file.
type Source interface {
	// Namespaces lists "tenant/namespace" names.
	Namespaces(ctx context.Context) ([]string, error)
	// Topics lists the persistent topics of a namespace by base name (a partitioned topic
	// once, without its partition suffix), sorted.
	Topics(ctx context.Context, namespace string) ([]string, error)
	// Topic describes one topic; a topic that does not exist is ErrTopicNotFound.
	Topic(ctx context.Context, namespace, topic string) (TopicInfo, error)
	// SchemaVersion returns a version of a topic's schema (to decode messages written with
	// an older one); ErrSchemaNotFound when it is gone.
	SchemaVersion(ctx context.Context, namespace, topic string, version int64) (schema.Schema, error)
	// Open takes a snapshot of one partition's log (partition -1: the topic itself).
	Open(ctx context.Context, namespace, topic string, partition int) (Log, error)
}

// TopicInfo describes a topic as a table.
type TopicInfo struct {
	// Partitions is the number of partitions, 0 for a non-partitioned topic.
	Partitions int
	// Schema is the latest schema; Type BYTES when the topic has none.
	Schema schema.Schema
}

// Log is a read-only snapshot of one partition: its ledgers up to the last entry confirmed
// when it was opened.
type Log interface {
	Ledgers() []Ledger
	// Read returns entries first..last of a ledger of the snapshot.
	Read(ctx context.Context, ledgerID, first, last int64) ([]Entry, error)
	Close() error
}

// Ledger is one ledger of a snapshot: entries 0..Entries-1.
type Ledger struct {
	ID, Entries, Size int64
	Offloaded         bool
}

// Entry is one stored entry (a Pulsar entry from the 0x0e01 magic on).
type Entry struct {
	LedgerID, EntryID int64
	Data              []byte
	// Hidden marks an entry no consumer is given (a transaction marker, an entry of an
	// aborted transaction): it makes no row.
	Hidden bool
}

// Errors a Source returns.
var (
	ErrTopicNotFound  = errors.New("sql: topic not found")
	ErrSchemaNotFound = errors.New("sql: schema version not found")
)
