package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
)

// ReplayStats tells what a replay found.
type ReplayStats struct {
	Files   int
	Records int
	// Torn counts files whose records ended in a torn or corrupt record (not clean zeros).
	Torn int
	// LastFile is the highest journal file id present (0 if none).
	LastFile uint64
	// Damaged lists the corrupt records skipped in the middle of files: acknowledged
	// entries may have been lost there, so the caller must not answer "no such entry" for
	// what they might have held.
	Damaged []Damage
}

// Damage is one skipped corrupt region in the middle of a journal file.
type Damage struct {
	File         uint64
	Offset, Size int64
	// Suspect is set when the damaged bytes still frame exactly one add record of a ledger
	// that other records of the file also belong to: then only that ledger's entry
	// SuspectEntry (and, being conservative, nothing else) can have been lost. A bit flip
	// in a payload, the common case, leaves the frame and the ids readable.
	Suspect                     bool
	SuspectLedger, SuspectEntry int64
	// Ledgers are the ledgers with records in the file: when the damage cannot be
	// attributed, any of them may have lost an entry.
	Ledgers []int64
}

// readChunk is how much replay reads per pread; records longer than that are read whole.
const readChunk = 1 << 20

// Replay calls fn for every record at or after from, in journal order, with the position
// just past the record. Record slices are valid only during the call.
func Replay(fs vfs.FS, dir string, from Pos, log *slog.Logger, fn func(r *Record, end Pos) error) (ReplayStats, error) {
	var st ReplayStats
	names, err := fs.List(dir)
	if err != nil {
		return st, fmt.Errorf("journal: list %s: %w", dir, err)
	}
	for _, name := range names {
		id, ok := ParseFileName(name)
		if !ok {
			continue
		}
		st.LastFile = max(st.LastFile, id)
		if id < from.File {
			continue
		}
		start := int64(HeaderSize)
		if id == from.File {
			start = max(start, from.Offset)
		}
		n, torn, damage, err := replayFile(fs, filepath.Join(dir, name), id, start, log, fn)
		st.Damaged = append(st.Damaged, damage...)
		st.Files++
		st.Records += n
		if torn {
			st.Torn++
		}
		if err != nil {
			return st, err
		}
	}
	return st, nil
}

func replayFile(fs vfs.FS, path string, id uint64, start int64, log *slog.Logger, fn func(*Record, Pos) error) (count int, torn bool, damage []Damage, err error) {
	ledgers := map[int64]struct{}{}
	defer func() { damage = attribute(damage, ledgers) }()
	count, torn, err = scanFile(fs, path, id, start, log, func(r *Record, p Pos) error {
		ledgers[r.LedgerID] = struct{}{}
		return fn(r, p)
	}, &damage)
	return count, torn, damage, err
}

