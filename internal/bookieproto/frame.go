package bookieproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/magnetar-io/magnetar/internal/framebuf"
)

// ProtocolVersion is the only frame version this build speaks (see doc.go).
const ProtocolVersion = 1

// DefaultMaxFrameSize bounds a frame's length field, as BookKeeper's nettyMaxFrameSizeBytes
// (5 MiB of payload plus 4 KiB of headers).
const DefaultMaxFrameSize = 5253120

// MinFrameSize is the smallest frame a peer sends and the smallest bound MaxFrameSize can have.
const MinFrameSize = 1024

// Sizes of the fixed parts of a frame.
const (
	lengthSize = 4
	headerSize = 1 + 1 + 2 + 8 // version, op, flags, request id
	// MaxMasterKeySize bounds the master key of a request.
	MaxMasterKeySize = 1024
)

// Op is a request's operation code. A response carries the request's op with ResponseBit set.
type Op uint8

// Operation codes (doc.go gives each body).
const (
	OpAddEntry  Op = 1
	OpReadEntry Op = 2
	OpReadRange Op = 3
	OpReadLAC   Op = 4
	OpWaitLAC   Op = 5
	OpDelete    Op = 6

	// ResponseBit marks a response frame.
	ResponseBit Op = 0x80
)

var opNames = map[Op]string{
	OpAddEntry: "ADD_ENTRY", OpReadEntry: "READ_ENTRY", OpReadRange: "READ_RANGE",
	OpReadLAC: "READ_LAC", OpWaitLAC: "WAIT_LAC", OpDelete: "DELETE_LEDGER",
}

// Ops lists every request op, for tables indexed by op (metrics).
var Ops = []Op{OpAddEntry, OpReadEntry, OpReadRange, OpReadLAC, OpWaitLAC, OpDelete}

// String names the op as BookKeeper's stats do (ADD_ENTRY, READ_ENTRY, ...).
func (o Op) String() string {
	if n, ok := opNames[o&^ResponseBit]; ok {
		return n
	}
	return fmt.Sprintf("OP_%d", uint8(o))
}

// Request flags.
const (
	// FlagFence on a read or read-LAC fences the ledger before answering.
	FlagFence uint16 = 1 << 0
	// FlagRecovery on an add lets it through a fenced ledger (recovery write-back).
	FlagRecovery uint16 = 1 << 1

	knownFlags = FlagFence | FlagRecovery
)

// Errors of frame decoding. A peer that sends one of these is broken: the connection is closed.
var (
	ErrFrameTooLarge = errors.New("bookieproto: frame larger than the maximum frame size")
	ErrMalformed     = errors.New("bookieproto: malformed frame")
)

// Request is one decoded request; which fields are meaningful depends on Op (doc.go).
type Request struct {
	Op        Op
	Flags     uint16
	RequestID uint64
	LedgerID  int64
	EntryID   int64  // add, read; first entry of a range
	LastID    int64  // range: last entry (inclusive)
	LAC       int64  // add: the writer's LAC; wait-LAC: the previous LAC
	MaxBytes  uint32 // range: payload budget
	TimeoutMs uint32 // wait-LAC
	MasterKey []byte // add, read, read-LAC
	// Prefix and Payload of an add are one payload on the wire (Prefix first); the encoder
	// writes them from two slices so the ledger client's digest header needs no copy of
	// the entry. A decoded request has everything in Payload.
	Prefix  []byte // add
	Payload []byte // add
}

// Response is one decoded response; which fields are meaningful depends on Op (doc.go).
type Response struct {
	Op        Op // the request's op, without ResponseBit
	RequestID uint64
	Status    Status
	LedgerID  int64
	EntryID   int64   // add, read
	LAC       int64   // read, range, read-LAC, wait-LAC
	Payload   []byte  // read
	Entries   []Entry // range (each with LedgerID and LAC of the response)
}

// ReadFrame reads one frame (without its length prefix) from r into a fresh buffer that the
// caller owns. It checks the length against maxFrameSize before allocating, and allocates
// as the bytes arrive (framebuf.ReadFull), so a hostile length costs nothing. io.EOF means a clean end between frames; a frame cut short is
// io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, maxFrameSize int) ([]byte, error) {
	n, err := readLength(r)
	if err != nil {
		return nil, err
	}
	if n < headerSize {
		return nil, fmt.Errorf("%w: length %d is shorter than the %d-byte header", ErrMalformed, n, headerSize)
	}
	if uint64(n) > uint64(maxFrameSize) {
		return nil, fmt.Errorf("%w: length %d, limit %d", ErrFrameTooLarge, n, maxFrameSize)
	}
	// The buffer grows as the bytes arrive: a peer that declares a large frame and stalls
	// holds what it sent, not the declared length.
	buf, err := framebuf.ReadFull(r, int(n))
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// peeker is what *bufio.Reader offers: reading the length prefix through it needs no
// allocation, where a local array passed to an io.Reader escapes to the heap.
type peeker interface {
	Peek(n int) ([]byte, error)
	Discard(n int) (int, error)
}

