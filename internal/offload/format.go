package offload

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"
)

// Byte formats of the data and index objects (doc.go).
const (
	blockMagic        = 0x4D474F42 // "MGOB"
	indexMagic        = 0x4D474F49 // "MGOI"
	formatVersion     = 1
	blockHeaderLength = 24
	frameHeaderLength = 16

	// Decoder limits: far above what a writer produces, low enough that a corrupt count
	// cannot make the decoder allocate without bound.
	maxIndexBlocks   = 1 << 20
	maxIndexSeeks    = 1 << 24
	maxMetadataBytes = 1 << 20
	maxEntryLength   = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt marks an object that fails to decode or verify: wrong magic, unknown version,
// a CRC mismatch, truncation. Reads never turn it into "fewer entries".
var ErrCorrupt = errors.New("offload: corrupt offloaded object")

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// blockInfo locates one block of the data object.
type blockInfo struct {
	FirstEntry int64
	Offset     int64
	Length     int64
}

// seekPoint is where a chunk starts: entry id and byte offset.
type seekPoint struct {
	Entry  int64
	Offset int64
}

// index is the decoded index object.
type index struct {
	LedgerID     int64
	LastEntry    int64
	LedgerLength int64
	DataLength   int64
	BlockSize    uint32
	Metadata     map[string]string
	Blocks       []blockInfo
	Seeks        []seekPoint
}

// appendBlockHeader appends a block header.
func appendBlockHeader(b []byte, ledgerID, firstEntry int64) []byte {
	b = binary.BigEndian.AppendUint32(b, blockMagic)
	b = binary.BigEndian.AppendUint16(b, formatVersion)
	b = binary.BigEndian.AppendUint16(b, blockHeaderLength)
	b = binary.BigEndian.AppendUint64(b, uint64(ledgerID))
	return binary.BigEndian.AppendUint64(b, uint64(firstEntry))
}

// parseBlockHeader checks a block header and returns its length.
func parseBlockHeader(b []byte, ledgerID, firstEntry int64) (int, error) {
	if len(b) < blockHeaderLength {
		return 0, corruptf("block header truncated (%d bytes)", len(b))
	}
	if m := binary.BigEndian.Uint32(b); m != blockMagic {
		return 0, corruptf("block magic %#x", m)
	}
	if v := binary.BigEndian.Uint16(b[4:]); v != formatVersion {
		return 0, corruptf("block version %d", v)
	}
	hl := int(binary.BigEndian.Uint16(b[6:]))
	if hl < blockHeaderLength || hl > len(b) {
		return 0, corruptf("block header length %d", hl)
	}
	if l := int64(binary.BigEndian.Uint64(b[8:])); l != ledgerID {
		return 0, corruptf("block of ledger %d in ledger %d's object", l, ledgerID)
	}
	if e := int64(binary.BigEndian.Uint64(b[16:])); e != firstEntry {
		return 0, corruptf("block starts at entry %d, index says %d", e, firstEntry)
	}
	return hl, nil
}

// appendFrameHeader appends the frame header of one entry.
func appendFrameHeader(b []byte, entryID int64, payload []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(entryID))
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
}

// frame is one decoded entry frame; Payload aliases the chunk.
type frame struct {
	Entry   int64
	Payload []byte
}

// parseChunk decodes the frames of one chunk that starts at entry first and byte offset off
// of the data object. blockStart says whether the chunk starts with a block header. Every
// frame is verified; the chunk must end exactly at a frame boundary.
func parseChunk(b []byte, ledgerID, first int64, blockStart bool, dst []frame) ([]frame, error) {
	if blockStart {
		hl, err := parseBlockHeader(b, ledgerID, first)
		if err != nil {
			return dst, err
		}
		b = b[hl:]
	}
	next := first
	for len(b) > 0 {
		if len(b) < frameHeaderLength {
			return dst, corruptf("entry %d: frame header truncated", next)
		}
		id := int64(binary.BigEndian.Uint64(b))
		n := int64(binary.BigEndian.Uint32(b[8:]))
		sum := binary.BigEndian.Uint32(b[12:])
		if id != next {
			return dst, corruptf("entry %d where %d was expected", id, next)
		}
		if n > maxEntryLength || n > int64(len(b)-frameHeaderLength) {
			return dst, corruptf("entry %d: payload truncated (%d of %d bytes)", id, len(b)-frameHeaderLength, n)
		}
		p := b[frameHeaderLength : frameHeaderLength+n]
		if crc32.Checksum(p, castagnoli) != sum {
			return dst, corruptf("entry %d: crc32c mismatch", id)
		}
		dst = append(dst, frame{Entry: id, Payload: p})
		b = b[frameHeaderLength+n:]
		next++
	}
	return dst, nil
}

