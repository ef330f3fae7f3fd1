package wire

import (
	"encoding/binary"
	"fmt"
)

// Broker entry metadata as stored (PIP-70). Every entry of a persistent topic starts with
// the 0x0e02 block (see doc.go) that the topic service prepends when it appends the entry:
//
//	+--------+----------+----------------------------------------------+---------------+
//	| 0x0e02 | BEM_SIZE | BrokerEntryMetadata                          | entry (0x0e01 |
//	|  u16   |   u32    | 0x08 varint broker_timestamp (ms)            |  ...)         |
//	|        |          | 0x10 varint index (offset of the entry's     |               |
//	|        |          |      last message, counting from 0)          |               |
//	+--------+----------+----------------------------------------------+---------------+
//
// The same block is what MESSAGE carries to consumers that declared
// supports_broker_entry_metadata, so the stored bytes go out unchanged to them; the broker
// strips it (SplitHeadersAndPayload) for the others. ParseEntry skips it, so every reader of
// stored entries keeps working on entries with or without it.

// MaxBrokerEntryMetadataSize is the largest block PutBrokerEntryMetadata writes: magic, size,
// and two tagged 10-byte varints.
const MaxBrokerEntryMetadataSize = 2 + 4 + 2*(1+binary.MaxVarintLen64)

// PutBrokerEntryMetadata writes the 0x0e02 block holding brokerTimestamp and index so that
// it ends exactly at len(dst) (dst must have MaxBrokerEntryMetadataSize bytes) and returns
// where it starts: the caller copies the entry after dst first and slices from there, so the
// block costs no second copy of the entry.
func PutBrokerEntryMetadata(dst []byte, brokerTimestamp, index uint64) int {
	var body [2 * (1 + binary.MaxVarintLen64)]byte
	b := append(body[:0], 0x08)
	b = binary.AppendUvarint(b, brokerTimestamp)
	b = append(b, 0x10)
	b = binary.AppendUvarint(b, index)
	start := len(dst) - 6 - len(b)
	binary.BigEndian.PutUint16(dst[start:], MagicBrokerEntryMetadata)
	binary.BigEndian.PutUint32(dst[start+2:], uint32(len(b)))
	copy(dst[start+6:], b)
	return start
}

// AppendBrokerEntryMetadata appends the block and then entry to dst.
func AppendBrokerEntryMetadata(dst []byte, brokerTimestamp, index uint64, entry []byte) []byte {
	var head [MaxBrokerEntryMetadataSize]byte
	start := PutBrokerEntryMetadata(head[:], brokerTimestamp, index)
	return append(append(dst, head[start:]...), entry...)
}

// StoredIndex reads the index and broker timestamp of a stored entry's broker entry
// metadata without allocating; ok is false when the entry has no block or the block has no
// index (entries written before indexes existed).
func StoredIndex(data []byte) (index, brokerTimestamp int64, ok bool, err error) {
	raw, _, err := SplitHeadersAndPayload(data)
	if err != nil || raw == nil {
		return 0, 0, false, err
	}
	for b := raw; len(b) > 0; {
		tag, n := binary.Uvarint(b)
		if n <= 0 || tag&7 != 0 {
			// Not the two varints PutBrokerEntryMetadata writes: another encoder's block.
			bm, err := ParseBrokerEntryMetadata(raw)
			if err != nil {
				return 0, 0, false, err
			}
			return int64(bm.GetIndex()), int64(bm.GetBrokerTimestamp()), bm.Index != nil, nil
		}
		v, m := binary.Uvarint(b[n:])
		if m <= 0 {
			return 0, 0, false, fmt.Errorf("%w: broker entry metadata: truncated varint", ErrMalformed)
		}
		b = b[n+m:]
		switch tag >> 3 {
		case 1:
			brokerTimestamp = int64(v)
		case 2:
			index, ok = int64(v), true
		}
	}
	return index, brokerTimestamp, ok, nil
}
