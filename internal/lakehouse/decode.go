package lakehouse

import (
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/compression"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// errUnconvertible marks a message that cannot become a row (its reason follows); the
// writer sends it to the dead-letter topic.
var errUnconvertible = errors.New("lakehouse: record cannot be converted")

// message is one message of an entry, as the writer turns it into a row. Its slices alias
// the entry (or the entry's decompressed body), valid until the next entry.
type message struct {
	batchIndex    int32 // -1: not a batch
	payload       []byte
	key           string
	hasKey        bool
	keyB64        bool
	props         []*pb.KeyValue
	eventTime     uint64
	sequenceID    uint64
	nullValue     bool
	schemaVersion []byte
}

// entryDecoder splits stored entries into messages. It keeps its buffers between entries,
// so decoding allocates only when an entry is larger than any before it.
type entryDecoder struct {
	body []byte // decompression buffer
	smm  pb.SingleMessageMetadata
	msgs []message
}

// maxUncompressed bounds what one entry may claim to decompress to: the broker's
// maxMessageSize is 5 MiB by default and a batch is at most that; a larger claim is corrupt.
const maxUncompressed = 256 << 20

// decode returns the entry's metadata and messages. A corrupt entry is an error wrapping
// errUnconvertible for the whole entry; so is an encrypted or chunked message, which no
// schema can decode here.
func (d *entryDecoder) decode(data []byte) (*pb.MessageMetadata, []message, error) {
	_, raw, err := wire.SplitHeadersAndPayload(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errUnconvertible, err)
	}
	en, err := wire.ParseEntry(raw, false)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errUnconvertible, err)
	}
	md, err := wire.ParseMetadata(en.Metadata)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errUnconvertible, err)
	}
	if md.MarkerType != nil {
		return md, nil, nil // transaction and replication markers: not records
	}
	if len(md.GetEncryptionKeys()) > 0 {
		return md, nil, fmt.Errorf("%w: encrypted message", errUnconvertible)
	}
	if md.GetNumChunksFromMsg() > 1 {
		return md, nil, fmt.Errorf("%w: chunked message", errUnconvertible)
	}
	body := en.Payload
	if c := md.GetCompression(); c != pb.CompressionType_NONE {
		n := md.GetUncompressedSize()
		if n > maxUncompressed {
			return md, nil, fmt.Errorf("%w: uncompressed size %d", errUnconvertible, n)
		}
		if d.body, err = compression.Decompress(c, d.body[:0], en.Payload, int(n)); err != nil {
			return md, nil, fmt.Errorf("%w: %w", errUnconvertible, err)
		}
		body = d.body
	}
	d.msgs = d.msgs[:0]
	if !wire.IsBatch(md) {
		d.msgs = append(d.msgs, message{
			batchIndex: -1, payload: body, key: md.GetPartitionKey(), hasKey: md.PartitionKey != nil,
			keyB64: md.GetPartitionKeyB64Encoded(), props: md.GetProperties(), eventTime: md.GetEventTime(),
			sequenceID: md.GetSequenceId(), nullValue: md.GetNullValue(), schemaVersion: md.GetSchemaVersion(),
		})
		return md, d.msgs, nil
	}
	n := wire.MessageCount(md)
	br := wire.NewBatchReader(body, n)
	for i := 0; i < n; i++ {
		p, err := br.Next(&d.smm)
		if err != nil {
			return md, nil, fmt.Errorf("%w: batch message %d: %w", errUnconvertible, i, err)
		}
		// The properties slice belongs to smm, which the next Next resets: keep our own.
		props := append([]*pb.KeyValue(nil), d.smm.GetProperties()...)
		d.msgs = append(d.msgs, message{
			batchIndex: int32(i), payload: p, key: d.smm.GetPartitionKey(), hasKey: d.smm.PartitionKey != nil,
			keyB64: d.smm.GetPartitionKeyB64Encoded(), props: props, eventTime: d.smm.GetEventTime(),
			sequenceID: d.smm.GetSequenceId(), nullValue: d.smm.GetNullValue(), schemaVersion: md.GetSchemaVersion(),
		})
	}
	return md, d.msgs, nil
}
