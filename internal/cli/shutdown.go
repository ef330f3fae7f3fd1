package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// errShutdownTimeout: a role's shutdown did not finish within its configured bound.
var errShutdownTimeout = errors.New("shutdown did not finish in time")

// stopWithin runs stop with a context that ends after timeoutMs and waits for it at most
// that long. Every role's SIGTERM path goes through it, so a process exits within its bound
// (brokerShutdownTimeoutMs and the other roles' keys) even when something it waits for is
// unreachable and ignores the context: a metadata store gone silent, a peer that never
// answers. Giving up then is safe: bookies acknowledge only what their journal fsynced,
// etcd members only what their WAL did, brokers only what bookies acknowledged.
func stopWithin(logger *slog.Logger, key string, timeoutMs int64, stop func(context.Context) error) error {
	timeout := time.Duration(timeoutMs) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- stop(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// Whatever stop still waits for is abandoned; the process exits now.
		logger.Error("shutdown did not finish within its bound; exiting without waiting further", "key", key, "timeout", timeout)
		return fmt.Errorf("%w: %s=%d", errShutdownTimeout, key, timeoutMs)
	}
}