// scanFile is replayFile without the attribution of damage to ledgers.
func scanFile(fs vfs.FS, path string, id uint64, start int64, log *slog.Logger, fn func(*Record, Pos) error, damage *[]Damage) (int, bool, error) {
	f, err := fs.OpenReadWrite(path)
	if err != nil {
		return 0, false, fmt.Errorf("journal: open %s: %w", path, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0, false, fmt.Errorf("journal: size of %s: %w", path, err)
	}
	hdr := make([]byte, HeaderSize)
	if _, err := f.ReadAt(hdr, 0); err != nil || checkHeader(hdr, id) != nil {
		// A crash between creating the file and syncing its header leaves it empty or
		// partial: nothing in it was ever acknowledged.
		log.Warn("journal file has no valid header; skipping it", "file", path, "size", size)
		return 0, true, nil
	}
	var (
		buf   []byte // buf holds file bytes [bufAt, bufAt+len(buf))
		bufAt = start
		off   = start
		count int
		torn  bool
	)
	for off < size {
		rel := int(off - bufAt)
		r, n, derr := Decode(buf[rel:])
		if errors.Is(derr, ErrTruncated) || (errors.Is(derr, ErrEnd) && len(buf)-rel < RecordHeaderSize) {
			// Need more bytes: refill from off, at least one chunk or the whole record.
			want := readChunk
			if len(buf)-rel >= RecordHeaderSize {
				want = max(want, RecordHeaderSize+int(uint32be(buf[rel:])))
			}
			want = int(min(int64(want), size-off))
			if want <= len(buf)-rel { // nothing more in the file
				if derr != nil && errors.Is(derr, ErrTruncated) {
					log.Warn("journal ends in a torn record; replay of this file stops there", "file", path, "offset", off)
					return count, true, nil
				}
				return count, torn, nil
			}
			if cap(buf) < want {
				buf = make([]byte, want)
			}
			buf = buf[:want]
			m, rerr := f.ReadAt(buf, off)
			if rerr != nil && !errors.Is(rerr, io.EOF) {
				return count, false, fmt.Errorf("journal: read %s at %d: %w", path, off, rerr)
			}
			if m < want { // the file shrank under us: treat what we have as the end
				size = off + int64(m)
			}
			buf, bufAt = buf[:m], off
			continue
		}
		if errors.Is(derr, ErrEnd) {
			return count, torn, nil
		}
		if derr != nil {
			// A torn tail (crash mid-write) is followed by zeros or by nothing. Valid
			// records after the bad one mean the damage is in the middle of the file:
			// skip to them rather than lose every acknowledged record behind it.
			next, ok, rerr := resync(f, off+1, size)
			if rerr != nil {
				return count, true, fmt.Errorf("journal: scan %s past a corrupt record: %w", path, rerr)
			}
			if !ok {
				if dm, damaged := tailDamage(f, buf[rel:], id, off, size); damaged {
					// Nothing valid follows, but this is no torn write: every sector of the
					// record holds data. It was written whole, so it may have been
					// acknowledged; its loss must read as corruption, never as absence.
					log.Error("journal's last record is whole but fails its checksum: media damage, not a torn write; "+
						"replay of this file stops there and the entry it held reads as corrupt",
						"file", path, "offset", off, "size", dm.Size, "err", derr)
					*damage = append(*damage, dm)
					return count, true, nil
				}
				log.Warn("journal ends in a torn record; replay of this file stops there",
					"file", path, "offset", off, "err", derr)
				return count, true, nil
			}
			log.Error("corrupt record in the middle of a journal file; skipping it, the records in it are lost",
				"file", path, "offset", off, "skipped_bytes", next-off, "err", derr)
			*damage = append(*damage, frameDamage(buf[rel:], id, off, next-off))
			torn = true
			off, buf, bufAt = next, buf[:0], next
			continue
		}
		off += int64(n)
		if err := fn(&r, Pos{File: id, Offset: off}); err != nil {
			return count, false, err
		}
		count++
	}
	return count, torn, nil
}

// resync looks for the next offset in [from, size) where two valid records follow each
// other (or one valid record ends the data). Requiring two makes a false match in random
// bytes practically impossible (two CRC32C matches, plus sane lengths and kinds).
func resync(f vfs.File, from, size int64) (int64, bool, error) {
	const window = readChunk
	buf := make([]byte, 0, window+2*(RecordHeaderSize+fenceFixed+MaxMasterKey)+1024)
	for at := from; at < size; at += window {
		n := min(int64(cap(buf)), size-at)
		buf = buf[:n]
		if _, err := f.ReadAt(buf, at); err != nil && !errors.Is(err, io.EOF) {
			return 0, false, err
		}
		for i := 0; i < int(min(window, n)); i++ {
			_, n1, err := Decode(buf[i:])
			if err != nil {
				if errors.Is(err, ErrTruncated) && at+int64(len(buf)) < size {
					// A long record crossing the window: read it whole to judge.
					if ok, rerr := validPair(f, at+int64(i), size); rerr != nil || ok {
						return at + int64(i), ok, rerr
					}
				}
				continue
			}
			_, _, err2 := Decode(buf[i+n1:])
			if err2 == nil || errors.Is(err2, ErrEnd) {
				return at + int64(i), true, nil
			}
			if errors.Is(err2, ErrTruncated) {
				if ok, rerr := validPair(f, at+int64(i), size); rerr != nil || ok {
					return at + int64(i), ok, rerr
				}
			}
		}
	}
	return 0, false, nil
}

// validPair reads from off and checks for a valid record followed by another or the end.
func validPair(f vfs.File, off, size int64) (bool, error) {
	var h [RecordHeaderSize]byte
	if _, err := f.ReadAt(h[:], off); err != nil {
		return false, nil
	}
	n1 := int64(RecordHeaderSize) + int64(uint32be(h[:]))
	if n1 > RecordHeaderSize+MaxBody || off+n1 > size {
		return false, nil
	}
	buf := make([]byte, min(n1+RecordHeaderSize+MaxBody, size-off))
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	_, m, err := Decode(buf)
	if err != nil {
		return false, nil
	}
	_, _, err = Decode(buf[m:])
	return err == nil || errors.Is(err, ErrEnd), nil
}

func uint32be(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// frameDamage describes the corrupt bytes b (the first bytes of a skipped region of size
// bytes at off): whether they still frame exactly one add record, and whose.
func frameDamage(b []byte, file uint64, off, size int64) Damage {
	d := Damage{File: file, Offset: off, Size: size}
	if len(b) < RecordHeaderSize+addFixed || Kind(b[RecordHeaderSize]) != KindAdd ||
		int64(RecordHeaderSize)+int64(uint32be(b)) != size {
		return d
	}
	body := b[RecordHeaderSize:]
	l, e := int64(binary.BigEndian.Uint64(body[1:])), int64(binary.BigEndian.Uint64(body[9:]))
	if l >= 0 && e >= 0 {
		d.Suspect, d.SuspectLedger, d.SuspectEntry = true, l, e
	}
	return d
}

// attribute completes each damage with the ledgers of its file. A suspect whose ledger
// has no other record in the file is not trusted: a flipped bit may be in its ids.
func attribute(damage []Damage, ledgers map[int64]struct{}) []Damage {
	for i := range damage {
		d := &damage[i]
		if _, ok := ledgers[d.SuspectLedger]; d.Suspect && !ok {
			d.Suspect = false
		}
		if !d.Suspect {
			d.Ledgers = make([]int64, 0, len(ledgers))
			for l := range ledgers {
				d.Ledgers = append(d.Ledgers, l)
			}
			slices.Sort(d.Ledgers)
		}
	}
	return damage
}

// Sector is the unit a crash tears writes in: a device writes a 512-byte sector whole or not
// at all, and the journal's files are preallocated with zeros, so a write that a crash cut
// short leaves at least one sector of the record all zeros.
const Sector = 512

// tailDamage judges a corrupt last record b (at file offset off, file size size) that no
// valid record follows. A torn write (the tail of a group that was never acknowledged) has
// an all-zero sector inside the record, or right after its header when its length cannot
// be trusted; then ok is false. Otherwise the record was written whole and then damaged (a
// flipped bit), and the returned Damage describes it. b holds the file's bytes from off; it
// holds the whole record when the length is sane (Decode returned ErrCorrupt, not
// ErrTruncated); other bytes are read from f.
//
// A whole sector of zeros inside a payload that was then also damaged elsewhere would be
// taken for a torn write: the one case this cannot tell apart.
func tailDamage(f vfs.File, b []byte, file uint64, off, size int64) (Damage, bool) {
	if len(b) < RecordHeaderSize {
		return Damage{}, false
	}
	zeroSector := func(from, to int64) bool { // file range [from, to), from b or the file
		to = min(to, size)
		if lo, hi := from-off, to-off; hi <= int64(len(b)) {
			return allZero(b[lo:hi])
		}
		sec := make([]byte, to-from)
		m, _ := f.ReadAt(sec, from)
		return allZero(sec[:m])
	}
	n := int64(uint32be(b))
	end := off + RecordHeaderSize + n
	if n > MaxBody || end > size || end-off > int64(len(b)) || n < 1 {
		// The length cannot be trusted: judge by the sector after the one the record starts in.
		next := (off/Sector + 1) * Sector
		if next >= size || zeroSector(next, next+Sector) {
			return Damage{}, false
		}
		return Damage{File: file, Offset: off, Size: size - off}, true
	}
	for s := (off/Sector + 1) * Sector; s < end; s += Sector {
		if zeroSector(s, min(s+Sector, end)) {
			return Damage{}, false
		}
	}
	return frameDamage(b, file, off, end-off), true
}