// readLength reads the 4-byte length prefix with io.ReadFull's error contract: io.EOF when
// nothing was read, io.ErrUnexpectedEOF when the prefix was cut.
func readLength(r io.Reader) (uint32, error) {
	if p, ok := r.(peeker); ok {
		b, err := p.Peek(lengthSize)
		if len(b) == lengthSize {
			n := binary.BigEndian.Uint32(b)
			_, _ = p.Discard(lengthSize)
			return n, nil
		}
		if len(b) > 0 && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	var lb [lengthSize]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(lb[:]), nil
}

// decoder walks a frame body; the first short read sticks as err.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) need(n int, what string) bool {
	if d.err != nil {
		return false
	}
	if len(d.b) < n {
		d.err = fmt.Errorf("%w: %s needs %d bytes, %d left", ErrMalformed, what, n, len(d.b))
		return false
	}
	return true
}

func (d *decoder) u16(what string) uint16 {
	if !d.need(2, what) {
		return 0
	}
	v := binary.BigEndian.Uint16(d.b)
	d.b = d.b[2:]
	return v
}

func (d *decoder) u32(what string) uint32 {
	if !d.need(4, what) {
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) i64(what string) int64 {
	if !d.need(8, what) {
		return 0
	}
	v := int64(binary.BigEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

func (d *decoder) bytes(n int, what string) []byte {
	if !d.need(n, what) {
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// key reads a u16-length-prefixed master key.
func (d *decoder) key() []byte {
	n := int(d.u16("master key length"))
	if d.err == nil && n > MaxMasterKeySize {
		d.err = fmt.Errorf("%w: master key of %d bytes, limit %d", ErrMalformed, n, MaxMasterKeySize)
		return nil
	}
	return d.bytes(n, "master key")
}

// end fails on trailing bytes, so that every frame has exactly one encoding.
func (d *decoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(d.b))
	}
	return d.err
}

// header splits a frame into version, op, flags, request id and body.
func header(frame []byte) (Op, uint16, uint64, []byte, error) {
	if len(frame) < headerSize {
		return 0, 0, 0, nil, fmt.Errorf("%w: %d bytes is shorter than the header", ErrMalformed, len(frame))
	}
	if v := frame[0]; v != ProtocolVersion {
		return 0, 0, 0, nil, fmt.Errorf("%w: protocol version %d, want %d", ErrMalformed, v, ProtocolVersion)
	}
	return Op(frame[1]), binary.BigEndian.Uint16(frame[2:]), binary.BigEndian.Uint64(frame[4:]), frame[headerSize:], nil
}

// ErrUnknownOp is returned by DecodeRequest for a well-formed header whose op this build does
// not know; the server answers it with StatusBadRequest instead of closing the connection.
var ErrUnknownOp = errors.New("bookieproto: unknown op")

// DecodeRequest decodes a request frame (as ReadFrame returns it). Slices in the result alias
// frame. An unknown op returns the header fields and an error wrapping ErrUnknownOp.
func DecodeRequest(frame []byte) (Request, error) {
	op, flags, id, body, err := header(frame)
	if err != nil {
		return Request{}, err
	}
	r := Request{Op: op, Flags: flags, RequestID: id}
	if op&ResponseBit != 0 {
		return r, fmt.Errorf("%w: response op %d sent as a request", ErrMalformed, uint8(op))
	}
	if _, ok := opNames[op]; !ok {
		return r, fmt.Errorf("%w %d", ErrUnknownOp, uint8(op))
	}
	if flags&^knownFlags != 0 {
		return r, fmt.Errorf("%w: unknown flags %#x", ErrMalformed, flags&^knownFlags)
	}
	d := decoder{b: body}
	r.LedgerID = d.i64("ledger id")
	switch op {
	case OpAddEntry:
		r.EntryID = d.i64("entry id")
		r.LAC = d.i64("lac")
		r.MasterKey = d.key()
		if d.err == nil {
			r.Payload, d.b = d.b[:len(d.b):len(d.b)], nil
		}
	case OpReadEntry:
		r.EntryID = d.i64("entry id")
		r.MasterKey = d.key()
	case OpReadRange:
		r.EntryID = d.i64("first entry id")
		r.LastID = d.i64("last entry id")
		r.MaxBytes = d.u32("max bytes")
	case OpReadLAC:
		r.MasterKey = d.key()
	case OpWaitLAC:
		r.LAC = d.i64("previous lac")
		r.TimeoutMs = d.u32("timeout")
	case OpDelete:
	}
	return r, d.end()
}

// DecodeResponse decodes a response frame. Slices in the result alias frame.
func DecodeResponse(frame []byte) (Response, error) {
	op, flags, id, body, err := header(frame)
	if err != nil {
		return Response{}, err
	}
	if flags != 0 {
		return Response{}, fmt.Errorf("%w: response with flags %#x", ErrMalformed, flags)
	}
	if op&ResponseBit == 0 {
		return Response{}, fmt.Errorf("%w: request op %d sent as a response", ErrMalformed, uint8(op))
	}
	op &^= ResponseBit
	r := Response{Op: op, RequestID: id}
	if _, ok := opNames[op]; !ok {
		return r, fmt.Errorf("%w: unknown response op %d", ErrMalformed, uint8(op))
	}
	d := decoder{b: body}
	r.Status = Status(d.u16("status"))
	r.LedgerID = d.i64("ledger id")
	switch op {
	case OpAddEntry:
		r.EntryID = d.i64("entry id")
	case OpReadEntry:
		r.EntryID = d.i64("entry id")
		r.LAC = d.i64("lac")
		if d.err == nil {
			r.Payload, d.b = d.b[:len(d.b):len(d.b)], nil
		}
	case OpReadRange:
		r.LAC = d.i64("lac")
		n := d.u32("entry count")
		// Each entry takes at least 12 bytes, so a count larger than what is left is a lie
		// and must not size an allocation.
		if d.err == nil && uint64(n)*12 > uint64(len(d.b)) {
			d.err = fmt.Errorf("%w: %d entries cannot fit in %d bytes", ErrMalformed, n, len(d.b))
		}
		if d.err == nil && n > 0 {
			r.Entries = make([]Entry, 0, n)
		}
		for i := uint32(0); i < n && d.err == nil; i++ {
			e := Entry{LedgerID: r.LedgerID, LAC: r.LAC}
			e.EntryID = d.i64("entry id")
			e.Payload = d.bytes(int(d.u32("entry length")), "entry payload")
			r.Entries = append(r.Entries, e)
		}
	case OpReadLAC, OpWaitLAC:
		r.LAC = d.i64("lac")
	case OpDelete:
	}
	return r, d.end()
}

// appendHeader appends a length placeholder and the header; finish fills in the length.
func appendHeader(dst []byte, op Op, flags uint16, id uint64) ([]byte, int) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, ProtocolVersion, byte(op))
	dst = binary.BigEndian.AppendUint16(dst, flags)
	dst = binary.BigEndian.AppendUint64(dst, id)
	return dst, start
}

func finish(dst []byte, start int) []byte {
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-lengthSize))
	return dst
}

