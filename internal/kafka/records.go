package kafka

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/txn"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/compression"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Record formats. A Kafka produce carries record batches (magic 2):
//
//	+-------------+-------------+-------------+-------+-------+------------+-----------------+
//	| base offset | batchLength | leaderEpoch | magic |  crc  | attributes | lastOffsetDelta |
//	|    i64      |    i32      |    i32      |  i8   | u32   |    i16     |      i32        |
//	+-------------+-------------+-------------+-------+-------+------------+-----------------+
//	| firstTimestamp | maxTimestamp | producerId | producerEpoch | baseSequence | count | records
//	|     i64        |     i64      |    i64     |     i16       |     i32      |  i32  | ...
//	+----------------+--------------+------------+---------------+--------------+-------+--------
//	crc = CRC-32C of everything from attributes to the end; batchLength counts the bytes after
//	itself; attributes: bits 0-2 codec, bit 3 log-append time, bit 4 transactional, bit 5
//	control. records (compressed as a whole with the codec) are, each:
//	varint length, i8 attributes, varlong timestampDelta, varint offsetDelta,
//	varint keyLen + key (-1: null), varint valueLen + value (-1: null),
//	varint headerCount, then per header varint keyLen + key, varint valueLen + value.
//
// Magnetar stores each batch as ONE Pulsar entry, a Pulsar batch of the same records, so a
// Pulsar consumer reads them like any batch and the offsets of an entry are contiguous:
//
//	Kafka                     Pulsar (MessageMetadata / SingleMessageMetadata)
//	record key                partition_key (base64 + partition_key_b64_encoded if not UTF-8;
//	                          null_partition_key for a null key)
//	record value              message payload; null: null_value (a tombstone)
//	headers                   properties (key -> value, in order)
//	record timestamp          event_time (a timestamp <= 0 is left unset)
//	producer id / sequence    producer_name "kafka-<id>", sequence_id / highest_sequence_id
//	codec                     compression: gzip -> ZLIB, snappy, lz4, zstd -> the same
//
// The entry's offsets come from its broker entry metadata: index is the offset of its last
// message (PIP-70), so its first is index - num_messages + 1 (offsets.go).

const (
	batchHeaderSize = 61 // bytes before the records
	attrCodecMask   = 0x07
	attrTxn         = 0x10
	attrControl     = 0x20
)

// producedBatch is a decoded, validated produce batch.
type producedBatch struct {
	codec         int
	attributes    int16
	firstTS       int64
	maxTS         int64
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	records       []record
}

// record is one Kafka record; key and value are nil when null. Slices alias the
// decompressed records.
type record struct {
	timestamp int64
	key       []byte
	value     []byte
	headers   []header
}

type header struct {
	key   string
	value []byte
}

