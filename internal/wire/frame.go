package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/magnetar-io/magnetar/internal/framebuf"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Sizes fixed by the protocol.
const (
	// DefaultMaxMessageSize is the default largest message (5 MiB), Pulsar's maxMessageSize.
	DefaultMaxMessageSize = 5 * 1024 * 1024
	// FramePadding is what a frame may carry beyond the message itself (command, metadata).
	FramePadding = 10 * 1024
	// DefaultMaxFrameSize is the default largest TOTAL_SIZE a reader accepts.
	DefaultMaxFrameSize = DefaultMaxMessageSize + FramePadding

	// MagicCRC32C starts the checksummed entry of a payload command.
	MagicCRC32C uint16 = 0x0e01
	// MagicBrokerEntryMetadata starts the optional broker entry metadata block.
	MagicBrokerEntryMetadata uint16 = 0x0e02

	// minFrameSize is the smallest valid TOTAL_SIZE: a CMD_SIZE field and a non-empty command.
	minFrameSize = 4 + 2
	// retainLimit is the largest frame buffer a Reader keeps between frames; larger frames
	// get a buffer of their own so one big SEND does not pin megabytes per idle connection.
	retainLimit = 64 * 1024
)

// Errors of the frame codec. Every decode error wraps one of them.
var (
	ErrFrameTooLarge = errors.New("wire: frame too large")
	ErrChecksum      = errors.New("wire: checksum mismatch")
	ErrMalformed     = errors.New("wire: malformed frame")
)

// NoRequestID is the request id of broker-initiated commands and connection-level errors
// (-1 as an unsigned 64-bit value).
const NoRequestID = ^uint64(0)

// Frame is one decoded frame.
type Frame struct {
	// Cmd is the decoded command; it owns its memory.
	Cmd *pb.BaseCommand
	// HeadersAndPayload is everything after the command (nil for simple commands). It
	// aliases the Reader's buffer and is valid only until the next ReadFrame, unless Owned.
	HeadersAndPayload []byte
	// Owned says the frame has a buffer of its own that the Reader never reuses: the caller
	// may keep HeadersAndPayload without copying it.
	Owned bool
}

// Reader reads frames from a bufio.Reader. Frames that fit in the bufio buffer are decoded
// in place (no copy, no allocation besides the command); larger ones go through a reused
// buffer. A Reader is not safe for concurrent use.
type Reader struct {
	br       *bufio.Reader
	maxFrame int
	discard  int    // bytes of the previous frame still to drop from br
	buf      []byte // reused buffer for frames larger than br's buffer
}

// NewReader returns a Reader over br that rejects frames whose TOTAL_SIZE exceeds
// maxFrameSize (<= 0 means DefaultMaxFrameSize).
func NewReader(br *bufio.Reader, maxFrameSize int) *Reader {
	r := &Reader{br: br}
	r.SetMaxFrameSize(maxFrameSize)
	return r
}

// SetMaxFrameSize changes the limit (<= 0 means DefaultMaxFrameSize).
func (r *Reader) SetMaxFrameSize(n int) {
	if n <= 0 {
		n = DefaultMaxFrameSize
	}
	r.maxFrame = n
}

