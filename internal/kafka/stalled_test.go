package kafka

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/framebuf/framebuftest"
)

// TestStalledRequestsHoldWhatArrived: 100 clients each declare a request of the largest
// allowed size (16 MiB here), send 1,000 bytes of it and stall. Allocating the declared size
// took 1.6 GB; the reader must hold about what arrived (framebuf.ReadFull), so the whole
// server allocates a few MiB. The bound is on allocated bytes, not on time.
func TestStalledRequestsHoldWhatArrived(t *testing.T) {
	const peers, declared = 100, 16 << 20
	cfg := config.DefaultKafkaConfig()
	cfg.Listeners = "PLAINTEXT://127.0.0.1:0"
	cfg.MaxRequestSize = declared
	s, err := New(Options{Config: cfg, Backend: newMemBackend(), ClusterID: "test-cluster"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	send := binary.BigEndian.AppendUint32(nil, declared)
	send = append(send, make([]byte, 1000)...)
	grew := framebuftest.StalledAlloc(t, func(l net.Listener) { s.Serve(l) }, peers, send)
	// Per connection: the 64 KiB read buffer, one 64 KiB chunk, goroutines' state; 64 MiB
	// is generous and far below the 1,600 MiB of the declared sizes.
	if grew > 64<<20 {
		t.Fatalf("%d clients stalled in a %d-byte request after 1,000 bytes; the server allocated %d bytes", peers, declared, grew)
	}
	t.Logf("%d stalled clients: %d bytes allocated", peers, grew)
}
