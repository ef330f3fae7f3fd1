// Package wire is Magnetar's codec for the Pulsar binary protocol: frames, the checksummed
// payload section of SEND and MESSAGE, batch bodies, and the one table that turns Go errors
// into the protocol's ServerError codes. The protobuf messages live in wire/pb (generated from
// wire/proto/pulsar_api.proto); compression codecs live in wire/compression.
//
// # Frame layout
//
// All integers are big-endian. TOTAL_SIZE counts every byte after itself.
//
// Simple command (everything except SEND and MESSAGE):
//
//	+------------+----------+------------------------------+
//	| TOTAL_SIZE | CMD_SIZE | BaseCommand (CMD_SIZE bytes) |
//	|   u32      |   u32    |   protobuf                   |
//	+------------+----------+------------------------------+
//	TOTAL_SIZE = 4 + CMD_SIZE
//
// Payload command (SEND client->broker, MESSAGE broker->client):
//
//	+------------+----------+-------------+
//	| TOTAL_SIZE | CMD_SIZE | BaseCommand |
//	+------------+----------+-------------+
//	  optional, broker->client only ("broker entry metadata"):
//	+--------+----------+----------------------------------+
//	| 0x0e02 | BEM_SIZE | BrokerEntryMetadata (BEM_SIZE)   |
//	|  u16   |   u32    |   protobuf                       |
//	+--------+----------+----------------------------------+
//	  the entry, stored verbatim by the broker:
//	+--------+----------+---------+-----------------+---------+
//	| 0x0e01 | CHECKSUM | MD_SIZE | MessageMetadata | PAYLOAD |
//	|  u16   |   u32    |   u32   |  (MD_SIZE)      |         |
//	+--------+----------+---------+-----------------+---------+
//	CHECKSUM  = CRC32C (Castagnoli) of MD_SIZE, MessageMetadata and PAYLOAD,
//	            i.e. of every byte after CHECKSUM up to the end of the frame.
//	TOTAL_SIZE = 4 + CMD_SIZE + len(everything after the command)
//
// PAYLOAD is the (possibly compressed, possibly encrypted) message body. When
// MessageMetadata has num_messages_in_batch (present, even if 1) the decompressed body is a
// batch: a sequence of
//
//	+----------+------------------------------------+------------------------------+
//	| SMM_SIZE | SingleMessageMetadata (SMM_SIZE)   | payload (payload_size bytes) |
//	|   u32    |   protobuf                         |                              |
//	+----------+------------------------------------+------------------------------+
//
// # Names used in this package
//
//   - headers-and-payload: everything after the BaseCommand of a payload command.
//   - entry: headers-and-payload from the 0x0e01 magic on. The broker stores exactly these
//     bytes as one ledger entry and replays them in MESSAGE frames, so compression, batching
//     and encryption pass through untouched.
//
// # Limits
//
// A frame whose TOTAL_SIZE exceeds the reader's max frame size (default
// DefaultMaxMessageSize + FramePadding, as the Java broker and the Go client use) is rejected
// before any of it is buffered. Decompression is bounded by the uncompressed size the
// metadata declares, which callers cap.
//
// # Version history
//
// Protocol version 20 (topic migration) is the newest this package describes; newer peers'
// unknown fields are ignored by the protobuf decoder.
package wire