// ReadFrame reads and decodes the next frame. It returns io.EOF at a clean end of stream,
// io.ErrUnexpectedEOF for a truncated frame, and an error wrapping ErrFrameTooLarge or
// ErrMalformed for bad input; after a decode error the stream is out of sync and must be
// closed. The checksum of a payload section is not verified here (see ParseEntry).
func (r *Reader) ReadFrame() (Frame, error) {
	if r.discard > 0 {
		if _, err := r.br.Discard(r.discard); err != nil {
			return Frame{}, err
		}
		r.discard = 0
	}
	head, err := r.br.Peek(4)
	if err != nil {
		if errors.Is(err, io.EOF) && len(head) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	total := int64(binary.BigEndian.Uint32(head))
	if total > int64(r.maxFrame) {
		return Frame{}, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, total, r.maxFrame)
	}
	if total < minFrameSize {
		return Frame{}, fmt.Errorf("%w: frame size %d is below the minimum %d", ErrMalformed, total, minFrameSize)
	}
	n := 4 + int(total)
	var frame []byte
	if n <= r.br.Size() {
		// NB: Peek's slice stays valid until the next read from br, which is the next
		// ReadFrame; the Discard is deferred until then.
		frame, err = r.br.Peek(n)
		if err != nil {
			return Frame{}, eofToUnexpected(err)
		}
		r.discard = n
	} else {
		if cap(r.buf) >= n {
			frame = r.buf[:n]
			if _, err := io.ReadFull(r.br, frame); err != nil {
				return Frame{}, eofToUnexpected(err)
			}
		} else {
			// Allocate as the bytes arrive, not the declared size up front: a client that
			// declares a 5 MiB frame and stalls holds what it sent, not 5 MiB.
			if frame, err = framebuf.ReadFull(r.br, n); err != nil {
				return Frame{}, eofToUnexpected(err)
			}
			if n <= retainLimit {
				r.buf = frame
			}
		}
		if n > retainLimit {
			f, err := DecodeFrame(frame)
			f.Owned = err == nil
			return f, err
		}
	}
	return DecodeFrame(frame)
}

func eofToUnexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// DecodeFrame decodes one complete frame, TOTAL_SIZE field included. HeadersAndPayload
// aliases frame.
func DecodeFrame(frame []byte) (Frame, error) {
	if len(frame) < 4+minFrameSize {
		return Frame{}, fmt.Errorf("%w: %d bytes is shorter than the smallest frame", ErrMalformed, len(frame))
	}
	total := binary.BigEndian.Uint32(frame)
	if uint64(total) != uint64(len(frame)-4) {
		return Frame{}, fmt.Errorf("%w: frame size field %d, frame has %d bytes", ErrMalformed, total, len(frame)-4)
	}
	cmdSize := uint64(binary.BigEndian.Uint32(frame[4:]))
	if cmdSize == 0 || cmdSize > uint64(total)-4 {
		return Frame{}, fmt.Errorf("%w: command size %d does not fit frame size %d", ErrMalformed, cmdSize, total)
	}
	cmd := &pb.BaseCommand{}
	end := 8 + int(cmdSize)
	if err := proto.Unmarshal(frame[8:end], cmd); err != nil {
		return Frame{}, fmt.Errorf("%w: command: %w", ErrMalformed, err)
	}
	if err := CheckCommand(cmd); err != nil {
		return Frame{}, err
	}
	f := Frame{Cmd: cmd}
	if end < len(frame) {
		f.HeadersAndPayload = frame[end:]
	}
	return f, nil
}

// CheckCommand verifies that the sub-command named by cmd.Type is present (PING and PONG,
// which are empty, may omit it), so handlers can dereference it without nil checks.
func CheckCommand(cmd *pb.BaseCommand) error {
	t := cmd.GetType()
	if t == pb.BaseCommand_PING || t == pb.BaseCommand_PONG {
		return nil
	}
	fd := cmd.ProtoReflect().Descriptor().Fields().ByNumber(protoreflect.FieldNumber(t))
	if fd == nil || !cmd.ProtoReflect().Has(fd) {
		return fmt.Errorf("%w: %s command without its body", ErrMalformed, t)
	}
	return nil
}

var marshal = proto.MarshalOptions{}

// AppendCommand appends a simple command frame for cmd to dst. Marshalling checks that every
// required field is set, so a command the client would reject never leaves the broker.
func AppendCommand(dst []byte, cmd *pb.BaseCommand) ([]byte, error) {
	return AppendPayloadCommand(dst, cmd, nil, nil)
}

// AppendPayloadCommand appends a payload command frame: cmd, then (if bem is non-empty) the
// 0x0e02 block holding the marshalled BrokerEntryMetadata bem, then entry, which must start
// with the 0x0e01 magic (see AppendEntry). A nil entry writes a simple command frame.
func AppendPayloadCommand(dst []byte, cmd *pb.BaseCommand, bem, entry []byte) ([]byte, error) {
	dst, err := appendPayloadHead(dst, cmd, bem, len(entry))
	if err != nil {
		return dst, err
	}
	return append(dst, entry...), nil
}

