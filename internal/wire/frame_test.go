package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

func ping() *pb.BaseCommand {
	return &pb.BaseCommand{Type: pb.BaseCommand_PING.Enum(), Ping: &pb.CommandPing{}}
}

func send(seq uint64) *pb.BaseCommand {
	return &pb.BaseCommand{Type: pb.BaseCommand_SEND.Enum(), Send: &pb.CommandSend{
		ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(seq)}}
}

func testEntry(t testing.TB, payload []byte) []byte {
	t.Helper()
	e, err := AppendEntry(nil, &pb.MessageMetadata{
		ProducerName: proto.String("p"), SequenceId: proto.Uint64(7), PublishTime: proto.Uint64(1)}, payload)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// stream builds a byte stream of mixed simple and payload frames.
func stream(t testing.TB) ([]byte, [][]byte) {
	t.Helper()
	var buf []byte
	var entries [][]byte
	var err error
	for i := 0; i < 5; i++ {
		if buf, err = AppendCommand(buf, ping()); err != nil {
			t.Fatal(err)
		}
		e := testEntry(t, bytes.Repeat([]byte{byte(i)}, i*1000))
		entries = append(entries, e)
		if buf, err = AppendPayloadCommand(buf, send(uint64(i)), nil, e); err != nil {
			t.Fatal(err)
		}
	}
	return buf, entries
}

func TestReadFrameRoundTrip(t *testing.T) {
	buf, entries := stream(t)
	for _, tc := range []struct {
		name string
		r    io.Reader
		size int
	}{
		{"whole", bytes.NewReader(buf), 64 * 1024},
		{"one-byte reads", iotest.OneByteReader(bytes.NewReader(buf)), 64 * 1024},
		{"frames larger than bufio buffer", iotest.HalfReader(bytes.NewReader(buf)), 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(bufio.NewReaderSize(tc.r, tc.size), 0)
			for i := 0; i < 5; i++ {
				f, err := r.ReadFrame()
				if err != nil {
					t.Fatal(err)
				}
				if f.Cmd.GetType() != pb.BaseCommand_PING || f.HeadersAndPayload != nil {
					t.Fatalf("frame %d: want bare PING, got %v", i, f.Cmd)
				}
				f, err = r.ReadFrame()
				if err != nil {
					t.Fatal(err)
				}
				if f.Cmd.GetSend().GetSequenceId() != uint64(i) || !bytes.Equal(f.HeadersAndPayload, entries[i]) {
					t.Fatalf("frame %d: send mismatch", i)
				}
				e, err := ParseEntry(f.HeadersAndPayload, true)
				if err != nil {
					t.Fatal(err)
				}
				if len(e.Payload) != i*1000 {
					t.Fatalf("payload %d bytes, want %d", len(e.Payload), i*1000)
				}
			}
			if _, err := r.ReadFrame(); err != io.EOF {
				t.Fatalf("want io.EOF at end, got %v", err)
			}
		})
	}
}

func TestReadFrameErrors(t *testing.T) {
	frame := func(total, cmdSize uint32, body []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, total)
		b = binary.BigEndian.AppendUint32(b, cmdSize)
		return append(b, body...)
	}
	good, _ := AppendCommand(nil, ping())
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"too large", frame(DefaultMaxFrameSize+1, 4, nil), ErrFrameTooLarge},
		{"huge", frame(0xFFFFFFFF, 4, nil), ErrFrameTooLarge},
		{"too small", frame(1, 0, nil), ErrMalformed},
		{"cmd size zero", frame(6, 0, []byte{1, 2}), ErrMalformed},
		{"cmd size beyond frame", frame(6, 100, []byte{1, 2}), ErrMalformed},
		{"garbage command", frame(8, 4, []byte{0xff, 0xff, 0xff, 0xff}), ErrMalformed},
		{"missing required type", frame(6, 2, []byte{0x92, 0x01}), ErrMalformed},
		{"type without body", frame(6, 2, []byte{0x08, 0x0b}), ErrMalformed},
		{"truncated", good[:len(good)-1], io.ErrUnexpectedEOF},
		{"truncated header", good[:2], io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(bufio.NewReader(bytes.NewReader(tc.in)), 0)
			_, err := r.ReadFrame()
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestMaxFrameSizeConfigurable(t *testing.T) {
	buf, err := AppendPayloadCommand(nil, send(1), nil, testEntry(t, make([]byte, 2000)))
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(bufio.NewReader(bytes.NewReader(buf)), 1000)
	if _, err := r.ReadFrame(); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("got %v, want ErrFrameTooLarge", err)
	}
}

func TestAppendCommandRequiresRequiredFields(t *testing.T) {
	cmd := &pb.BaseCommand{Type: pb.BaseCommand_CONNECTED.Enum(), Connected: &pb.CommandConnected{}}
	if _, err := AppendCommand(nil, cmd); err == nil {
		t.Fatal("CONNECTED without server_version must not marshal")
	}
}

