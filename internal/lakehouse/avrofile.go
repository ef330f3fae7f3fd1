package lakehouse

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/hamba/avro/v2"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// This file reads Avro object container files (manifests, manifest lists) whose every
// length, count and block size is checked before it is used. hamba/avro's ocf.Decoder
// allocates a block's declared size as is, inflates without a limit, and its skipping of
// fields the reader does not know loops an array's declared count even past the end of the
// data; a corrupt or hostile file in the warehouse must be an error, fast, not an
// allocation of gigabytes or a loop of 2^62 turns. hamba/avro still decodes the values,
// but only of blocks that walkDatum has already checked against the file's schema.

// Limits on what an Avro file may declare.
const (
	// maxAvroBlock bounds one block's bytes, compressed or not. Writers flush blocks of
	// kilobytes to a few MB (Java's default sync interval is 64 KB); a manifest of
	// millions of entries spans many blocks.
	maxAvroBlock = 64 << 20
	// maxAvroData bounds all blocks of a file together, uncompressed (a file of 16 KB
	// blocks that each inflate 1000-fold would otherwise stay under maxAvroBlock).
	// Iceberg's writers target manifests of 8 MB.
	maxAvroData = 256 << 20
	// maxAvroDepth bounds the nesting of the file's schema as walked (a recursive named
	// type could otherwise recurse without end on crafted data).
	maxAvroDepth = 32
	// avroWorkSlack is the number of values a block may hold beyond one per byte: values
	// of type null take no bytes, nothing else does.
	avroWorkSlack = 1 << 16
)

var avroMagic = []byte("Obj\x01")

// avroBuf reads Avro's binary encoding from b, every length checked against what is left.
type avroBuf struct {
	b   []byte
	off int
}

func (r *avroBuf) left() int { return len(r.b) - r.off }

func (r *avroBuf) long() (int64, error) {
	var u uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if r.off >= len(r.b) {
			return 0, io.ErrUnexpectedEOF
		}
		c := r.b[r.off]
		r.off++
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
	return 0, errors.New("varint longer than 10 bytes")
}

// take returns the next n bytes (n from the file: checked here).
func (r *avroBuf) take(n int64) ([]byte, error) {
	if n < 0 || n > int64(r.left()) {
		return nil, fmt.Errorf("length %d with %d bytes left", n, r.left())
	}
	p := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return p, nil
}

func (r *avroBuf) bytes() ([]byte, error) {
	n, err := r.long()
	if err != nil {
		return nil, err
	}
	return r.take(n)
}

// blockCount reads the item count of an array or map block. A negative count is followed
// by the block's size in bytes, returned as size (else -1).
func (r *avroBuf) blockCount() (count, size int64, err error) {
	if count, err = r.long(); err != nil || count >= 0 {
		return count, -1, err
	}
	if count == -count { // math.MinInt64
		return 0, 0, errors.New("bad block count")
	}
	if size, err = r.long(); err != nil {
		return 0, 0, err
	}
	if size < 0 || size > int64(r.left()) {
		return 0, 0, fmt.Errorf("block of %d bytes with %d left", size, r.left())
	}
	return -count, size, nil
}

// ocfFile is a parsed container file: its header and its blocks, decompressed.
type ocfFile struct {
	schema avro.Schema
	meta   map[string][]byte
	blocks []ocfBlock
}

type ocfBlock struct {
	count int64
	data  []byte
}

// readOCF parses an object container file and checks every block's data against the
// file's schema (walkDatum), so that decoding it afterwards is bounded by its size.
func readOCF(b []byte) (*ocfFile, error) {
	if !bytes.HasPrefix(b, avroMagic) {
		return nil, errors.New("not an Avro object container file")
	}
	r := &avroBuf{b: b, off: len(avroMagic)}
	meta := map[string][]byte{}
	for {
		n, _, err := r.blockCount()
		if err != nil {
			return nil, fmt.Errorf("header: %w", err)
		}
		if n == 0 {
			break
		}
		if n > int64(r.left()) { // each entry takes at least two bytes
			return nil, fmt.Errorf("header: %d entries with %d bytes left", n, r.left())
		}
		for range n {
			k, err := r.bytes()
			if err != nil {
				return nil, fmt.Errorf("header: %w", err)
			}
			v, err := r.bytes()
			if err != nil {
				return nil, fmt.Errorf("header: %w", err)
			}
			meta[string(k)] = v
		}
	}
	sync, err := r.take(16)
	if err != nil {
		return nil, fmt.Errorf("header sync marker: %w", err)
	}
	schema, err := avro.ParseBytesWithCache(meta["avro.schema"], "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	codec := string(meta["avro.codec"])
	f := &ocfFile{schema: schema, meta: meta}
	total := 0
	for r.left() > 0 {
		count, err := r.long()
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", len(f.blocks), err)
		}
		size, err := r.long()
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", len(f.blocks), err)
		}
		if count < 0 || size > maxAvroBlock {
			return nil, fmt.Errorf("block %d: %d values in %d bytes (limit %d)", len(f.blocks), count, size, maxAvroBlock)
		}
		raw, err := r.take(size)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", len(f.blocks), err)
		}
		if s, err := r.take(16); err != nil || !bytes.Equal(s, sync) {
			return nil, fmt.Errorf("block %d: no sync marker after it", len(f.blocks))
		}
		data, err := decompressBlock(codec, raw)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", len(f.blocks), err)
		}
		if total += len(data); total > maxAvroData {
			return nil, fmt.Errorf("more than %d bytes of blocks", maxAvroData)
		}
		if count > int64(len(data))+avroWorkSlack {
			return nil, fmt.Errorf("block %d: %d values in %d bytes", len(f.blocks), count, len(data))
		}
		w := &avroWalk{avroBuf: avroBuf{b: data}, work: len(data) + avroWorkSlack}
		for range count {
			if err := w.walk(schema, 0); err != nil {
				return nil, fmt.Errorf("block %d at byte %d: %w", len(f.blocks), w.off, err)
			}
		}
		if w.left() != 0 {
			return nil, fmt.Errorf("block %d: %d bytes after its %d values", len(f.blocks), w.left(), count)
		}
		f.blocks = append(f.blocks, ocfBlock{count: count, data: data})
	}
	return f, nil
}

