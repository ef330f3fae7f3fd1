package kafka

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Kafka's compression codecs, the low three bits of a record batch's attributes.
const (
	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLZ4    = 3
	codecZstd   = 4
)

// pulsarCodec is the Pulsar compression an entry converted from a Kafka batch compressed
// with c uses: the same algorithm where Pulsar has it (Pulsar's LZ4 is the block format and
// its SNAPPY raw blocks, so the bytes are re-encoded either way), ZLIB for gzip.
func pulsarCodec(c int) pb.CompressionType {
	switch c {
	case codecGzip:
		return pb.CompressionType_ZLIB
	case codecSnappy:
		return pb.CompressionType_SNAPPY
	case codecLZ4:
		return pb.CompressionType_LZ4
	case codecZstd:
		return pb.CompressionType_ZSTD
	}
	return pb.CompressionType_NONE
}

// xerialMagic starts snappy data framed the way the Java client's snappy-java stream writes
// it: magic, version and compatible version (int32 each), then blocks of int32 length +
// raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(1<<30))
})

// decompressRecords decodes the records section of a batch compressed with codec into
// dst[:0], refusing to produce more than limit bytes (a small input must not be able to
// claim gigabytes).
func decompressRecords(codec int, dst, src []byte, limit int) ([]byte, error) {
	switch codec {
	case codecNone:
		return append(dst[:0], src...), nil
	case codecGzip:
		r, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrCorruptMessage, err)
		}
		return readLimited(dst, r, limit, "gzip")
	case codecSnappy:
		if bytes.HasPrefix(src, xerialMagic) {
			return decodeXerial(dst, src, limit)
		}
		return decodeSnappyBlock(dst, src, limit)
	case codecLZ4:
		return readLimited(dst, lz4.NewReader(bytes.NewReader(src)), limit, "lz4")
	case codecZstd:
		d, err := zstdDecoder()
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", ErrUnknownServer, err)
		}
		// DecodeAll is safe for concurrent use, but it sizes its output by the frame's
		// declared size, so check that first.
		if n, ok := zstdFrameSize(src); ok && n > uint64(limit) {
			return nil, fmt.Errorf("%w: zstd frame declares %d bytes, more than %d", ErrMessageTooLarge, n, limit)
		}
		out, err := d.DecodeAll(src, dst[:0])
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", ErrCorruptMessage, err)
		}
		if len(out) > limit {
			return nil, fmt.Errorf("%w: zstd data decodes to more than %d bytes", ErrMessageTooLarge, limit)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: codec %d", ErrUnsupportedCodec, codec)
}

// zstdFrameSize reads the content size a zstd frame header declares, if it does.
func zstdFrameSize(src []byte) (uint64, bool) {
	var h zstd.Header
	if err := h.Decode(src); err != nil || !h.HasFCS {
		return 0, false
	}
	return h.FrameContentSize, true
}

func decodeSnappyBlock(dst, src []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrCorruptMessage, err)
	}
	if n > limit-len(dst) {
		return nil, fmt.Errorf("%w: snappy block declares %d bytes, more than %d", ErrMessageTooLarge, n, limit)
	}
	start := len(dst)
	dst = grow(dst, n)
	out, err := snappy.Decode(dst[start:start+n], src)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrCorruptMessage, err)
	}
	return dst[:start+len(out)], nil
}

func decodeXerial(dst, src []byte, limit int) ([]byte, error) {
	if len(src) < 16 {
		return nil, fmt.Errorf("%w: xerial snappy header truncated", ErrCorruptMessage)
	}
	dst = dst[:0]
	for b := src[16:]; len(b) > 0; {
		if len(b) < 4 {
			return nil, fmt.Errorf("%w: xerial snappy block length truncated", ErrCorruptMessage)
		}
		n := binary.BigEndian.Uint32(b)
		b = b[4:]
		if uint64(n) > uint64(len(b)) {
			return nil, fmt.Errorf("%w: xerial snappy block of %d bytes, %d left", ErrCorruptMessage, n, len(b))
		}
		var err error
		if dst, err = decodeSnappyBlock(dst, b[:n], limit); err != nil {
			return nil, err
		}
		b = b[n:]
	}
	return dst, nil
}

func readLimited(dst []byte, r io.Reader, limit int, codec string) ([]byte, error) {
	buf := bytes.NewBuffer(dst[:0])
	n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptMessage, codec, err)
	}
	if n > int64(limit) {
		return nil, fmt.Errorf("%w: %s data decodes to more than %d bytes", ErrMessageTooLarge, codec, limit)
	}
	return buf.Bytes(), nil
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n)
	copy(nb, b)
	return nb
}