// parseBatches splits a Produce partition's records section into batches and decodes each.
// limit bounds the decompressed records of one batch. A corrupt batch fails the whole set:
// Kafka appends a partition's records atomically.
func parseBatches(raw []byte, limit int) ([]producedBatch, error) {
	var out []producedBatch
	for len(raw) > 0 {
		if len(raw) < 12 {
			return nil, fmt.Errorf("%w: %d trailing bytes are not a record batch", ErrCorruptMessage, len(raw))
		}
		n := int64(int32(binary.BigEndian.Uint32(raw[8:])))
		if n < batchHeaderSize-12 || n > int64(len(raw)-12) {
			return nil, fmt.Errorf("%w: batch length %d with %d bytes left", ErrCorruptMessage, n, len(raw)-12)
		}
		b, err := parseBatch(raw[:12+n], limit)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
		raw = raw[12+n:]
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no record batch", ErrInvalidRecord)
	}
	return out, nil
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

func parseBatch(raw []byte, limit int) (producedBatch, error) {
	if len(raw) < batchHeaderSize {
		return producedBatch{}, fmt.Errorf("%w: record batch of %d bytes", ErrCorruptMessage, len(raw))
	}
	if magic := int8(raw[16]); magic != 2 {
		return producedBatch{}, fmt.Errorf("%w: record batch magic %d (only v2 batches are accepted)", ErrCorruptMessage, magic)
	}
	if want, got := binary.BigEndian.Uint32(raw[17:]), crc32.Checksum(raw[21:], crc32c); want != got {
		return producedBatch{}, fmt.Errorf("%w: record batch CRC %#08x, computed %#08x", ErrCorruptMessage, want, got)
	}
	b := producedBatch{
		attributes:    int16(binary.BigEndian.Uint16(raw[21:])),
		firstTS:       int64(binary.BigEndian.Uint64(raw[27:])),
		maxTS:         int64(binary.BigEndian.Uint64(raw[35:])),
		producerID:    int64(binary.BigEndian.Uint64(raw[43:])),
		producerEpoch: int16(binary.BigEndian.Uint16(raw[51:])),
		baseSequence:  int32(binary.BigEndian.Uint32(raw[53:])),
	}
	b.codec = int(b.attributes & attrCodecMask)
	if b.attributes&attrControl != 0 {
		return producedBatch{}, fmt.Errorf("%w: clients may not produce control batches", ErrInvalidRecord)
	}
	count := int32(binary.BigEndian.Uint32(raw[57:]))
	lastDelta := int32(binary.BigEndian.Uint32(raw[23:]))
	if count <= 0 || lastDelta != count-1 {
		return producedBatch{}, fmt.Errorf("%w: batch of %d records with last offset delta %d", ErrInvalidRecord, count, lastDelta)
	}
	body, err := decompressRecords(b.codec, nil, raw[batchHeaderSize:], limit)
	if err != nil {
		return producedBatch{}, err
	}
	// Each record takes at least 7 bytes, so count cannot make us allocate more than the
	// body justifies.
	if int64(count) > int64(len(body))/7+1 {
		return producedBatch{}, fmt.Errorf("%w: %d records in %d bytes", ErrCorruptMessage, count, len(body))
	}
	b.records = make([]record, 0, count)
	r := reader{b: body}
	for i := int32(0); i < count; i++ {
		rec, err := r.record(b.firstTS, i)
		if err != nil {
			return producedBatch{}, fmt.Errorf("%w: record %d: %v", ErrCorruptMessage, i, err)
		}
		b.records = append(b.records, rec)
	}
	if len(r.b) != 0 {
		return producedBatch{}, fmt.Errorf("%w: %d bytes after the last record", ErrCorruptMessage, len(r.b))
	}
	return b, nil
}

// reader decodes Kafka varint-framed fields.
type reader struct{ b []byte }

func (r *reader) varint() (int64, error) {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	r.b = r.b[n:]
	return v, nil
}

// bytesField reads a varint length and that many bytes; -1 is null.
func (r *reader) bytesField() ([]byte, error) {
	n, err := r.varint()
	if err != nil {
		return nil, err
	}
	if n == -1 {
		return nil, nil
	}
	if n < 0 || n > int64(len(r.b)) {
		return nil, fmt.Errorf("length %d with %d bytes left", n, len(r.b))
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

func (r *reader) record(firstTS int64, i int32) (record, error) {
	length, err := r.varint()
	if err != nil {
		return record{}, err
	}
	if length < 0 || length > int64(len(r.b)) {
		return record{}, fmt.Errorf("record length %d with %d bytes left", length, len(r.b))
	}
	rr := reader{b: r.b[:length]}
	r.b = r.b[length:]
	if len(rr.b) < 1 {
		return record{}, io.ErrUnexpectedEOF
	}
	rr.b = rr.b[1:] // attributes, unused
	tsDelta, err := rr.varint()
	if err != nil {
		return record{}, err
	}
	offDelta, err := rr.varint()
	if err != nil {
		return record{}, err
	}
	if offDelta != int64(i) {
		return record{}, fmt.Errorf("offset delta %d, want %d", offDelta, i)
	}
	rec := record{timestamp: firstTS + tsDelta}
	if rec.key, err = rr.bytesField(); err != nil {
		return record{}, err
	}
	if rec.value, err = rr.bytesField(); err != nil {
		return record{}, err
	}
	nh, err := rr.varint()
	if err != nil {
		return record{}, err
	}
	if nh < 0 || nh > int64(len(rr.b))/2 {
		return record{}, fmt.Errorf("%d headers in %d bytes", nh, len(rr.b))
	}
	for j := int64(0); j < nh; j++ {
		k, err := rr.bytesField()
		if err != nil {
			return record{}, err
		}
		if k == nil {
			return record{}, fmt.Errorf("null header key")
		}
		v, err := rr.bytesField()
		if err != nil {
			return record{}, err
		}
		rec.headers = append(rec.headers, header{key: string(k), value: v})
	}
	if len(rr.b) != 0 {
		return record{}, fmt.Errorf("%d bytes after the record's headers", len(rr.b))
	}
	return rec, nil
}

// entryOptions are what a produce adds to the records when it stores a batch.
type entryOptions struct {
	producerName string
	publishTime  int64 // ms
	maxBytes     int   // largest entry accepted
}

// toPulsarEntry encodes b as one Pulsar entry (magic, checksum, metadata, batch payload).
func toPulsarEntry(b *producedBatch, o entryOptions) ([]byte, error) {
	// Sized once: growing by append re-copied a 1 MB batch ~20 times (a fifth of the
	// server's CPU in a 1 KiB produce profile, most of it memmove and GC).
	size := 0
	for i := range b.records {
		rec := &b.records[i]
		size += len(rec.key) + len(rec.value) + 48
		for _, h := range rec.headers {
			size += len(h.key) + len(h.value) + 8
		}
	}
	body := make([]byte, 0, size)
	smm := &pb.SingleMessageMetadata{}
	for i := range b.records {
		rec := &b.records[i]
		proto.Reset(smm)
		setKey(rec.key, &smm.PartitionKey, &smm.PartitionKeyB64Encoded, &smm.NullPartitionKey)
		if rec.value == nil {
			smm.NullValue = proto.Bool(true)
		}
		if rec.timestamp > 0 {
			smm.EventTime = proto.Uint64(uint64(rec.timestamp))
		}
		if len(rec.headers) > 0 {
			smm.Properties = make([]*pb.KeyValue, len(rec.headers))
			for j, h := range rec.headers {
				smm.Properties[j] = &pb.KeyValue{Key: proto.String(h.key), Value: proto.String(string(h.value))}
			}
		}
		if b.baseSequence >= 0 {
			smm.SequenceId = proto.Uint64(uint64(b.baseSequence) + uint64(i))
		}
		var err error
		if body, err = wire.AppendBatchMessage(body, smm, rec.value); err != nil {
			return nil, err
		}
	}
	md := &pb.MessageMetadata{
		ProducerName:       proto.String(o.producerName),
		SequenceId:         proto.Uint64(0),
		PublishTime:        proto.Uint64(uint64(o.publishTime)),
		NumMessagesInBatch: proto.Int32(int32(len(b.records))),
	}
	if b.baseSequence >= 0 {
		md.SequenceId = proto.Uint64(uint64(b.baseSequence))
		md.HighestSequenceId = proto.Uint64(uint64(b.baseSequence) + uint64(len(b.records)) - 1)
	}
	payload := body
	if c := pulsarCodec(b.codec); c != pb.CompressionType_NONE {
		var err error
		if payload, err = compression.Compress(c, nil, body); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnknownServer, err)
		}
		md.Compression = c.Enum()
		md.UncompressedSize = proto.Uint32(uint32(len(body)))
	}
	entry, err := wire.AppendEntry(nil, md, payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnknownServer, err)
	}
	if o.maxBytes > 0 && len(entry) > o.maxBytes {
		return nil, fmt.Errorf("%w: batch stores as %d bytes, more than %d", ErrMessageTooLarge, len(entry), o.maxBytes)
	}
	return entry, nil
}