func appendI64(dst []byte, v int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v)) }

func appendKey(dst, key []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(key)))
	return append(dst, key...)
}

// RequestSize is the encoded size of r including the length prefix.
func RequestSize(r *Request) int {
	n := lengthSize + headerSize + 8
	switch r.Op {
	case OpAddEntry:
		n += 16 + 2 + len(r.MasterKey) + len(r.Prefix) + len(r.Payload)
	case OpReadEntry:
		n += 8 + 2 + len(r.MasterKey)
	case OpReadRange:
		n += 20
	case OpReadLAC:
		n += 2 + len(r.MasterKey)
	case OpWaitLAC:
		n += 12
	}
	return n
}

// AppendRequest appends r's frame (with length prefix) to dst. The caller checks sizes
// (RequestSize against the peer's frame limit, MaxMasterKeySize) first.
func AppendRequest(dst []byte, r *Request) []byte {
	dst, start := appendRequest(dst, r)
	return finish(dst, start)
}

// AppendRequestHead appends r without the Payload of an add (its Prefix included): the
// length prefix counts the Payload, which the caller writes right after (saving a copy of
// every added entry).
func AppendRequestHead(dst []byte, r *Request) []byte {
	if r.Op != OpAddEntry {
		return AppendRequest(dst, r)
	}
	q := *r
	q.Payload = nil
	dst, start := appendRequest(dst, &q)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-lengthSize+len(r.Payload)))
	return dst
}

