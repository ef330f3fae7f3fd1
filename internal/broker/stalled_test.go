package broker

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/framebuf/framebuftest"
	"github.com/magnetar-io/magnetar/internal/ledger/memledger"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
)

// TestStalledFramesHoldWhatArrived: 100 clients each declare a frame of the largest allowed
// size (maxMessageSize 5 MiB plus padding), send 1,000 bytes of it and stall. Allocating the
// declared size took 500 MiB; the reader must hold about what arrived (framebuf.ReadFull),
// so the whole broker allocates a few MiB. The bound is on allocated bytes, not on time.
func TestStalledFramesHoldWhatArrived(t *testing.T) {
	const peers = 100
	logger := testLogger(t)
	store := memstore.New(memstore.DefaultOptions())
	bootstrapNamespaces(t, store)
	f := newTestFactory(t, store, memledger.New(), logger)
	cfg := testBrokerConfig(func(c *config.BrokerConfig) { c.MaxMessageSize = config.DefaultBrokerConfig().MaxMessageSize })
	s := newTestServer(t, cfg, store, f, logger, prometheus.NewRegistry(), nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = closeServer(ctx, s)
		_ = f.Close(ctx)
	})
	declared := s.maxFrame
	send := binary.BigEndian.AppendUint32(nil, uint32(declared))
	send = append(send, make([]byte, 1000)...)
	grew := framebuftest.StalledAlloc(t, func(l net.Listener) { go func() { _ = s.Serve(l) }() }, peers, send)
	// Per connection: the 64 KiB read buffer, one 64 KiB chunk, the writer and goroutines'
	// state; 64 MiB is generous and far below the 500 MiB of the declared sizes.
	if grew > 64<<20 {
		t.Fatalf("%d clients stalled in a %d-byte frame after 1,000 bytes; the broker allocated %d bytes", peers, declared, grew)
	}
	t.Logf("%d stalled clients: %d bytes allocated", peers, grew)
}