func TestChecksumAndBrokerEntryMetadata(t *testing.T) {
	e := testEntry(t, []byte("hello"))
	bem, _ := proto.Marshal(&pb.BrokerEntryMetadata{BrokerTimestamp: proto.Uint64(5), Index: proto.Uint64(9)})
	buf, err := AppendPayloadCommand(nil, send(1), bem, e)
	if err != nil {
		t.Fatal(err)
	}
	f, err := DecodeFrame(buf)
	if err != nil {
		t.Fatal(err)
	}
	gotBEM, entry, err := SplitHeadersAndPayload(f.HeadersAndPayload)
	if err != nil || !bytes.Equal(gotBEM, bem) || !bytes.Equal(entry, e) {
		t.Fatalf("split: %v", err)
	}
	m, err := ParseBrokerEntryMetadata(gotBEM)
	if err != nil || m.GetIndex() != 9 {
		t.Fatalf("bem: %v %v", m, err)
	}
	bad := bytes.Clone(e)
	bad[len(bad)-1] ^= 1
	if _, err := ParseEntry(bad, true); !errors.Is(err, ErrChecksum) {
		t.Fatalf("got %v, want ErrChecksum", err)
	}
	if _, err := ParseEntry(bad, false); err != nil {
		t.Fatalf("unverified parse: %v", err)
	}
	md, err := ParseMetadata(mustEntry(t, e).Metadata)
	if err != nil || md.GetSequenceId() != 7 || IsBatch(md) || MessageCount(md) != 1 {
		t.Fatalf("metadata: %v %v", md, err)
	}
}

func mustEntry(t *testing.T, e []byte) Entry {
	t.Helper()
	p, err := ParseEntry(e, true)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWriterReuse(t *testing.T) {
	var w Writer
	for i := 0; i < 3; i++ {
		if err := w.WriteCommand(ping()); err != nil {
			t.Fatal(err)
		}
		if err := w.WritePayloadCommand(send(2), nil, testEntry(t, []byte("x"))); err != nil {
			t.Fatal(err)
		}
	}
	r := NewReader(bufio.NewReader(bytes.NewReader(w.Bytes())), 0)
	for i := 0; i < 6; i++ {
		if _, err := r.ReadFrame(); err != nil {
			t.Fatal(err)
		}
	}
	w.Reset()
	if w.Len() != 0 {
		t.Fatal("reset kept bytes")
	}
}

// FuzzReadFrame feeds arbitrary bytes through the streaming reader with arbitrary read
// splits: it must never panic, and every frame it accepts must re-encode to a frame that
// decodes to the same command.
func FuzzReadFrame(f *testing.F) {
	buf, _ := stream(f)
	f.Add(buf, uint8(1), uint16(64))
	good, _ := AppendCommand(nil, ping())
	f.Add(good, uint8(3), uint16(16))
	f.Add([]byte{0, 0, 0, 6, 0, 0, 0, 2, 8, 18}, uint8(0), uint16(16))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint8(2), uint16(16))
	f.Fuzz(func(t *testing.T, in []byte, split uint8, bufSize uint16) {
		var src io.Reader = bytes.NewReader(in)
		switch split % 3 {
		case 1:
			src = iotest.OneByteReader(src)
		case 2:
			src = iotest.HalfReader(src)
		}
		r := NewReader(bufio.NewReaderSize(src, int(bufSize)), 1<<16)
		for i := 0; i < 100; i++ {
			fr, err := r.ReadFrame()
			if err != nil {
				return
			}
			re, err := AppendPayloadCommand(nil, fr.Cmd, nil, fr.HeadersAndPayload)
			if err != nil {
				// Accepted commands may hold unknown fields, but never miss required ones.
				t.Fatalf("re-encode: %v", err)
			}
			back, err := DecodeFrame(re)
			if err != nil || back.Cmd.GetType() != fr.Cmd.GetType() {
				t.Fatalf("re-decode: %v", err)
			}
			if fr.HeadersAndPayload != nil {
				if _, entry, err := SplitHeadersAndPayload(fr.HeadersAndPayload); err == nil {
					_, _ = ParseEntry(entry, true)
				}
			}
		}
	})
}

// FuzzParseEntry exercises the payload-section decoders.
func FuzzParseEntry(f *testing.F) {
	f.Add(testEntry(f, []byte("payload")))
	bem, _ := proto.Marshal(&pb.BrokerEntryMetadata{Index: proto.Uint64(1)})
	withBEM := append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, MagicBrokerEntryMetadata), uint32(len(bem))), bem...)
	f.Add(append(withBEM, testEntry(f, nil)...))
	f.Add([]byte{0x0e, 0x01, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Add(AppendBrokerEntryMetadata(nil, 5, 1<<40, testEntry(f, nil)))
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _, _, _ = StoredIndex(in)
		_, _ = ParseEntry(in, true)
		b, entry, err := SplitHeadersAndPayload(in)
		if err != nil {
			return
		}
		if b != nil {
			_, _ = ParseBrokerEntryMetadata(b)
		}
		e, err := ParseEntry(entry, true)
		if err != nil {
			return
		}
		if md, err := ParseMetadata(e.Metadata); err == nil && MessageCount(md) < 1 {
			t.Fatal("message count below 1")
		}
	})
}

