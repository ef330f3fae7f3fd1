package entrylog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
)

const (
	// HeaderSize is the size of a log's file header.
	HeaderSize = 32
	// RecordHeaderSize precedes every payload.
	RecordHeaderSize = 24
	// MaxPayload bounds a payload; a longer length is corruption.
	MaxPayload = 64 << 20

	magic   = "MGEL"
	version = 1
	// writeBuffer is how much a Writer gathers before one pwrite.
	writeBuffer = 1 << 20
)

// Errors of the entry log.
var (
	ErrCorrupt = errors.New("entrylog: corrupt record")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FileName is the name of log id.
func FileName(id uint64) string { return fmt.Sprintf("%016x.log", id) }

// ParseFileName returns the id of a log file name.
func ParseFileName(name string) (uint64, bool) {
	var id uint64
	if len(name) != 20 || name[16:] != ".log" {
		return 0, false
	}
	if _, err := fmt.Sscanf(name[:16], "%016x", &id); err != nil {
		return 0, false
	}
	return id, true
}

// AppendRecord appends one encoded record to b.
func AppendRecord(b []byte, ledgerID, entryID int64, payload []byte) []byte {
	start := len(b)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(ledgerID))
	b = binary.BigEndian.AppendUint64(b, uint64(entryID))
	b = append(b, payload...)
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(b[start+8:], castagnoli))
	return b
}

// Record is one decoded record; Payload aliases the decoded buffer.
type Record struct {
	LedgerID, EntryID int64
	Payload           []byte
}

// DecodeRecord decodes the record at the start of b and returns its encoded size.
func DecodeRecord(b []byte) (Record, int, error) {
	if len(b) < RecordHeaderSize {
		return Record{}, 0, fmt.Errorf("%w: %d bytes, need a %d-byte header", ErrCorrupt, len(b), RecordHeaderSize)
	}
	n := binary.BigEndian.Uint32(b)
	if n > MaxPayload {
		return Record{}, 0, fmt.Errorf("%w: payload length %d", ErrCorrupt, n)
	}
	total := RecordHeaderSize + int(n)
	if len(b) < total {
		return Record{}, 0, fmt.Errorf("%w: record of %d bytes cut at %d", ErrCorrupt, total, len(b))
	}
	if crc32.Checksum(b[8:total], castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return Record{}, 0, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	return Record{
		LedgerID: int64(binary.BigEndian.Uint64(b[8:])),
		EntryID:  int64(binary.BigEndian.Uint64(b[16:])),
		Payload:  b[RecordHeaderSize:total],
	}, total, nil
}

func header(id uint64) []byte {
	h := make([]byte, HeaderSize)
	copy(h, magic)
	binary.BigEndian.PutUint32(h[4:], version)
	binary.BigEndian.PutUint64(h[8:], id)
	return h
}

// CheckHeader verifies a log header.
func CheckHeader(h []byte, id uint64) error {
	if len(h) < HeaderSize || string(h[:4]) != magic {
		return fmt.Errorf("%w: bad log magic", ErrCorrupt)
	}
	if v := binary.BigEndian.Uint32(h[4:]); v != version {
		return fmt.Errorf("%w: unknown log version %d", ErrCorrupt, v)
	}
	if got := binary.BigEndian.Uint64(h[8:]); got != id {
		return fmt.Errorf("%w: header says log %d, name says %d", ErrCorrupt, got, id)
	}
	return nil
}

// Log is one open entry log. Reads are safe concurrently with each other and with the one
// writer (the flusher); appends are buffered until Flush.
type Log struct {
	ID   uint64
	File vfs.File
	path string
	size int64  // bytes written or buffered
	buf  []byte // pending bytes, written at size-len(buf)
	// Writeback, with a Step, starts the kernel's writeback of what Flush wrote every Step
	// bytes and waits for the previous chunk's. A flush of a whole write-cache generation
	// would otherwise leave tens of MiB dirty for one final fdatasync, and every journal
	// fdatasync behind that burst waits for it: this bounds the entry log's queued writes
	// to about one chunk (BookKeeper's flushEntrylogBytes).
	Writeback vfs.WritebackPacer
}

// Create creates log id in dir and writes its header (not yet synced).
func Create(fs vfs.FS, dir string, id uint64) (*Log, error) {
	path := filepath.Join(dir, FileName(id))
	f, err := fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("entrylog: create %s: %w", path, err)
	}
	if _, err := f.WriteAt(header(id), 0); err != nil {
		_ = f.Close()
		_ = fs.Remove(path)
		return nil, fmt.Errorf("entrylog: write header of %s: %w", path, err)
	}
	return &Log{ID: id, File: f, path: path, size: HeaderSize}, nil
}

