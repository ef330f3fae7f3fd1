package ledger

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// entryHeaderSize is the size of the digest header the writer puts before each entry's
// data (layout in doc.go).
const entryHeaderSize = 36

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entryHeader is the decoded digest header of a stored entry.
type entryHeader struct {
	LedgerID int64
	EntryID  int64
	LAC      int64 // the writer's LAC when it created the entry
	Length   int64 // ledger length in data bytes up to and including this entry
}

// encodeEntry builds the payload a bookie stores: header, CRC32C (or 0 for DUMMY), data.
func encodeEntry(d DigestType, h entryHeader, data []byte) []byte {
	p := make([]byte, entryHeaderSize+len(data))
	putEntryHeader(p, d, h, data)
	copy(p[entryHeaderSize:], data)
	return p
}

// entryPrefix is the digest header of data: what encodeEntry puts before it. The writer
// sends it and the data as two slices, so the data is never copied.
func entryPrefix(d DigestType, h entryHeader, data []byte) []byte {
	p := make([]byte, entryHeaderSize)
	putEntryHeader(p, d, h, data)
	return p
}

// putEntryHeader writes the digest header of data into p[:entryHeaderSize].
func putEntryHeader(p []byte, d DigestType, h entryHeader, data []byte) {
	binary.BigEndian.PutUint64(p[0:], uint64(h.LedgerID))
	binary.BigEndian.PutUint64(p[8:], uint64(h.EntryID))
	binary.BigEndian.PutUint64(p[16:], uint64(h.LAC))
	binary.BigEndian.PutUint64(p[24:], uint64(h.Length))
	binary.BigEndian.PutUint32(p[32:], 0)
	if d == DigestCRC32C {
		c := crc32.Update(0, castagnoli, p[:32])
		binary.BigEndian.PutUint32(p[32:], crc32.Update(c, castagnoli, data))
	}
}

// entryChecksum is CRC32C over the 32 header bytes before the checksum and the data.
func entryChecksum(p []byte) uint32 {
	c := crc32.Update(0, castagnoli, p[:32])
	return crc32.Update(c, castagnoli, p[entryHeaderSize:])
}

// decodeEntry checks a stored payload against the digest and the ledger and entry it was
// asked for, and returns the header and the data (aliasing p). Every failure wraps
// ErrCorrupt: a damaged entry is never mistaken for a missing one.
func decodeEntry(d DigestType, p []byte, ledgerID, entryID int64) (entryHeader, []byte, error) {
	if len(p) < entryHeaderSize {
		return entryHeader{}, nil, fmt.Errorf("%w: ledger %d entry %d: payload of %d bytes is shorter than its header",
			ErrCorrupt, ledgerID, entryID, len(p))
	}
	h := entryHeader{
		LedgerID: int64(binary.BigEndian.Uint64(p[0:])),
		EntryID:  int64(binary.BigEndian.Uint64(p[8:])),
		LAC:      int64(binary.BigEndian.Uint64(p[16:])),
		Length:   int64(binary.BigEndian.Uint64(p[24:])),
	}
	if d == DigestCRC32C {
		if want, got := binary.BigEndian.Uint32(p[32:]), entryChecksum(p); want != got {
			return entryHeader{}, nil, fmt.Errorf("%w: ledger %d entry %d: crc32c %08x, stored %08x",
				ErrCorrupt, ledgerID, entryID, got, want)
		}
	}
	if h.LedgerID != ledgerID || h.EntryID != entryID {
		return entryHeader{}, nil, fmt.Errorf("%w: asked for ledger %d entry %d, got ledger %d entry %d",
			ErrCorrupt, ledgerID, entryID, h.LedgerID, h.EntryID)
	}
	if h.LAC < -1 || h.LAC >= h.EntryID || h.Length < int64(len(p)-entryHeaderSize) {
		return entryHeader{}, nil, fmt.Errorf("%w: ledger %d entry %d: bad header lac %d length %d",
			ErrCorrupt, ledgerID, entryID, h.LAC, h.Length)
	}
	return h, p[entryHeaderSize:], nil
}
