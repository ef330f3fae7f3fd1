package debezium

import (
	"time"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// Common are the configs every CDC source reads (Debezium's names).
type Common struct {
	// Prefix is topic.prefix (Debezium 2), or database.server.name (Debezium 1, as Pulsar's
	// docs use).
	Prefix string
	// Namespace is topic.namespace: tenant/namespace of the table topics.
	Namespace      string
	Tombstones     bool          // tombstones.on.delete
	DecimalMode    string        // decimal.handling.mode: string (default here) or double
	SnapshotMode   string        // snapshot.mode
	FlushInterval  time.Duration // offset.flush.interval.ms: how often the position is saved
	MaxQueueRows   int64         // max.queue.size: rows read ahead of their receipts
	HeartbeatEvery time.Duration // heartbeat.interval.ms (0: none)
}

// SnapshotModes are the snapshot.mode values the sources take.
var SnapshotModes = []string{"initial", "never", "no_data", "initial_only", "always", "when_needed"}

// ParseCommon reads the common configs; ns is the source's own tenant/namespace.
func ParseCommon(c connector.Config, ns string) Common {
	cm := Common{
		Prefix:        c.String("topic.prefix", c.String("database.server.name", "")),
		Namespace:     c.String("topic.namespace", ns),
		Tombstones:    c.Bool("tombstones.on.delete", true),
		DecimalMode:   c.OneOf("decimal.handling.mode", "string", "string", "double", "precise"),
		SnapshotMode:  c.OneOf("snapshot.mode", "initial", SnapshotModes...),
		FlushInterval: c.Millis("offset.flush.interval.ms", time.Second),
		MaxQueueRows:  c.IntRange("max.queue.size", 8192, 1, 1<<24),
	}
	if cm.Prefix == "" {
		c.Required("topic.prefix")
	}
	if cm.FlushInterval <= 0 {
		cm.FlushInterval = time.Second
	}
	return cm
}

// SnapshotFirst reports whether the mode reads the tables before streaming when there is no
// checkpoint yet.
func (c Common) SnapshotFirst() bool {
	return c.SnapshotMode != "never" && c.SnapshotMode != "no_data"
}
