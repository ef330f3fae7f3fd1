package compression

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// MaxUncompressedSize caps the size a payload may declare (and decode to). It is far above
// any legal message (5 MiB by default) yet keeps a hostile header from reserving gigabytes.
const MaxUncompressedSize = 64 << 20

// Errors of this package.
var (
	ErrUnknownCodec = errors.New("compression: unknown compression type")
	ErrCorrupt      = errors.New("compression: corrupt input")
	ErrTooLarge     = errors.New("compression: declared size too large")
)

// Compress appends src compressed with t to dst[:0] (reusing dst's memory when it is large
// enough) and returns the result.
func Compress(t pb.CompressionType, dst, src []byte) ([]byte, error) {
	switch t {
	case pb.CompressionType_NONE:
		return append(dst[:0], src...), nil
	case pb.CompressionType_LZ4:
		return compressLZ4(dst, src), nil
	case pb.CompressionType_ZLIB:
		var buf bytes.Buffer
		buf.Grow(len(src)/2 + 64)
		w := zlib.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			return nil, fmt.Errorf("compression: zlib: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("compression: zlib: %w", err)
		}
		return append(dst[:0], buf.Bytes()...), nil
	case pb.CompressionType_ZSTD:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(src, dst[:0]), nil
	case pb.CompressionType_SNAPPY:
		return snappy.Encode(dst[:cap(dst)], src), nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, t)
}

// Decompress decodes src, compressed with t, into dst[:0] (reusing its memory when large
// enough). size is the uncompressed size the metadata declares; the output must be exactly
// that long. For NONE, src is returned as is.
func Decompress(t pb.CompressionType, dst, src []byte, size int) ([]byte, error) {
	if size < 0 || size > MaxUncompressedSize {
		return nil, fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, size, MaxUncompressedSize)
	}
	var (
		out []byte
		err error
	)
	switch t {
	case pb.CompressionType_NONE:
		return src, nil
	case pb.CompressionType_LZ4:
		out, err = decompressLZ4(dst, src, size)
	case pb.CompressionType_ZLIB:
		out, err = decompressZlib(dst, src, size)
	case pb.CompressionType_ZSTD:
		out, err = decompressZstd(dst, src, size)
	case pb.CompressionType_SNAPPY:
		out, err = decompressSnappy(dst, src, size)
	default:
		return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, t)
	}
	if err != nil {
		return nil, err
	}
	if len(out) != size {
		return nil, fmt.Errorf("%w: %s decoded to %d bytes, metadata says %d", ErrCorrupt, t, len(out), size)
	}
	return out, nil
}

func grow(dst []byte, n int) []byte {
	if cap(dst) >= n {
		return dst[:n]
	}
	return make([]byte, n)
}

func compressLZ4(dst, src []byte) []byte {
	bound := lz4.CompressBlockBound(len(src))
	dst = grow(dst, bound)
	var c lz4.Compressor
	n, err := c.CompressBlock(src, dst)
	if err == nil && n > 0 {
		return dst[:n]
	}
	// Incompressible (or a compressor error, which cannot happen with a bound-sized
	// destination): write one literal-only sequence. Token high nibble = literal length,
	// 15 meaning "more length bytes follow", each 255 adding 255, the last byte < 255.
	dst = dst[:0]
	l := len(src)
	if l < 15 {
		dst = append(dst, byte(l<<4))
	} else {
		dst = append(dst, 0xF0)
		for l -= 15; l >= 255; l -= 255 {
			dst = append(dst, 255)
		}
		dst = append(dst, byte(l))
	}
	return append(dst, src...)
}

func decompressLZ4(dst, src []byte, size int) ([]byte, error) {
	dst = grow(dst, size)
	if size == 0 {
		// An empty input compresses to a single zero token; nothing to decode.
		return dst, nil
	}
	n, err := lz4.UncompressBlock(src, dst)
	if err != nil {
		return nil, fmt.Errorf("%w: lz4: %w", ErrCorrupt, err)
	}
	return dst[:n], nil
}

func decompressZlib(dst, src []byte, size int) ([]byte, error) {
	r, err := zlib.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("%w: zlib: %w", ErrCorrupt, err)
	}
	defer r.Close()
	return readBounded(dst, r, size, "zlib")
}

// readBounded reads exactly size bytes from r and fails if r has more: a hostile stream
// cannot make us hold more than size+1 bytes.
func readBounded(dst []byte, r io.Reader, size int, codec string) ([]byte, error) {
	dst = grow(dst, size)
	if _, err := io.ReadFull(r, dst); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, codec, err)
	}
	var one [1]byte
	if n, _ := r.Read(one[:]); n > 0 {
		return nil, fmt.Errorf("%w: %s: longer than the declared %d bytes", ErrCorrupt, codec, size)
	}
	return dst, nil
}

var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
	zstdErr  error
)

// zstd encoders and decoders are expensive to build and safe for concurrent EncodeAll /
// DecodeAll, so one of each is shared by the process.
func zstdInit() {
	zstdEnc, zstdErr = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if zstdErr != nil {
		return
	}
	zstdDec, zstdErr = zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(MaxUncompressedSize),
		zstd.WithDecoderMaxWindow(MaxUncompressedSize))
}

func zstdEncoder() (*zstd.Encoder, error) {
	zstdOnce.Do(zstdInit)
	if zstdErr != nil {
		return nil, fmt.Errorf("compression: zstd: %w", zstdErr)
	}
	return zstdEnc, nil
}

func decompressZstd(dst, src []byte, size int) ([]byte, error) {
	zstdOnce.Do(zstdInit)
	if zstdErr != nil {
		return nil, fmt.Errorf("compression: zstd: %w", zstdErr)
	}
	// NB: a frame may declare a content size larger than metadata claims; the decoder's
	// max-memory option bounds what it allocates, and the length check in Decompress
	// rejects the mismatch.
	out, err := zstdDec.DecodeAll(src, grow(dst, 0)[:0])
	if err != nil {
		return nil, fmt.Errorf("%w: zstd: %w", ErrCorrupt, err)
	}
	return out, nil
}

func decompressSnappy(dst, src []byte, size int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %w", ErrCorrupt, err)
	}
	if n != size {
		return nil, fmt.Errorf("%w: snappy block holds %d bytes, metadata says %d", ErrCorrupt, n, size)
	}
	out, err := snappy.Decode(grow(dst, size), src)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %w", ErrCorrupt, err)
	}
	return out, nil
}