// decompressBlock undoes the file's codec, the result bounded by maxAvroBlock.
func decompressBlock(codec string, raw []byte) ([]byte, error) {
	switch codec {
	case "", "null":
		return raw, nil
	case "deflate":
		out, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(raw)), maxAvroBlock+1))
		if err != nil {
			return nil, fmt.Errorf("deflate: %w", err)
		}
		if len(out) > maxAvroBlock {
			return nil, fmt.Errorf("deflate: more than %d bytes", maxAvroBlock)
		}
		return out, nil
	case "snappy": // Avro's snappy: the compressed block, then the CRC-32 of the plain one
		if len(raw) < 4 {
			return nil, errors.New("snappy: block without checksum")
		}
		n, err := s2.DecodedLen(raw[:len(raw)-4])
		if err != nil || n > maxAvroBlock {
			return nil, fmt.Errorf("snappy: decoded length %d (limit %d): %v", n, maxAvroBlock, err)
		}
		out, err := s2.Decode(nil, raw[:len(raw)-4])
		if err != nil {
			return nil, fmt.Errorf("snappy: %w", err)
		}
		if crc32.ChecksumIEEE(out) != binary.BigEndian.Uint32(raw[len(raw)-4:]) {
			return nil, errors.New("snappy: checksum mismatch")
		}
		return out, nil
	case "zstandard":
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxAvroBlock))
		if err != nil {
			return nil, fmt.Errorf("zstandard: %w", err)
		}
		defer d.Close()
		out, err := d.DecodeAll(raw, nil)
		if err != nil {
			return nil, fmt.Errorf("zstandard: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown codec %q", codec)
}

// avroWalk steps over values of a schema, checking every length, count, union branch and
// enum index; work counts down the values it may visit.
type avroWalk struct {
	avroBuf
	work int
}

func (w *avroWalk) walk(s avro.Schema, depth int) error {
	if depth > maxAvroDepth {
		return fmt.Errorf("values nested deeper than %d", maxAvroDepth)
	}
	if w.work--; w.work < 0 {
		return errors.New("more values than the block's bytes allow")
	}
	var err error
	switch s := s.(type) {
	case *avro.NullSchema:
	case *avro.PrimitiveSchema:
		switch s.Type() {
		case avro.Null:
		case avro.Boolean:
			_, err = w.take(1)
		case avro.Int, avro.Long:
			_, err = w.long()
		case avro.Float:
			_, err = w.take(4)
		case avro.Double:
			_, err = w.take(8)
		case avro.String, avro.Bytes:
			_, err = w.bytes()
		default:
			err = fmt.Errorf("unknown primitive type %s", s.Type())
		}
	case *avro.FixedSchema:
		_, err = w.take(int64(s.Size()))
	case *avro.EnumSchema:
		err = w.index(len(s.Symbols()))
	case *avro.UnionSchema:
		i, err2 := w.long()
		if err2 != nil {
			return err2
		}
		if i < 0 || i >= int64(len(s.Types())) {
			return fmt.Errorf("union branch %d of %d", i, len(s.Types()))
		}
		return w.walk(s.Types()[i], depth+1)
	case *avro.RecordSchema:
		for _, f := range s.Fields() {
			if err := w.walk(f.Type(), depth+1); err != nil {
				return fmt.Errorf("%s: %w", f.Name(), err)
			}
		}
	case *avro.ArraySchema:
		err = w.blocks(func() error { return w.walk(s.Items(), depth+1) })
	case *avro.MapSchema:
		err = w.blocks(func() error {
			if _, err := w.bytes(); err != nil {
				return err
			}
			return w.walk(s.Values(), depth+1)
		})
	case *avro.RefSchema:
		return w.walk(s.Schema(), depth+1)
	default:
		err = fmt.Errorf("unsupported schema %T", s)
	}
	return err
}

func (w *avroWalk) index(n int) error {
	i, err := w.long()
	if err == nil && (i < 0 || i >= int64(n)) {
		err = fmt.Errorf("index %d of %d", i, n)
	}
	return err
}

// blocks walks the blocks of an array or map; item walks one item.
func (w *avroWalk) blocks(item func() error) error {
	for {
		count, size, err := w.blockCount()
		if err != nil || count == 0 {
			return err
		}
		if count > int64(w.work) {
			return fmt.Errorf("%d items, more than the block's bytes allow", count)
		}
		start := w.off
		for range count {
			if err := item(); err != nil {
				return err
			}
		}
		if size >= 0 && int64(w.off-start) != size {
			return fmt.Errorf("items of %d bytes in a block said to have %d", w.off-start, size)
		}
	}
}