// appendRequest appends r's frame and returns where it starts; finish sets its length.
func appendRequest(dst []byte, r *Request) ([]byte, int) {
	dst, start := appendHeader(dst, r.Op, r.Flags, r.RequestID)
	dst = appendI64(dst, r.LedgerID)
	switch r.Op {
	case OpAddEntry:
		dst = appendI64(dst, r.EntryID)
		dst = appendI64(dst, r.LAC)
		dst = appendKey(dst, r.MasterKey)
		dst = append(dst, r.Prefix...)
		dst = append(dst, r.Payload...)
	case OpReadEntry:
		dst = appendI64(dst, r.EntryID)
		dst = appendKey(dst, r.MasterKey)
	case OpReadRange:
		dst = appendI64(dst, r.EntryID)
		dst = appendI64(dst, r.LastID)
		dst = binary.BigEndian.AppendUint32(dst, r.MaxBytes)
	case OpReadLAC:
		dst = appendKey(dst, r.MasterKey)
	case OpWaitLAC:
		dst = appendI64(dst, r.LAC)
		dst = binary.BigEndian.AppendUint32(dst, r.TimeoutMs)
	}
	return dst, start
}

// rangeEntryOverhead is what each entry of a range response adds besides its payload.
const rangeEntryOverhead = 12

// ResponseSize is the encoded size of r including the length prefix.
func ResponseSize(r *Response) int {
	n := lengthSize + headerSize + 2 + 8
	switch r.Op {
	case OpAddEntry:
		n += 8
	case OpReadEntry:
		n += 16 + len(r.Payload)
	case OpReadRange:
		n += 12
		for _, e := range r.Entries {
			n += rangeEntryOverhead + len(e.Payload)
		}
	case OpReadLAC, OpWaitLAC:
		n += 8
	}
	return n
}

// AppendResponse appends r's frame (with length prefix) to dst. A response with a non-OK
// status carries no payload or entries.
func AppendResponse(dst []byte, r *Response) []byte {
	dst, start := appendHeader(dst, r.Op|ResponseBit, 0, r.RequestID)
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.Status))
	dst = appendI64(dst, r.LedgerID)
	switch r.Op {
	case OpAddEntry:
		dst = appendI64(dst, r.EntryID)
	case OpReadEntry:
		dst = appendI64(dst, r.EntryID)
		dst = appendI64(dst, r.LAC)
		dst = append(dst, r.Payload...)
	case OpReadRange:
		dst = appendI64(dst, r.LAC)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.Entries)))
		for _, e := range r.Entries {
			dst = appendI64(dst, e.EntryID)
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(e.Payload)))
			dst = append(dst, e.Payload...)
		}
	case OpReadLAC, OpWaitLAC:
		dst = appendI64(dst, r.LAC)
	}
	return finish(dst, start)
}

// WriteResponse writes r's frame to w as AppendResponse encodes it, but passes payloads of
// reads to w directly instead of copying them into one frame buffer: a range response is up
// to a frame's worth of entries, which the server otherwise copied (and allocated, when the
// scratch buffer had to grow) once per response. scratch is reused and returned.
func WriteResponse(w io.Writer, scratch []byte, r *Response) ([]byte, error) {
	if r.Op != OpReadEntry && r.Op != OpReadRange {
		scratch = AppendResponse(scratch[:0], r)
		_, err := w.Write(scratch)
		return scratch, err
	}
	dst, start := appendHeader(scratch[:0], r.Op|ResponseBit, 0, r.RequestID)
	binary.BigEndian.PutUint32(dst[start:], uint32(ResponseSize(r)-lengthSize))
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.Status))
	dst = appendI64(dst, r.LedgerID)
	var err error
	// put queues p after what dst holds, copying only small payloads.
	put := func(p []byte) {
		if len(p) < 1024 {
			dst = append(dst, p...)
			return
		}
		if _, err = w.Write(dst); err == nil {
			_, err = w.Write(p)
		}
		dst = dst[:0]
	}
	if r.Op == OpReadEntry {
		dst = appendI64(dst, r.EntryID)
		dst = appendI64(dst, r.LAC)
		put(r.Payload)
	} else {
		dst = appendI64(dst, r.LAC)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.Entries)))
		for _, e := range r.Entries {
			dst = appendI64(dst, e.EntryID)
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(e.Payload)))
			if put(e.Payload); err != nil {
				return dst, err
			}
		}
	}
	if err == nil && len(dst) > 0 {
		_, err = w.Write(dst)
	}
	return dst, err
}

// RangeBudget is the largest payload total a range response may carry under maxFrameSize,
// counting the per-entry overhead of n entries.
func RangeBudget(maxFrameSize, n int) int {
	return maxFrameSize - (headerSize + 2 + 8 + 12) - n*rangeEntryOverhead
}