// FuzzParseMetadata exercises the MessageMetadata decoder and what the broker derives from
// it (message count, batch flag).
func FuzzParseMetadata(f *testing.F) {
	md, _ := proto.Marshal(&pb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(1),
		PublishTime: proto.Uint64(2), NumMessagesInBatch: proto.Int32(10), Compression: pb.CompressionType_LZ4.Enum(),
		UncompressedSize: proto.Uint32(100), OrderingKey: []byte("k")})
	f.Add(md)
	f.Add([]byte{0x0a, 0x01, 'p'})
	f.Add([]byte{0x58, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := ParseMetadata(in)
		if err != nil {
			return
		}
		if n := MessageCount(m); n < 1 || (!IsBatch(m) && n != 1) {
			t.Fatalf("message count %d for batch=%v", n, IsBatch(m))
		}
	})
}

// stallingReader yields its bytes, then blocks until released, like a client that declared
// a big frame and stopped sending.
type stallingReader struct {
	data    []byte
	drained chan struct{}
	release chan struct{}
}

func (s *stallingReader) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		close(s.drained)
		<-s.release
		return 0, io.EOF
	}
	n := copy(p, s.data)
	s.data = s.data[n:]
	return n, nil
}

// TestReadFrameAllocatesAsBytesArrive: a hostile client declares a frame near the 5 MiB
// limit and sends only a few bytes before stalling. The reader must hold about what it
// received, not the declared size (1,000 such connections each pinned 5 MiB before).
func TestReadFrameAllocatesAsBytesArrive(t *testing.T) {
	const declared = 5 << 20
	head := make([]byte, 4+100)
	binary.BigEndian.PutUint32(head, declared)
	sr := &stallingReader{data: head, drained: make(chan struct{}), release: make(chan struct{})}
	r := NewReader(bufio.NewReaderSize(sr, 64*1024), declared+64)
	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	done := make(chan error, 1)
	go func() { _, err := r.ReadFrame(); done <- err }()
	<-sr.drained // the reader took every byte sent and waits for more
	runtime.ReadMemStats(&during)
	close(sr.release)
	if err := <-done; !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("stalled frame: %v, want ErrUnexpectedEOF", err)
	}
	if grew := during.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("reading 104 bytes of a frame declared as %d allocated %d bytes", declared, grew)
	}
}

func TestStoredBrokerEntryMetadata(t *testing.T) {
	md := &pb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(1), PublishTime: proto.Uint64(7)}
	entry, err := AppendEntry(nil, md, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ ts, index uint64 }{{0, 0}, {1764400000000, 41}, {^uint64(0), ^uint64(0) >> 1}} {
		stored := AppendBrokerEntryMetadata(nil, c.ts, c.index, entry)
		// What PutBrokerEntryMetadata wrote is what the protobuf decoder reads.
		bem, rest, err := SplitHeadersAndPayload(stored)
		if err != nil || !bytes.Equal(rest, entry) {
			t.Fatalf("split: %v", err)
		}
		m, err := ParseBrokerEntryMetadata(bem)
		if err != nil || m.GetBrokerTimestamp() != c.ts || m.GetIndex() != c.index {
			t.Fatalf("proto decode of %+v: %v %v", c, m, err)
		}
		idx, ts, ok, err := StoredIndex(stored)
		if err != nil || !ok || uint64(idx) != c.index || uint64(ts) != c.ts {
			t.Fatalf("StoredIndex of %+v: %d %d %v %v", c, idx, ts, ok, err)
		}
		// Readers of stored entries see the entry behind the block, checksum and all.
		e, err := ParseEntry(stored, true)
		if err != nil || string(e.Payload) != "payload" {
			t.Fatalf("ParseEntry: %v", err)
		}
		// Only one block is skipped.
		if _, err := ParseEntry(AppendBrokerEntryMetadata(nil, 1, 2, stored), false); err == nil {
			t.Fatal("an entry behind two blocks parsed")
		}
	}
	// A block written by another encoder (protobuf, index only) reads the same.
	raw, _ := proto.Marshal(&pb.BrokerEntryMetadata{Index: proto.Uint64(9)})
	other := append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, MagicBrokerEntryMetadata), uint32(len(raw))), raw...)
	if idx, _, ok, err := StoredIndex(append(other, entry...)); err != nil || !ok || idx != 9 {
		t.Fatalf("protobuf-written block: %d %v %v", idx, ok, err)
	}
	if _, _, ok, err := StoredIndex(entry); ok || err != nil {
		t.Fatalf("entry without a block: %v %v", ok, err)
	}
}
