package wire

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// castagnoli is the CRC32C table; crc32 uses the hardware instruction where it exists.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entryHeaderSize is magic + checksum + metadata size.
const entryHeaderSize = 2 + 4 + 4

// Entry is a parsed entry (headers-and-payload from the 0x0e01 magic on). Its slices alias
// the input.
type Entry struct {
	Checksum uint32
	Metadata []byte // marshalled MessageMetadata
	Payload  []byte // message body, possibly compressed
}

// SplitHeadersAndPayload separates the optional 0x0e02 broker entry metadata block (returned
// as the marshalled BrokerEntryMetadata, nil if absent) from the entry that follows it.
func SplitHeadersAndPayload(hp []byte) (bem, entry []byte, err error) {
	if len(hp) >= 2 && binary.BigEndian.Uint16(hp) == MagicBrokerEntryMetadata {
		if len(hp) < 6 {
			return nil, nil, fmt.Errorf("%w: truncated broker entry metadata header", ErrMalformed)
		}
		n := uint64(binary.BigEndian.Uint32(hp[2:]))
		if n > uint64(len(hp)-6) {
			return nil, nil, fmt.Errorf("%w: broker entry metadata of %d bytes in %d", ErrMalformed, n, len(hp)-6)
		}
		bem, hp = hp[6:6+n], hp[6+n:]
	}
	return bem, hp, nil
}

// ParseEntry parses an entry and, if verify is set, checks its CRC32C (an error wrapping
// ErrChecksum on mismatch). A stored entry's leading broker entry metadata block (bem.go) is
// skipped; only one: a second one is not an entry.
func ParseEntry(entry []byte, verify bool) (Entry, error) {
	if len(entry) >= 2 && binary.BigEndian.Uint16(entry) == MagicBrokerEntryMetadata {
		var err error
		if _, entry, err = SplitHeadersAndPayload(entry); err != nil {
			return Entry{}, err
		}
	}
	if len(entry) < entryHeaderSize {
		return Entry{}, fmt.Errorf("%w: entry of %d bytes is shorter than its header", ErrMalformed, len(entry))
	}
	if m := binary.BigEndian.Uint16(entry); m != MagicCRC32C {
		return Entry{}, fmt.Errorf("%w: entry magic %#04x, want %#04x", ErrMalformed, m, MagicCRC32C)
	}
	e := Entry{Checksum: binary.BigEndian.Uint32(entry[2:])}
	mdSize := uint64(binary.BigEndian.Uint32(entry[6:]))
	if mdSize > uint64(len(entry)-entryHeaderSize) {
		return Entry{}, fmt.Errorf("%w: metadata size %d exceeds the %d bytes left", ErrMalformed, mdSize, len(entry)-entryHeaderSize)
	}
	if verify {
		if sum := crc32.Checksum(entry[6:], castagnoli); sum != e.Checksum {
			return Entry{}, fmt.Errorf("%w: computed %#08x, frame says %#08x", ErrChecksum, sum, e.Checksum)
		}
	}
	e.Metadata = entry[entryHeaderSize : entryHeaderSize+mdSize]
	e.Payload = entry[entryHeaderSize+mdSize:]
	return e, nil
}

// ParseMetadata unmarshals a MessageMetadata (an error wrapping ErrMalformed if it is not
// one, including when a required field is missing).
func ParseMetadata(raw []byte) (*pb.MessageMetadata, error) {
	md := &pb.MessageMetadata{}
	if err := proto.Unmarshal(raw, md); err != nil {
		return nil, fmt.Errorf("%w: message metadata: %w", ErrMalformed, err)
	}
	return md, nil
}

// ParseBrokerEntryMetadata unmarshals the block SplitHeadersAndPayload returned.
func ParseBrokerEntryMetadata(raw []byte) (*pb.BrokerEntryMetadata, error) {
	bem := &pb.BrokerEntryMetadata{}
	if err := proto.Unmarshal(raw, bem); err != nil {
		return nil, fmt.Errorf("%w: broker entry metadata: %w", ErrMalformed, err)
	}
	return bem, nil
}

// AppendEntry appends an entry (magic, checksum, metadata, payload) to dst, as a producer
// writes it after its SEND command.
func AppendEntry(dst []byte, md *pb.MessageMetadata, payload []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	var err error
	dst, err = marshal.MarshalAppend(dst, md)
	if err != nil {
		return dst[:start], fmt.Errorf("wire: marshal message metadata: %w", err)
	}
	binary.BigEndian.PutUint16(dst[start:], MagicCRC32C)
	binary.BigEndian.PutUint32(dst[start+6:], uint32(len(dst)-start-entryHeaderSize))
	dst = append(dst, payload...)
	binary.BigEndian.PutUint32(dst[start+2:], crc32.Checksum(dst[start+6:], castagnoli))
	return dst, nil
}

// MessageCount is the number of messages an entry with this metadata holds: its
// num_messages_in_batch when present (a batch), else 1. A corrupt count below 1 counts as 1
// so that permit accounting always makes progress.
func MessageCount(md *pb.MessageMetadata) int {
	if md.NumMessagesInBatch == nil {
		return 1
	}
	if n := int(md.GetNumMessagesInBatch()); n > 1 {
		return n
	}
	return 1
}

// IsBatch tells whether the payload of an entry with this metadata is a batch body.
func IsBatch(md *pb.MessageMetadata) bool { return md.NumMessagesInBatch != nil }
