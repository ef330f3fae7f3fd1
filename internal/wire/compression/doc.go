// Package compression implements the payload codecs of the Pulsar protocol, bit-compatible
// with the official clients:
//
//	CompressionType  value  on-the-wire format
//	NONE             0      raw bytes
//	LZ4              1      raw LZ4 *block* (no frame header); decoding needs the
//	                        uncompressed size from MessageMetadata.uncompressed_size
//	ZLIB             2      zlib stream (RFC 1950: header, deflate, adler32)
//	ZSTD             3      standard zstd frame
//	SNAPPY           4      raw snappy *block* (not the framed/stream format)
//
// The codec applies to the whole payload of an entry (the whole batch body for batches).
// The broker never re-encodes stored entries; it decodes only to look inside batches
// (peek, Key_Shared routing, compaction).
//
// LZ4 note: when the block compressor finds the input incompressible it produces nothing;
// we then emit a literal-only block by hand (one token whose literal length is the input
// length, then the input), as the Go client does, so every LZ4 decoder can read it.
//
// Decoding is bounded: the caller passes the declared uncompressed size, which must not
// exceed MaxUncompressedSize, and output longer or shorter than declared is an error.
package compression
