package wire

import (
	"encoding/binary"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// BatchReader walks the messages of a decompressed batch body:
// [u32 SMM_SIZE][SingleMessageMetadata][payload of payload_size bytes], repeated.
type BatchReader struct {
	body []byte
	off  int
	n    int // messages read so far
	want int // messages the outer metadata announces
}

// NewBatchReader returns a reader over body that expects count messages.
func NewBatchReader(body []byte, count int) *BatchReader {
	return &BatchReader{body: body, want: count}
}

// Next decodes the next message into smm (reset first) and returns its payload, which
// aliases the body. It returns io.EOF after the announced number of messages, and an error
// wrapping ErrMalformed if the body is shorter or inconsistent.
func (b *BatchReader) Next(smm *pb.SingleMessageMetadata) ([]byte, error) {
	if b.n >= b.want {
		return nil, io.EOF
	}
	rest := b.body[b.off:]
	if len(rest) < 4 {
		return nil, fmt.Errorf("%w: batch message %d: truncated size", ErrMalformed, b.n)
	}
	size := uint64(binary.BigEndian.Uint32(rest))
	if size > uint64(len(rest)-4) {
		return nil, fmt.Errorf("%w: batch message %d: metadata size %d exceeds the %d bytes left", ErrMalformed, b.n, size, len(rest)-4)
	}
	proto.Reset(smm)
	if err := proto.Unmarshal(rest[4:4+size], smm); err != nil {
		return nil, fmt.Errorf("%w: batch message %d metadata: %w", ErrMalformed, b.n, err)
	}
	rest = rest[4+size:]
	ps := smm.GetPayloadSize()
	if ps < 0 || int64(ps) > int64(len(rest)) {
		return nil, fmt.Errorf("%w: batch message %d: payload size %d, %d bytes left", ErrMalformed, b.n, ps, len(rest))
	}
	payload := rest[:ps]
	b.off += 4 + int(size) + int(ps)
	b.n++
	return payload, nil
}

// Index is the batch index the next call to Next will return.
func (b *BatchReader) Index() int { return b.n }

// AppendBatchMessage appends one message to a batch body, as a producer builds it.
func AppendBatchMessage(dst []byte, smm *pb.SingleMessageMetadata, payload []byte) ([]byte, error) {
	smm.PayloadSize = proto.Int32(int32(len(payload)))
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	var err error
	dst, err = marshal.MarshalAppend(dst, smm)
	if err != nil {
		return dst[:start], fmt.Errorf("wire: marshal single message metadata: %w", err)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return append(dst, payload...), nil
}