// setKey stores a Kafka key in Pulsar's key fields.
func setKey(key []byte, pk **string, b64, null **bool) {
	switch {
	case key == nil:
		*null = proto.Bool(true)
	case utf8.Valid(key):
		*pk = proto.String(string(key))
	default:
		*pk = proto.String(base64.StdEncoding.EncodeToString(key))
		*b64 = proto.Bool(true)
	}
}

// getKey is setKey's inverse (nil for no key).
func getKey(pk *string, b64, null *bool) []byte {
	if pk == nil || (null != nil && *null) {
		return nil
	}
	if b64 != nil && *b64 {
		if k, err := base64.StdEncoding.DecodeString(*pk); err == nil {
			return k
		}
	}
	return []byte(*pk)
}

// fetchLimit bounds the decompressed payload of one stored entry read for a Fetch.
const fetchLimit = compression.MaxUncompressedSize

// zeroBatchHeader reserves a batch header's room, filled in once the records are written.
var zeroBatchHeader [batchHeaderSize]byte

// appendKafkaBatch converts a stored Pulsar entry (from the 0x0e01 magic on) whose first
// message has offset base into one uncompressed Kafka record batch appended to dst. It
// returns dst unchanged and an error for an entry it cannot read; the caller skips such an
// entry's offsets rather than stall a consumer forever.
func appendKafkaBatch(dst []byte, entry []byte, base int64) ([]byte, int, error) {
	e, err := wire.ParseEntry(entry, false)
	if err != nil {
		return dst, 0, err
	}
	md, err := wire.ParseMetadata(e.Metadata)
	if err != nil {
		return dst, 0, err
	}
	payload := e.Payload
	if md.GetCompression() != pb.CompressionType_NONE {
		size := int(md.GetUncompressedSize())
		if size > fetchLimit {
			return dst, 0, fmt.Errorf("%w: entry declares %d uncompressed bytes", ErrCorruptMessage, size)
		}
		if payload, err = compression.Decompress(md.GetCompression(), nil, e.Payload, size); err != nil {
			return dst, 0, err
		}
	}
	publish := int64(md.GetPublishTime())
	start := len(dst)
	dst = append(dst, zeroBatchHeader[:]...)
	var firstTS, maxTS int64
	n := 0
	add := func(ts int64, key, value []byte, props []*pb.KeyValue) {
		if ts <= 0 {
			ts = publish
		}
		if n == 0 {
			firstTS, maxTS = ts, ts
		}
		maxTS = max(maxTS, ts)
		dst = appendRecord(dst, int32(n), ts-firstTS, key, value, props)
		n++
	}
	if !wire.IsBatch(md) {
		var v []byte = payload
		if md.GetNullValue() {
			v = nil
		} else if v == nil {
			v = []byte{}
		}
		add(int64(md.GetEventTime()), getKey(md.PartitionKey, md.PartitionKeyB64Encoded, md.NullPartitionKey), v, md.Properties)
	} else {
		br := wire.NewBatchReader(payload, wire.MessageCount(md))
		smm := &pb.SingleMessageMetadata{}
		for {
			p, err := br.Next(smm)
			if err == io.EOF {
				break
			}
			if err != nil {
				return dst[:start], 0, err
			}
			if smm.GetNullValue() {
				p = nil
			} else if p == nil {
				p = []byte{}
			}
			add(int64(smm.GetEventTime()), getKey(smm.PartitionKey, smm.PartitionKeyB64Encoded, smm.NullPartitionKey), p, smm.Properties)
		}
	}
	if n == 0 {
		return dst[:start], 0, fmt.Errorf("%w: entry has no messages", ErrCorruptMessage)
	}
	bh := batchHead{base: base, lastDelta: int32(n - 1), firstTS: firstTS, maxTS: maxTS, pid: -1, epoch: -1, count: int32(n)}
	if md.TxnidMostBits != nil && md.TxnidLeastBits != nil {
		// A transaction's batch, as Kafka marks it: the transactional attribute and, for
		// one a Kafka producer wrote, its producer id and epoch.
		bh.attrs = attrTxn
		if id, epoch, ok := parseIdemProducerName(md.GetProducerName()); ok {
			bh.pid, bh.epoch = id, epoch
		}
	}
	bh.put(dst[start:])
	return dst, n, nil
}

