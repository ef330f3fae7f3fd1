package txn

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

func TestStampEntry(t *testing.T) {
	md := &pb.MessageMetadata{
		ProducerName: proto.String("p"), SequenceId: proto.Uint64(7), PublishTime: proto.Uint64(1),
		NumMessagesInBatch: proto.Int32(3),
	}
	entry, err := wire.AppendEntry(nil, md, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	id := ID{2, 1 << 33}
	out, err := StampEntry(entry, md, id)
	if err != nil {
		t.Fatal(err)
	}
	e, err := wire.ParseEntry(out, true) // checksum verified
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.ParseMetadata(e.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetTxnidMostBits() != id.Most || got.GetTxnidLeastBits() != id.Least || got.GetSequenceId() != 7 || got.GetNumMessagesInBatch() != 3 {
		t.Fatalf("stamped metadata %v", got)
	}
	if !bytes.Equal(e.Payload, []byte("payload")) {
		t.Fatalf("payload %q", e.Payload)
	}
	if info := ParseEntryInfo(out); !info.InTxn || info.Txn != id || info.Marker != 0 {
		t.Fatalf("info %+v", info)
	}
	// Already stamped with the same id: unchanged, no copy.
	again, err := StampEntry(out, got, id)
	if err != nil || &again[0] != &out[0] {
		t.Fatalf("restamp: %v", err)
	}
	// A different id (a client that set another one) is overwritten.
	other, err := StampEntry(out, got, ID{5, 6})
	if err != nil {
		t.Fatal(err)
	}
	if info := ParseEntryInfo(other); info.Txn != (ID{5, 6}) {
		t.Fatalf("overwrite: %+v", info)
	}
	if _, err := StampEntry([]byte{1, 2, 3}, &pb.MessageMetadata{}, id); err == nil {
		t.Fatal("stamped garbage")
	}
}

func TestMarker(t *testing.T) {
	id := ID{1, 42}
	for _, a := range []Action{Commit, Abort} {
		m := NewMarker(a, id, 9, time.UnixMilli(5000))
		e, err := wire.ParseEntry(m, true)
		if err != nil {
			t.Fatal(err)
		}
		md, err := wire.ParseMetadata(e.Metadata)
		if err != nil {
			t.Fatal(err)
		}
		want := MarkerTxnCommit
		if a == Abort {
			want = MarkerTxnAbort
		}
		if md.GetMarkerType() != want || md.GetProducerName() != MarkerProducerName || md.GetSequenceId() != 9 || len(e.Payload) != 0 {
			t.Fatalf("%v marker metadata %v", a, md)
		}
		if info := ParseEntryInfo(m); info.Marker != want || info.Txn != id || !IsTxnMarker(info.Marker) {
			t.Fatalf("info %+v", info)
		}
	}
	if info := ParseEntryInfo([]byte("junk")); info.InTxn || info.Marker != 0 {
		t.Fatalf("junk: %+v", info)
	}
}
