package proxy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// FuzzBrokerResponses feeds the fuzzer's bytes to the proxy as a broker's side of an
// upstream connection: first the handshake's reply (readOneFrame, which leaves the rest for
// the splice), then the response stream (upstream.readLoop, which answers PINGs and matches
// responses to pending requests by request id). Neither may panic or hang; frames past the
// limit are refused before their bytes are allocated; a pending request ends, with the
// broker's response or with the connection's error, once the broker's bytes run out.
func FuzzBrokerResponses(f *testing.F) {
	lookup := &pb.BaseCommand{Type: pb.BaseCommand_LOOKUP_RESPONSE.Enum(), LookupTopicResponse: &pb.CommandLookupTopicResponse{
		RequestId: u64(1), BrokerServiceUrl: strp("pulsar://b:6650"), Response: pb.CommandLookupTopicResponse_Connect.Enum()}}
	connected := &pb.BaseCommand{Type: pb.BaseCommand_CONNECTED.Enum(), Connected: &pb.CommandConnected{ServerVersion: strp("x")}}
	ping := &pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}}
	var seed []byte
	for _, c := range []*pb.BaseCommand{connected, ping, lookup} {
		b, err := wire.AppendCommand(nil, c)
		if err != nil {
			f.Fatal(err)
		}
		seed = append(seed, b...)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)-3])
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 2, 0, 0})
	const maxFrame = 64 << 10
	f.Fuzz(func(t *testing.T, data []byte) {
		// The handshake's one frame, and exactly its bytes.
		br := bufio.NewReader(bytes.NewReader(data))
		if fr, err := readOneFrame(br, maxFrame); err == nil && fr.Cmd == nil {
			t.Fatal("a frame without a command")
		}

		proxySide, brokerSide := net.Pipe()
		u := &upstream{addr: "broker", nc: proxySide, logger: slog.New(slog.DiscardHandler),
			pending: map[uint64]chan *pb.BaseCommand{}, done: make(chan struct{})}
		go func() { _, _ = io.Copy(io.Discard, brokerSide) }() // PONGs and requests
		go u.readLoop(bufio.NewReader(proxySide), maxFrame)
		go func() {
			_, _ = brokerSide.Write(data)
			_ = brokerSide.Close()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only catches a hang
		defer cancel()
		req := &pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{Topic: strp("t"), RequestId: u64(0)}}
		resp, err := u.request(ctx, req)
		if err == nil && resp == nil {
			t.Fatal("a request ended with neither a response nor an error")
		}
		if ctx.Err() != nil {
			t.Fatal("a request hung after the broker's bytes ran out")
		}
		<-u.done
	})
}

func u64(v uint64) *uint64  { return &v }
func strp(s string) *string { return &s }