// appendPayloadHead appends everything of a payload frame but its entry of entryLen bytes:
// the sizes already count the entry the caller appends (or sends) right after.
func appendPayloadHead(dst []byte, cmd *pb.BaseCommand, bem []byte, entryLen int) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	var err error
	dst, err = marshal.MarshalAppend(dst, cmd)
	if err != nil {
		return dst[:start], fmt.Errorf("wire: marshal %s: %w", cmd.GetType(), err)
	}
	cmdSize := len(dst) - start - 8
	if len(bem) > 0 {
		dst = binary.BigEndian.AppendUint16(dst, MagicBrokerEntryMetadata)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(bem)))
		dst = append(dst, bem...)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4+entryLen))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(cmdSize))
	return dst, nil
}

// refThreshold is the entry size from which a Writer references an entry instead of copying
// it: at dispatch rates of 100 MB/s the copy (and the buffer growth behind it) was a third of
// the standalone's allocations. Below it the copy is cheaper than another iovec.
const refThreshold = 2048

// Writer accumulates frames for one write: small frames in one reused buffer, large entries
// by reference (stored entries are immutable), written together with writev. It is not safe
// for concurrent use.
type Writer struct {
	buf  []byte
	segs net.Buffers // the frames in order: closed parts of buf and referenced entries
	mark int         // start of the part of buf not yet in segs
	refd int         // bytes in referenced entries
}

// WriteCommand appends a simple command frame.
func (w *Writer) WriteCommand(cmd *pb.BaseCommand) error {
	var err error
	w.buf, err = AppendCommand(w.buf, cmd)
	return err
}

// WritePayloadCommand appends a payload command frame (see AppendPayloadCommand). An entry
// of refThreshold bytes or more is referenced, not copied: the caller must not modify it
// before the next Reset.
func (w *Writer) WritePayloadCommand(cmd *pb.BaseCommand, bem, entry []byte) error {
	if len(entry) < refThreshold {
		var err error
		w.buf, err = AppendPayloadCommand(w.buf, cmd, bem, entry)
		return err
	}
	var err error
	if w.buf, err = appendPayloadHead(w.buf, cmd, bem, len(entry)); err != nil {
		return err
	}
	// A later append may move buf; the closed part keeps pointing at the old array, which
	// already holds its bytes.
	w.segs = append(w.segs, w.buf[w.mark:len(w.buf):len(w.buf)], entry)
	w.mark = len(w.buf)
	w.refd += len(entry)
	return nil
}

// Bytes returns the buffered frames as one slice (a copy when entries are referenced); valid
// until the next Write or Reset. WriteTo avoids the copy.
func (w *Writer) Bytes() []byte {
	if len(w.segs) == 0 {
		return w.buf
	}
	out := make([]byte, 0, w.Len())
	for _, s := range w.segs {
		out = append(out, s...)
	}
	return append(out, w.buf[w.mark:]...)
}

// WriteTo writes the buffered frames to wr, with one writev when wr is a TCP connection;
// the caller Resets the Writer afterwards.
func (w *Writer) WriteTo(wr io.Writer) (int64, error) {
	if len(w.segs) == 0 {
		n, err := wr.Write(w.buf)
		return int64(n), err
	}
	bufs := append(w.segs, w.buf[w.mark:])
	w.segs = bufs[:0] // WriteTo consumes bufs; keep the backing array for reuse
	return bufs.WriteTo(wr)
}

// Len is the number of buffered bytes.
func (w *Writer) Len() int { return len(w.buf) + w.refd }

// Reset empties the buffer, keeping its memory unless it grew past retainLimit.
func (w *Writer) Reset() {
	clear(w.segs[:cap(w.segs)]) // drop the references to entries
	w.segs = w.segs[:0]
	w.mark, w.refd = 0, 0
	if cap(w.buf) > 4*retainLimit {
		w.buf = nil
		return
	}
	w.buf = w.buf[:0]
}