// batchHead is what a record batch's header says (magic 2, no codec, create time).
type batchHead struct {
	base           int64
	lastDelta      int32
	firstTS, maxTS int64
	attrs          int16
	pid            int64
	epoch          int16
	count          int32
}

// put writes the header into h (a whole batch, records after the header) with its length
// and CRC.
func (bh batchHead) put(h []byte) {
	binary.BigEndian.PutUint64(h[0:], uint64(bh.base))
	binary.BigEndian.PutUint32(h[8:], uint32(len(h)-12))
	binary.BigEndian.PutUint32(h[12:], 0) // partition leader epoch
	h[16] = 2
	binary.BigEndian.PutUint16(h[21:], uint16(bh.attrs))
	binary.BigEndian.PutUint32(h[23:], uint32(bh.lastDelta))
	binary.BigEndian.PutUint64(h[27:], uint64(bh.firstTS))
	binary.BigEndian.PutUint64(h[35:], uint64(bh.maxTS))
	binary.BigEndian.PutUint64(h[43:], uint64(bh.pid))
	binary.BigEndian.PutUint16(h[51:], uint16(bh.epoch))
	binary.BigEndian.PutUint32(h[53:], ^uint32(0)) // base sequence -1
	binary.BigEndian.PutUint32(h[57:], uint32(bh.count))
	binary.BigEndian.PutUint32(h[17:], crc32.Checksum(h[21:], crc32c))
}

