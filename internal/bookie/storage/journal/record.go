package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Kind is a record's type, its first body byte.
type Kind uint8

// Record kinds.
const (
	KindAdd   Kind = 1
	KindFence Kind = 2
)

const (
	// HeaderSize is the size of a file header.
	HeaderSize = 16
	// RecordHeaderSize is the length and CRC before each body.
	RecordHeaderSize = 8
	// MaxBody bounds a record body; longer lengths are corruption.
	MaxBody = 64 << 20
	// MaxMasterKey bounds the master key (u16 on disk; BookKeeper's is 20 bytes).
	MaxMasterKey = 1024

	fileMagic   = "MGJL"
	fileVersion = 1
	addFixed    = 1 + 8 + 8 + 8 + 2
	fenceFixed  = 1 + 8 + 2
)

// Errors of the journal.
var (
	ErrCorrupt   = errors.New("journal: corrupt record")
	ErrTruncated = errors.New("journal: truncated record")
	ErrEnd       = errors.New("journal: end of records")
	ErrTooLarge  = errors.New("journal: record too large")
	ErrClosed    = errors.New("journal: closed")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record is one journal record. Decoded records alias the buffer they came from.
type Record struct {
	Kind      Kind
	LedgerID  int64
	EntryID   int64
	LAC       int64
	MasterKey []byte
	Payload   []byte
	// Recovery marks a recovery add for Options.Admit; it is not stored.
	Recovery bool
}

// bodySize is the encoded body length.
func (r *Record) bodySize() int {
	if r.Kind == KindFence {
		return fenceFixed + len(r.MasterKey)
	}
	return addFixed + len(r.MasterKey) + len(r.Payload)
}

// EncodedSize is the record's size on disk, header included.
func (r *Record) EncodedSize() int { return RecordHeaderSize + r.bodySize() }

// Validate checks the record can be encoded.
func (r *Record) Validate() error {
	if r.Kind != KindAdd && r.Kind != KindFence {
		return fmt.Errorf("journal: unknown record kind %d", r.Kind)
	}
	if len(r.MasterKey) > MaxMasterKey {
		return fmt.Errorf("%w: master key of %d bytes", ErrTooLarge, len(r.MasterKey))
	}
	if r.bodySize() > MaxBody {
		return fmt.Errorf("%w: %d bytes (max %d)", ErrTooLarge, r.bodySize(), MaxBody)
	}
	return nil
}

// AppendTo appends the encoded record to b. The record must be valid.
func (r *Record) AppendTo(b []byte) []byte {
	n := r.bodySize()
	start := len(b)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = binary.BigEndian.AppendUint32(b, 0) // CRC, filled below
	body := len(b)
	b = append(b, byte(r.Kind))
	b = binary.BigEndian.AppendUint64(b, uint64(r.LedgerID))
	if r.Kind == KindAdd {
		b = binary.BigEndian.AppendUint64(b, uint64(r.EntryID))
		b = binary.BigEndian.AppendUint64(b, uint64(r.LAC))
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.MasterKey)))
	b = append(b, r.MasterKey...)
	if r.Kind == KindAdd {
		b = append(b, r.Payload...)
	}
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(b[body:], castagnoli))
	return b
}

// Decode decodes the record at the start of b and returns it with its encoded size.
// It returns ErrEnd for a zero length (preallocated space), ErrTruncated when b ends inside
// the record, and ErrCorrupt for a bad length, CRC or body. The record aliases b.
func Decode(b []byte) (Record, int, error) {
	if len(b) < RecordHeaderSize {
		if allZero(b) {
			return Record{}, 0, ErrEnd
		}
		return Record{}, 0, ErrTruncated
	}
	n := binary.BigEndian.Uint32(b)
	if n == 0 {
		return Record{}, 0, ErrEnd
	}
	if n > MaxBody {
		return Record{}, 0, fmt.Errorf("%w: length %d", ErrCorrupt, n)
	}
	total := RecordHeaderSize + int(n)
	if len(b) < total {
		return Record{}, 0, ErrTruncated
	}
	body := b[RecordHeaderSize:total]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return Record{}, 0, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	r, err := decodeBody(body)
	if err != nil {
		return Record{}, 0, err
	}
	return r, total, nil
}

func decodeBody(body []byte) (Record, error) {
	var r Record
	r.Kind = Kind(body[0])
	switch r.Kind {
	case KindAdd:
		if len(body) < addFixed {
			return r, fmt.Errorf("%w: add body of %d bytes", ErrCorrupt, len(body))
		}
		r.LedgerID = int64(binary.BigEndian.Uint64(body[1:]))
		r.EntryID = int64(binary.BigEndian.Uint64(body[9:]))
		r.LAC = int64(binary.BigEndian.Uint64(body[17:]))
		k := int(binary.BigEndian.Uint16(body[25:]))
		if len(body) < addFixed+k {
			return r, fmt.Errorf("%w: master key past the body", ErrCorrupt)
		}
		r.MasterKey = body[addFixed : addFixed+k]
		r.Payload = body[addFixed+k:]
	case KindFence:
		if len(body) < fenceFixed {
			return r, fmt.Errorf("%w: fence body of %d bytes", ErrCorrupt, len(body))
		}
		r.LedgerID = int64(binary.BigEndian.Uint64(body[1:]))
		k := int(binary.BigEndian.Uint16(body[9:]))
		if len(body) != fenceFixed+k {
			return r, fmt.Errorf("%w: fence body length", ErrCorrupt)
		}
		r.MasterKey = body[fenceFixed:]
	default:
		return r, fmt.Errorf("%w: unknown kind %d", ErrCorrupt, body[0])
	}
	if r.LedgerID < 0 || r.EntryID < 0 {
		return r, fmt.Errorf("%w: negative id", ErrCorrupt)
	}
	return r, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// fileHeader encodes a file header.
func fileHeader(id uint64) []byte {
	h := make([]byte, HeaderSize)
	copy(h, fileMagic)
	binary.BigEndian.PutUint32(h[4:], fileVersion)
	binary.BigEndian.PutUint64(h[8:], id)
	return h
}

// checkHeader verifies a file header against the file's id.
func checkHeader(h []byte, id uint64) error {
	if len(h) < HeaderSize || string(h[:4]) != fileMagic {
		return fmt.Errorf("%w: bad file magic", ErrCorrupt)
	}
	if v := binary.BigEndian.Uint32(h[4:]); v != fileVersion {
		return fmt.Errorf("%w: unknown file version %d", ErrCorrupt, v)
	}
	if got := binary.BigEndian.Uint64(h[8:]); got != id {
		return fmt.Errorf("%w: header says file %d, name says %d", ErrCorrupt, got, id)
	}
	return nil
}

// FileName is the name of journal file id.
func FileName(id uint64) string { return fmt.Sprintf("%016x.txn", id) }

// ParseFileName returns the id of a journal file name.
func ParseFileName(name string) (uint64, bool) {
	var id uint64
	if len(name) != 20 || name[16:] != ".txn" {
		return 0, false
	}
	if _, err := fmt.Sscanf(name[:16], "%016x", &id); err != nil {
		return 0, false
	}
	return id, true
}