// encodeIndex writes the index object.
func encodeIndex(ix *index) []byte {
	md, err := json.Marshal(ix.Metadata)
	if err != nil {
		panic(fmt.Sprintf("offload: encoding metadata: %v", err)) // a string map never fails
	}
	b := make([]byte, 0, 64+len(md)+24*len(ix.Blocks)+16*len(ix.Seeks))
	b = binary.BigEndian.AppendUint32(b, indexMagic)
	b = binary.BigEndian.AppendUint16(b, formatVersion)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(ix.LedgerID))
	b = binary.BigEndian.AppendUint64(b, uint64(ix.LastEntry))
	b = binary.BigEndian.AppendUint64(b, uint64(ix.LedgerLength))
	b = binary.BigEndian.AppendUint64(b, uint64(ix.DataLength))
	b = binary.BigEndian.AppendUint32(b, ix.BlockSize)
	b = binary.BigEndian.AppendUint32(b, uint32(len(md)))
	b = append(b, md...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ix.Blocks)))
	for _, bl := range ix.Blocks {
		b = binary.BigEndian.AppendUint64(b, uint64(bl.FirstEntry))
		b = binary.BigEndian.AppendUint64(b, uint64(bl.Offset))
		b = binary.BigEndian.AppendUint64(b, uint64(bl.Length))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(ix.Seeks)))
	for _, s := range ix.Seeks {
		b = binary.BigEndian.AppendUint64(b, uint64(s.Entry))
		b = binary.BigEndian.AppendUint64(b, uint64(s.Offset))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// indexReader reads big-endian fields and remembers the first shortfall.
type indexReader struct {
	b   []byte
	bad bool
}

func (r *indexReader) take(n int) []byte {
	if r.bad || len(r.b) < n {
		r.bad = true
		return make([]byte, n)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
func (r *indexReader) u16() uint16 { return binary.BigEndian.Uint16(r.take(2)) }
func (r *indexReader) u32() uint32 { return binary.BigEndian.Uint32(r.take(4)) }
func (r *indexReader) i64() int64  { return int64(binary.BigEndian.Uint64(r.take(8))) }

// decodeIndex reads and validates an index object of ledger ledgerID.
func decodeIndex(b []byte, ledgerID int64) (*index, error) {
	if len(b) < 4+4+8*4+4+4+4+4+4 {
		return nil, corruptf("index truncated (%d bytes)", len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if binary.BigEndian.Uint32(body) != indexMagic {
		return nil, corruptf("index magic %#x", binary.BigEndian.Uint32(body))
	}
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, corruptf("index crc32c mismatch")
	}
	r := &indexReader{b: body[4:]}
	if v := r.u16(); v != formatVersion {
		return nil, corruptf("index version %d", v)
	}
	r.u16() // flags
	ix := &index{LedgerID: r.i64(), LastEntry: r.i64(), LedgerLength: r.i64(), DataLength: r.i64(), BlockSize: r.u32()}
	if ix.LedgerID != ledgerID {
		return nil, corruptf("index of ledger %d where %d was expected", ix.LedgerID, ledgerID)
	}
	if ix.LastEntry < -1 || ix.LedgerLength < 0 || ix.DataLength < 0 {
		return nil, corruptf("index: negative counts")
	}
	mdLen := r.u32()
	if mdLen > maxMetadataBytes {
		return nil, corruptf("index metadata of %d bytes", mdLen)
	}
	if md := r.take(int(mdLen)); !r.bad && mdLen > 0 {
		if err := json.Unmarshal(md, &ix.Metadata); err != nil {
			return nil, corruptf("index metadata: %v", err)
		}
	}
	nb := r.u32()
	if nb > maxIndexBlocks || int64(nb)*24 > int64(len(r.b)) {
		return nil, corruptf("index: %d blocks", nb)
	}
	ix.Blocks = make([]blockInfo, nb)
	for i := range ix.Blocks {
		ix.Blocks[i] = blockInfo{FirstEntry: r.i64(), Offset: r.i64(), Length: r.i64()}
	}
	ns := r.u32()
	if ns > maxIndexSeeks || int64(ns)*16 > int64(len(r.b)) {
		return nil, corruptf("index: %d seek points", ns)
	}
	ix.Seeks = make([]seekPoint, ns)
	for i := range ix.Seeks {
		ix.Seeks[i] = seekPoint{Entry: r.i64(), Offset: r.i64()}
	}
	if r.bad {
		return nil, corruptf("index truncated")
	}
	if len(r.b) != 0 {
		return nil, corruptf("index: %d trailing bytes", len(r.b))
	}
	if err := ix.validate(); err != nil {
		return nil, err
	}
	return ix, nil
}

// validate checks that the tables describe a well-formed data object, so that reads can
// index them without bounds surprises.
func (ix *index) validate() error {
	if ix.LastEntry == -1 {
		if len(ix.Blocks) != 0 || len(ix.Seeks) != 0 || ix.DataLength != 0 {
			return corruptf("index of an empty ledger has blocks")
		}
		return nil
	}
	if len(ix.Blocks) == 0 || len(ix.Seeks) == 0 {
		return corruptf("index has no blocks")
	}
	end := int64(0)
	for i, bl := range ix.Blocks {
		if bl.Offset != end || bl.Length < blockHeaderLength || bl.FirstEntry < 0 || bl.FirstEntry > ix.LastEntry {
			return corruptf("index block %d at %d+%d (entry %d)", i, bl.Offset, bl.Length, bl.FirstEntry)
		}
		if i == 0 && bl.FirstEntry != 0 || i > 0 && bl.FirstEntry <= ix.Blocks[i-1].FirstEntry {
			return corruptf("index block %d starts at entry %d", i, bl.FirstEntry)
		}
		end += bl.Length
	}
	if end != ix.DataLength {
		return corruptf("index blocks cover %d of %d bytes", end, ix.DataLength)
	}
	bi := 0
	for i, s := range ix.Seeks {
		if i > 0 && (s.Entry <= ix.Seeks[i-1].Entry || s.Offset <= ix.Seeks[i-1].Offset) {
			return corruptf("index seek point %d not ascending", i)
		}
		if s.Entry > ix.LastEntry || s.Offset >= ix.DataLength {
			return corruptf("index seek point %d outside the data", i)
		}
		for bi+1 < len(ix.Blocks) && ix.Blocks[bi+1].Offset <= s.Offset {
			bi++
		}
		if bi < len(ix.Blocks) && ix.Blocks[bi].Offset == s.Offset && ix.Blocks[bi].FirstEntry != s.Entry {
			return corruptf("index seek point %d at a block start with another entry", i)
		}
	}
	// Every block start must be a seek point, so no chunk crosses a block.
	si := 0
	for _, bl := range ix.Blocks {
		for si < len(ix.Seeks) && ix.Seeks[si].Offset < bl.Offset {
			si++
		}
		if si == len(ix.Seeks) || ix.Seeks[si].Offset != bl.Offset {
			return corruptf("index: block at %d is not a seek point", bl.Offset)
		}
	}
	return nil
}

// chunk describes the span read for one seek point.
type chunk struct {
	Seq        int   // seek point number
	First      int64 // first entry id
	Last       int64 // last entry id
	Offset     int64
	Length     int64
	BlockStart bool
}

// chunkFor returns the chunk holding entry e (0 <= e <= LastEntry).
func (ix *index) chunkFor(e int64) chunk {
	i := sort.Search(len(ix.Seeks), func(i int) bool { return ix.Seeks[i].Entry > e }) - 1
	return ix.chunkAt(i)
}

// chunkAt returns chunk number i (0 <= i < len(Seeks)).
func (ix *index) chunkAt(i int) chunk {
	s := ix.Seeks[i]
	c := chunk{Seq: i, First: s.Entry, Offset: s.Offset, Last: ix.LastEntry, Length: ix.DataLength - s.Offset}
	if i+1 < len(ix.Seeks) {
		n := ix.Seeks[i+1]
		c.Last, c.Length = n.Entry-1, n.Offset-s.Offset
	}
	bi := sort.Search(len(ix.Blocks), func(j int) bool { return ix.Blocks[j].Offset > s.Offset }) - 1
	c.BlockStart = ix.Blocks[bi].Offset == s.Offset
	return c
}