// appendControlBatch appends the control batch Kafka writes for a transaction marker: one
// control record whose key is (version 0, type 1 commit / 0 abort) and value (version 0,
// coordinator epoch 0), at the marker's offset. The producer id and epoch are those of
// the Kafka producer that wrote the marker's transaction, as owner (partition.txnOwners)
// tells, else -1 (consumers use them only to match AbortedTransactions, which Magnetar
// leaves empty; tools show them).
func appendControlBatch(dst []byte, e Entry, commit bool, owner func(txn.ID) (int64, int16, bool)) []byte {
	var ts int64 = -1
	pid, epoch := int64(-1), int16(-1)
	if pe, err := wire.ParseEntry(e.Data, false); err == nil {
		if md, err := wire.ParseMetadata(pe.Metadata); err == nil {
			ts = int64(md.GetPublishTime())
			if info := txn.InfoOf(md); info.InTxn && owner != nil {
				if id, ep, ok := owner(info.Txn); ok {
					pid, epoch = id, ep
				}
			}
		}
	}
	typ := byte(0)
	if commit {
		typ = 1
	}
	start := len(dst)
	dst = append(dst, zeroBatchHeader[:]...)
	key := []byte{0, 0, 0, typ}
	value := []byte{0, 0, 0, 0, 0, 0}
	dst = appendRecord(dst, 0, 0, key, value, nil)
	batchHead{base: e.Base, lastDelta: int32(e.Count - 1), firstTS: ts, maxTS: ts,
		attrs: attrTxn | attrControl, pid: pid, epoch: epoch, count: 1}.put(dst[start:])
	return dst
}

// appendEmptyBatch appends a batch without records covering offsets [base, base+count):
// what Kafka's compaction leaves of a batch whose records all went (KAFKA-5443). Clients
// move their fetch offset past it, so offsets whose records no consumer may see need
// not stall one.
func appendEmptyBatch(dst []byte, base int64, count int) []byte {
	start := len(dst)
	dst = append(dst, zeroBatchHeader[:]...)
	batchHead{base: base, lastDelta: int32(count - 1), firstTS: -1, maxTS: -1, pid: -1, epoch: -1}.put(dst[start:])
	return dst
}

// appendRecord appends one Kafka record. The length prefix is computed first so the record
// is written straight into dst: building it in a scratch buffer first allocated and copied
// every record larger than the scratch (all of them at 1 KiB).
func appendRecord(dst []byte, offDelta int32, tsDelta int64, key, value []byte, props []*pb.KeyValue) []byte {
	n := 1 + varintLen(tsDelta) + varintLen(int64(offDelta)) + varBytesLen(key) + varBytesLen(value) +
		varintLen(int64(len(props)))
	for _, kv := range props {
		n += varStringLen(kv.GetKey()) + varStringLen(kv.GetValue())
	}
	dst = binary.AppendVarint(dst, int64(n))
	dst = append(dst, 0) // attributes
	dst = binary.AppendVarint(dst, tsDelta)
	dst = binary.AppendVarint(dst, int64(offDelta))
	dst = appendVarBytes(dst, key)
	dst = appendVarBytes(dst, value)
	dst = binary.AppendVarint(dst, int64(len(props)))
	for _, kv := range props {
		dst = appendVarString(dst, kv.GetKey())
		dst = appendVarString(dst, kv.GetValue())
	}
	return dst
}

func appendVarBytes(dst, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(v)))
	return append(dst, v...)
}

func appendVarString(dst []byte, v string) []byte {
	dst = binary.AppendVarint(dst, int64(len(v)))
	return append(dst, v...)
}

// varintLen is the size of x as a zig-zag varint.
func varintLen(x int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], x)
}

func varBytesLen(v []byte) int {
	if v == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(v))) + len(v)
}

func varStringLen(v string) int { return varintLen(int64(len(v))) + len(v) }

func crc32c32(b []byte) uint32 { return crc32.Checksum(b, crc32c) }
