package bookie

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/framebuf/framebuftest"
	"github.com/magnetar-io/magnetar/internal/logging"
)

// TestStalledFramesHoldWhatArrived: 100 peers each declare a frame of the largest allowed
// size (nettyMaxFrameSizeBytes, about 5 MiB), send 1,000 bytes of it and stall. Allocating
// the declared size took 500 MiB; the reader must hold about what arrived, so the whole
// server allocates a few MiB. The bound is on allocated bytes, not on time.
func TestStalledFramesHoldWhatArrived(t *testing.T) {
	const peers = 100
	cfg := testConfig(t.TempDir())
	declared := cfg.MaxFrameSizeBytes
	srv, err := NewServer(cfg, storage.NewMemory(), logging.Discard(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	send := binary.BigEndian.AppendUint32(nil, uint32(declared))
	send = append(send, make([]byte, 1000)...)
	grew := framebuftest.StalledAlloc(t, func(l net.Listener) { go func() { _ = srv.Serve(l) }() }, peers, send)
	// Per connection: the 64 KiB read buffer, one 64 KiB chunk, goroutines' state; 64 MiB
	// is generous and far below the 500 MiB of the declared sizes.
	if grew > 64<<20 {
		t.Fatalf("%d peers stalled in a %d-byte frame after 1,000 bytes; the bookie allocated %d bytes", peers, declared, grew)
	}
	t.Logf("%d stalled peers: %d bytes allocated", peers, grew)
}