// OpenExisting opens a log for reading (and compaction scans).
func OpenExisting(fs vfs.FS, dir string, id uint64) (*Log, error) {
	path := filepath.Join(dir, FileName(id))
	f, err := fs.OpenReadWrite(path)
	if err != nil {
		return nil, fmt.Errorf("entrylog: open %s: %w", path, err)
	}
	size, err := f.Size()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("entrylog: size of %s: %w", path, err)
	}
	return &Log{ID: id, File: f, path: path, size: size}, nil
}

// Size is the log's size including buffered bytes.
func (l *Log) Size() int64 { return l.size }

// Append buffers a record and returns its offset and encoded size.
func (l *Log) Append(ledgerID, entryID int64, payload []byte) (int64, int, error) {
	if len(payload) > MaxPayload {
		return 0, 0, fmt.Errorf("entrylog: payload of %d bytes exceeds %d", len(payload), MaxPayload)
	}
	n := RecordHeaderSize + len(payload)
	if len(l.buf) > 0 && len(l.buf)+n > writeBuffer {
		if err := l.Flush(); err != nil {
			return 0, 0, err
		}
	}
	off := l.size
	l.buf = AppendRecord(l.buf, ledgerID, entryID, payload)
	l.size += int64(n)
	return off, n, nil
}

// Flush writes buffered records to the file (without syncing).
func (l *Log) Flush() error {
	if len(l.buf) == 0 {
		return nil
	}
	if _, err := l.File.WriteAt(l.buf, l.size-int64(len(l.buf))); err != nil {
		return fmt.Errorf("entrylog: write %s: %w", l.path, err)
	}
	l.buf = l.buf[:0]
	if cap(l.buf) > 2*writeBuffer {
		l.buf = nil
	}
	if err := l.Writeback.Advance(l.File, l.size); err != nil {
		return fmt.Errorf("entrylog: writeback %s: %w", l.path, err)
	}
	return nil
}

// Sync flushes and syncs the log.
func (l *Log) Sync() error {
	if err := l.Flush(); err != nil {
		return err
	}
	if err := l.File.Sync(); err != nil {
		return fmt.Errorf("entrylog: sync %s: %w", l.path, err)
	}
	return nil
}

// Read reads and verifies the record of (ledgerID, entryID) at off, size bytes long, and
// returns a copy of its payload.
func (l *Log) Read(ledgerID, entryID, off int64, size int) ([]byte, error) {
	buf := make([]byte, size)
	if _, err := l.File.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("%w: log %d offset %d: %w", ErrCorrupt, l.ID, off, err)
	}
	rec, n, err := DecodeRecord(buf)
	if err != nil {
		return nil, fmt.Errorf("log %d offset %d: %w", l.ID, off, err)
	}
	if n != size || rec.LedgerID != ledgerID || rec.EntryID != entryID {
		return nil, fmt.Errorf("%w: log %d offset %d holds (%d,%d) of %d bytes, index says (%d,%d) of %d",
			ErrCorrupt, l.ID, off, rec.LedgerID, rec.EntryID, n, ledgerID, entryID, size)
	}
	return rec.Payload, nil
}

// ReadSpan reads bytes [off, off+n) of the log (for read-ahead of adjacent records).
func (l *Log) ReadSpan(off int64, n int) ([]byte, error) {
	buf := make([]byte, n)
	if _, err := l.File.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("%w: log %d span at %d: %w", ErrCorrupt, l.ID, off, err)
	}
	return buf, nil
}

// Scan calls fn for every record of the log in order, stopping at the first record that
// does not decode (a torn tail, or the end). Used by compaction.
func (l *Log) Scan(fn func(rec Record, off int64, size int) error) error {
	if err := l.Flush(); err != nil {
		return err
	}
	hdr := make([]byte, HeaderSize)
	if _, err := l.File.ReadAt(hdr, 0); err != nil {
		return fmt.Errorf("%w: log %d header: %w", ErrCorrupt, l.ID, err)
	}
	if err := CheckHeader(hdr, l.ID); err != nil {
		return err
	}
	var rh [RecordHeaderSize]byte
	var buf []byte
	for off := int64(HeaderSize); off+RecordHeaderSize <= l.size; {
		if _, err := l.File.ReadAt(rh[:], off); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("entrylog: scan log %d at %d: %w", l.ID, off, err)
		}
		n := RecordHeaderSize + int(binary.BigEndian.Uint32(rh[:]))
		if n > RecordHeaderSize+MaxPayload || off+int64(n) > l.size {
			return nil
		}
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := l.File.ReadAt(buf, off); err != nil {
			return fmt.Errorf("entrylog: scan log %d at %d: %w", l.ID, off, err)
		}
		rec, _, err := DecodeRecord(buf)
		if err != nil {
			return nil
		}
		if err := fn(rec, off, n); err != nil {
			return err
		}
		off += int64(n)
	}
	return nil
}

// Close closes the file (buffered records not flushed are dropped).
func (l *Log) Close() error { return l.File.Close() }
