package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

func batchBody(t testing.TB, n int) []byte {
	t.Helper()
	var body []byte
	var err error
	for i := 0; i < n; i++ {
		smm := &pb.SingleMessageMetadata{SequenceId: proto.Uint64(uint64(i)), PartitionKey: proto.String(fmt.Sprint("k", i))}
		if body, err = AppendBatchMessage(body, smm, []byte(fmt.Sprint("msg-", i))); err != nil {
			t.Fatal(err)
		}
	}
	return body
}

func TestBatchReader(t *testing.T) {
	body := batchBody(t, 10)
	br := NewBatchReader(body, 10)
	var smm pb.SingleMessageMetadata
	for i := 0; i < 10; i++ {
		if br.Index() != i {
			t.Fatalf("index %d, want %d", br.Index(), i)
		}
		p, err := br.Next(&smm)
		if err != nil {
			t.Fatal(err)
		}
		if string(p) != fmt.Sprint("msg-", i) || smm.GetSequenceId() != uint64(i) || smm.GetPartitionKey() != fmt.Sprint("k", i) {
			t.Fatalf("message %d: %q %v", i, p, &smm)
		}
	}
	if _, err := br.Next(&smm); err != io.EOF {
		t.Fatalf("want io.EOF, got %v", err)
	}
	// Announcing more messages than the body holds is malformed, not a panic.
	br = NewBatchReader(body[:len(body)-3], 10)
	var err error
	for err == nil {
		_, err = br.Next(&smm)
	}
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("truncated body: got %v", err)
	}
}

func TestMessageCount(t *testing.T) {
	for _, tc := range []struct {
		n    *int32
		want int
	}{{nil, 1}, {proto.Int32(1), 1}, {proto.Int32(7), 7}, {proto.Int32(0), 1}, {proto.Int32(-3), 1}} {
		md := &pb.MessageMetadata{NumMessagesInBatch: tc.n}
		if got := MessageCount(md); got != tc.want {
			t.Errorf("MessageCount(%v) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func FuzzBatchReader(f *testing.F) {
	f.Add(batchBody(f, 3), uint8(3))
	f.Add(batchBody(f, 1), uint8(5))
	f.Add([]byte{0, 0, 0, 2, 0x18, 0x7f}, uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, n uint8) {
		br := NewBatchReader(body, int(n))
		var smm pb.SingleMessageMetadata
		total := 0
		for {
			p, err := br.Next(&smm)
			if err != nil {
				return
			}
			total += len(p)
			if total > len(body) || !bytes.Contains(body, p) {
				t.Fatal("payload outside the body")
			}
		}
	})
}
