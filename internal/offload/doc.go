// Package offload is tiered storage: it copies closed ledgers to an object store or a file
// system and reads them back, so that old data can leave the bookies. It is our version of
// Pulsar's LedgerOffloader and its drivers.
//
// # Use
//
//	o, _ := offload.New(ctx, cfg, offload.Options{})   // cfg.Driver: aws-s3, S3, google-cloud-storage, azureblob, filesystem
//	_ = o.Check(ctx)                                     // put/get/delete a probe object: fail loudly at startup
//	res, _ := o.Offload(ctx, src, uid, map[string]string{"ManagedLedgerName": name})
//	h, _ := o.Open(ctx, ledgerID, uid, o.DriverMetadata())
//	es, _ := h.Read(ctx, 0, 99)                          // read-ahead and a shared cache behind it
//	_ = o.Delete(ctx, ledgerID, uid, o.DriverMetadata())
//
// # Contract
//
//   - Offload returns nil only after both objects are written and verified: the data object's
//     size matches what was written and the index object reads back and decodes. Until then
//     the caller must keep the bookie copy. A failed or canceled offload leaves at most
//     objects under its own uuid, which the caller deletes (Delete is idempotent) before it
//     retries under a new uuid; the ledger is never referenced by a half-written object.
//   - Reads return exactly the entries written, in order, each verified by its CRC32C; a
//     corrupt or truncated object is an error (ErrCorrupt), never fewer entries.
//   - Delete of a missing object succeeds; any other refusal is returned to the caller.
//
// # Object keys
//
// Per ledger, under the bucket (or the fileSystemURI directory), Pulsar's names:
//
//	<uuid>-ledger-<ledgerId>          data object
//	<uuid>-ledger-<ledgerId>-index    index object
//
// plus, for Check, a probe object "magnetar-offload-check-<random>" that is deleted again.
//
// # Data object, format version 1
//
// The data object is a sequence of blocks; a block is at most
// managedLedgerOffloadMaxBlockSizeInBytes (unless a single entry is larger) and is uploaded
// as one part of a multipart upload. All integers are big-endian.
//
//	block:
//	  uint32  magic        0x4D474F42 ("MGOB")
//	  uint16  version      1
//	  uint16  headerLength 24 (bytes of this header; readers skip what they do not know)
//	  int64   ledgerId
//	  int64   firstEntryId
//	  entry frames, ascending by entry id without gaps, until the next block or the end:
//	    int64   entryId
//	    uint32  length       payload bytes
//	    uint32  crc32c       Castagnoli CRC of the payload
//	    length  payload      the entry as the ledger returned it
//
// A block's length and entry count are in the index only, so a block is written as its
// entries arrive, without being buffered whole.
//
// # Index object, format version 1
//
//	uint32  magic            0x4D474F49 ("MGOI")
//	uint16  version          1
//	uint16  flags            0
//	int64   ledgerId
//	int64   lastEntryId      -1 for an empty ledger
//	int64   ledgerLength     payload bytes of all entries
//	int64   dataLength       bytes of the data object
//	uint32  blockSize        the block size the writer used
//	uint32  metadataLength   then that many bytes: JSON object of string -> string (the
//	                         ledger's metadata as the caller gave it, e.g. ManagedLedgerName)
//	uint32  blockCount       then per block, ascending:
//	  int64   firstEntryId
//	  int64   offset         of the block header in the data object
//	  int64   length         header plus frames
//	uint32  seekCount        then per seek point, ascending by entry id and offset:
//	  int64   entryId
//	  int64   offset         of that entry's frame, or of its block's header when it is the
//	                         block's first entry
//	uint32  crc32c           Castagnoli CRC of every byte before it
//
// Every block start is a seek point, and the writer adds one at the first frame after each
// managedLedgerOffloadReadBufferSizeInBytes within a block. The span from one seek point to
// the next (or to the end of the data object) is a chunk: the unit of a range read, of the
// read cache and of read-ahead. A chunk never crosses a block boundary, starts at a frame or
// block header and ends at a frame boundary.
//
// Decoders reject a wrong magic, an unknown version, a CRC mismatch, truncation, trailing
// bytes, non-ascending tables, offsets outside the data object and counts above limits.
//
// # Driver metadata
//
// DriverMetadata returns what identifies where a ledger went, recorded by the managed
// ledger next to the uuid: "bucket", "region", "serviceEndpoint" (object stores) or
// "fileSystemURI" (filesystem). Reading or deleting later uses the recorded metadata over
// the broker's current configuration, so changing the bucket does not lose old ledgers.
// Credentials are never recorded.
//
// # Files
//
// config.go (Pulsar's keys, defaults, Validate, policy merge), format.go (the formats above),
// store.go (the object-store seam; gocloud.dev/blob for S3, GCS, Azure and file://),
// store_hdfs.go (hdfs:// with github.com/colinmarc/hdfs/v2), drivers.go (config -> store),
// offloader.go (the Offloader interface and its one implementation), pool.go (one
// offloader per distinct configuration, for per-policy drivers), writer.go (ledger ->
// blocks and index), reader.go (offloaded-ledger reads, read-ahead), cache.go (bounded chunk
// cache shared by all readers), retry.go (backoff for transient store errors), metrics.go
// (brk_ledgeroffloader_* counters). docs/design/offload.md is the reader's guide.
package offload
