package harness

import (
	"context"
	"time"
)

// System starts one server under test per block.
type System interface {
	// Name labels result rows: "magnetar", "nats", "nats-atomic".
	Name() string
	// Start launches a fresh server with its data under dir and returns once it is ready.
	Start(ctx context.Context, d Durability, dir string) (*Instance, error)
}

// Instance is a running, ready server plus a client factory for it.
type Instance struct {
	srv   *server
	Drv   Driver
	Ready time.Duration // process start -> port accepting and first publish acknowledged
	ports map[string]string
}

// Stop closes the clients and the server process.
func (i *Instance) Stop() {
	if i.Drv != nil {
		i.Drv.Close()
	}
	i.srv.stop(30 * time.Second)
}
