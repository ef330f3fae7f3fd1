package txn

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Entries of a topic that belong to transactions.
//
// A transactional entry carries its transaction id in its MessageMetadata (txnid_most_bits
// 23, txnid_least_bits 22), so that a topic's transaction buffer can rebuild itself from
// the topic's log alone. The Java client sets them itself; the Go client sends them only on
// CommandSend, so StampEntry adds them before the entry is stored.
//
// The end of a transaction on a topic is a marker entry (Pulsar's Markers.newTxnMarker): a
// MessageMetadata with producer_name "pulsar.txn.marker", the buffer's sequence_id,
// publish_time, marker_type TXN_COMMIT (21) or TXN_ABORT (22) and the transaction id, and
// an empty payload, CRC32C-checksummed. Dispatch never delivers markers.

// Marker types (Pulsar's MarkerType).
const (
	MarkerTxnCommitting int32 = 20
	MarkerTxnCommit     int32 = 21
	MarkerTxnAbort      int32 = 22
)

// MarkerProducerName is the producer name of transaction markers.
const MarkerProducerName = "pulsar.txn.marker"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// StampEntry returns the entry (the bytes from the 0x0e01 magic on) with id in its
// metadata: the two fields appended to the serialized metadata (protobuf keeps the last of
// a repeated scalar), metadata size and CRC32C rewritten. md is the entry's decoded
// metadata; when it already names id the entry is returned as it is.
func StampEntry(entry []byte, md *pb.MessageMetadata, id ID) ([]byte, error) {
	if md.TxnidMostBits != nil && md.TxnidLeastBits != nil && md.GetTxnidMostBits() == id.Most && md.GetTxnidLeastBits() == id.Least {
		return entry, nil
	}
	e, err := wire.ParseEntry(entry, false)
	if err != nil {
		return nil, err
	}
	var fields []byte
	fields = protoUvarintField(fields, 22, id.Least)
	fields = protoUvarintField(fields, 23, id.Most)
	out := make([]byte, 0, len(entry)+len(fields))
	out = append(out, entry[:10]...)
	out = append(out, e.Metadata...)
	out = append(out, fields...)
	out = append(out, e.Payload...)
	binary.BigEndian.PutUint32(out[6:], uint32(len(e.Metadata)+len(fields)))
	binary.BigEndian.PutUint32(out[2:], crc32.Checksum(out[6:], castagnoli))
	return out, nil
}

// protoUvarintField appends a varint field (wire type 0) of a protobuf message.
func protoUvarintField(b []byte, field int, v uint64) []byte {
	b = binary.AppendUvarint(b, uint64(field)<<3)
	return binary.AppendUvarint(b, v)
}

// NewMarker is the marker entry that ends id on a topic: TXN_COMMIT or TXN_ABORT.
func NewMarker(action Action, id ID, seq uint64, now time.Time) []byte {
	mt := MarkerTxnCommit
	if action == Abort {
		mt = MarkerTxnAbort
	}
	md := &pb.MessageMetadata{
		ProducerName:   proto.String(MarkerProducerName),
		SequenceId:     proto.Uint64(seq),
		PublishTime:    proto.Uint64(uint64(now.UnixMilli())),
		MarkerType:     proto.Int32(mt),
		TxnidMostBits:  proto.Uint64(id.Most),
		TxnidLeastBits: proto.Uint64(id.Least),
	}
	b, err := wire.AppendEntry(nil, md, nil)
	if err != nil {
		panic(fmt.Sprintf("txn: encoding a marker: %v", err)) // a fixed, valid message
	}
	return b
}

// EntryInfo is what the transaction buffer reads from a stored entry.
type EntryInfo struct {
	// Txn is the entry's transaction when InTxn.
	Txn   ID
	InTxn bool
	// Marker is the entry's marker type (0: a message).
	Marker int32
}

// ParseEntryInfo reads the transaction and marker fields of a stored entry. An entry that
// does not parse is a plain message (dispatch hands it to the consumer, which reports it).
func ParseEntryInfo(data []byte) EntryInfo {
	_, body, err := wire.SplitHeadersAndPayload(data)
	if err != nil {
		return EntryInfo{}
	}
	e, err := wire.ParseEntry(body, false)
	if err != nil {
		return EntryInfo{}
	}
	md, err := wire.ParseMetadata(e.Metadata)
	if err != nil {
		return EntryInfo{}
	}
	return InfoOf(md)
}

// InfoOf is the EntryInfo of decoded metadata.
func InfoOf(md *pb.MessageMetadata) EntryInfo {
	return EntryInfo{
		Txn:    ID{md.GetTxnidMostBits(), md.GetTxnidLeastBits()},
		InTxn:  md.TxnidMostBits != nil && md.TxnidLeastBits != nil,
		Marker: md.GetMarkerType(),
	}
}

// IsTxnMarker tells whether a marker type is one of transactions'.
func IsTxnMarker(mt int32) bool {
	return mt == MarkerTxnCommitting || mt == MarkerTxnCommit || mt == MarkerTxnAbort
}
