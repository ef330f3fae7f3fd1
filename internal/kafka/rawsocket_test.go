package kafka

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func rawRequest(t *testing.T, c net.Conn, key, version int16, body []byte) {
	t.Helper()
	var b []byte
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 42)
	b = binary.BigEndian.AppendUint16(b, 3)
	b = append(b, "raw"...)
	if version >= 3 && key == kmsg.ApiVersions.Int16() {
		b = append(b, 0) // header tags
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

func readResponse(t *testing.T, c net.Conn) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("connection still open after a bad request (read: %v)", err)
	}
}

// TestBadRequestsCloseOnlyTheirConnection: an unknown API, an unsupported version, a
// truncated body and an oversized frame each close their own connection; a client on
// another connection carries on; a too-new ApiVersions gets UNSUPPORTED_VERSION in v0.
func TestBadRequestsCloseOnlyTheirConnection(t *testing.T) {
	s, _, addr := startMem(t, func(c *kafkaConfigT) { c.MaxRequestSize = 1 << 20 })
	ctx := testCtx(t)
	good := newClient(t, addr, kgo.AllowAutoTopicCreation())
	if err := good.ProduceSync(ctx, &kgo.Record{Topic: "bad", Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// ApiVersions v99: answered in v0 with UNSUPPORTED_VERSION and our ranges.
	c := dial()
	rawRequest(t, c, kmsg.ApiVersions.Int16(), 99, nil)
	b := readResponse(t, c)
	if corr := int32(binary.BigEndian.Uint32(b)); corr != 42 {
		t.Fatalf("correlation id %d", corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(b[4:]); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != len(apis) {
		t.Fatalf("ApiVersions v99: code %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
	before := testutilCount(s)
	for name, send := range map[string]func(net.Conn){
		"unknown API":   func(c net.Conn) { rawRequest(t, c, 9999, 0, nil) },
		"old version":   func(c net.Conn) { rawRequest(t, c, kmsg.Produce.Int16(), 0, nil) },
		"truncated":     func(c net.Conn) { rawRequest(t, c, kmsg.Metadata.Int16(), 1, []byte{0, 0, 0, 5, 0}) },
		"short header":  func(c net.Conn) { _, _ = c.Write([]byte{0, 0, 0, 2, 0, 1}) },
		"oversized":     func(c net.Conn) { _, _ = c.Write([]byte{0x7f, 0, 0, 0}) },
		"negative size": func(c net.Conn) { _, _ = c.Write([]byte{0xff, 0xff, 0xff, 0xff}) },
	} {
		t.Run(name, func(t *testing.T) {
			c := dial()
			send(c)
			expectClosed(t, c)
		})
	}
	if after := testutilCount(s); after-before != 6 {
		t.Fatalf("malformed counter moved by %v, want 6", after-before)
	}
	if err := good.ProduceSync(ctx, &kgo.Record{Topic: "bad", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("the well-behaved client was disturbed: %v", err)
	}
}
