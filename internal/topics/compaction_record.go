package topics

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A compacted ledger (compaction.go) holds one record per entry of the topic that still has
// a live message: the entry's position, which members of a batch are kept, and the entry's
// stored bytes unchanged (broker entry metadata, metadata, payload). Keeping the bytes and
// masking the dropped members with the ack_set of MESSAGE (which the official clients
// honour) keeps every message's id, batch index included, without recompressing a batch:
//
//	u8 version (1) | uvarint ledger id | uvarint entry id | uvarint n | n x u64 LE kept
//	members (bit i set: member i is live; n = 0: the whole entry) | entry bytes

const compactedRecordVersion = 1

// errBadCompactedRecord is a compacted ledger entry that does not decode.
var errBadCompactedRecord = errors.New("topics: malformed compacted ledger record")

// compactedRecord is one decoded record; data aliases the encoded bytes.
type compactedRecord struct {
	pos  Position
	kept []uint64 // nil: every member
	data []byte
}

// appendCompactedRecord encodes r after dst.
func appendCompactedRecord(dst []byte, r compactedRecord) []byte {
	dst = append(dst, compactedRecordVersion)
	dst = binary.AppendUvarint(dst, uint64(r.pos.LedgerID))
	dst = binary.AppendUvarint(dst, uint64(r.pos.EntryID))
	dst = binary.AppendUvarint(dst, uint64(len(r.kept)))
	for _, w := range r.kept {
		dst = binary.LittleEndian.AppendUint64(dst, w)
	}
	return append(dst, r.data...)
}

// decodeCompactedRecord decodes one record.
func decodeCompactedRecord(b []byte) (compactedRecord, error) {
	var r compactedRecord
	if len(b) == 0 || b[0] != compactedRecordVersion {
		return r, fmt.Errorf("%w: unknown version", errBadCompactedRecord)
	}
	off := 1
	next := func(what string, limit uint64) (uint64, error) {
		v, n := binary.Uvarint(b[off:])
		if n <= 0 || v > limit {
			return 0, fmt.Errorf("%w: bad %s", errBadCompactedRecord, what)
		}
		off += n
		return v, nil
	}
	l, err := next("ledger id", 1<<63-1)
	if err != nil {
		return r, err
	}
	e, err := next("entry id", 1<<63-1)
	if err != nil {
		return r, err
	}
	// A batch has at most 2^31 members, so 2^25 words; the bytes must be there too.
	n, err := next("member mask length", 1<<25)
	if err != nil {
		return r, err
	}
	if uint64(len(b)-off) < n*8 {
		return r, fmt.Errorf("%w: member mask of %d words in %d bytes", errBadCompactedRecord, n, len(b)-off)
	}
	r.pos = Position{LedgerID: int64(l), EntryID: int64(e)}
	if n > 0 {
		r.kept = make([]uint64, n)
		for i := range r.kept {
			r.kept[i] = binary.LittleEndian.Uint64(b[off:])
			off += 8
		}
	}
	r.data = b[off:]
	return r, nil
}
