// Package builtin lists the connectors compiled into Magnetar under Pulsar's built-in names,
// so `--archive builtin://debezium-postgres` and the configs of Pulsar's connector docs work
// as written. One line per connector; each lives in its own package under internal/io.
package builtin

import (
	"github.com/magnetar-io/magnetar/internal/io/connector"
	"github.com/magnetar-io/magnetar/internal/io/datagen"
	"github.com/magnetar-io/magnetar/internal/io/debezium/mysql"
	"github.com/magnetar-io/magnetar/internal/io/debezium/postgres"
	"github.com/magnetar-io/magnetar/internal/io/file"
	"github.com/magnetar-io/magnetar/internal/io/jdbc"
	"github.com/magnetar-io/magnetar/internal/io/kafka"
	"github.com/magnetar-io/magnetar/internal/io/objstore"
	"github.com/magnetar-io/magnetar/internal/io/redis"
	"github.com/magnetar-io/magnetar/internal/io/webhook"
)

// Definitions returns every built-in connector.
func Definitions() []*connector.Definition {
	defs := []*connector.Definition{
		datagen.Definition(),
		postgres.Definition(),
		file.Definition(),
		kafka.Definition(),
		redis.Definition(),
	}
	defs = append(defs, webhook.Definitions()...)
	defs = append(defs, objstore.Definitions()...)
	defs = append(defs, mysql.Definitions()...)
	return append(defs, jdbc.Definitions()...)
}

// Registry is a registry of every built-in connector.
func Registry() *connector.Registry { return connector.NewRegistry(Definitions) }
