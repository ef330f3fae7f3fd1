// Package bookieproto is the bookie's network protocol: frame layout, request and response
// encoding, status codes, and the pipelined Client the ledger library uses. The bookie server
// (internal/bookie) and the ledger client (internal/ledger) both import it; neither imports the
// other.
//
// # Frames
//
// A connection carries frames in both directions over TCP. Integers are big-endian; int64
// fields are two's complement. Every frame is:
//
//	offset size  field
//	0      4     length      bytes that follow this field (12 + body), at most the frame
//	                         limit (nettyMaxFrameSizeBytes, default 5,253,120); a longer or
//	                         shorter-than-header length is malformed
//	4      1     version     ProtocolVersion (1); anything else is malformed
//	5      1     op          request op code; a response carries the same op | 0x80
//	6      2     flags       request flags (bit 0 FENCE, bit 1 RECOVERY; others must be 0);
//	                         0 in responses
//	8      8     request id  chosen by the client, echoed in the response
//	16     ...   body        per op, below
//
// Requests (after the header; every body starts with the ledger id):
//
//	ADD_ENTRY   (1)  ledgerId i64, entryId i64, lac i64, keyLen u16, masterKey, payload (rest)
//	                 flag RECOVERY: allowed on a fenced ledger
//	READ_ENTRY  (2)  ledgerId i64, entryId i64, keyLen u16, masterKey
//	                 flag FENCE: fence the ledger first (recovery read); needs the master key
//	READ_RANGE  (3)  ledgerId i64, firstEntryId i64, lastEntryId i64, maxBytes u32
//	READ_LAC    (4)  ledgerId i64, keyLen u16, masterKey
//	                 flag FENCE: fence the ledger first; needs the master key
//	WAIT_LAC    (5)  ledgerId i64, previousLac i64, timeoutMs u32 (long poll)
//	DELETE      (6)  ledgerId i64
//
// Responses (after the header; every body starts with status u16, ledgerId i64):
//
//	ADD_ENTRY   status, ledgerId, entryId i64
//	READ_ENTRY  status, ledgerId, entryId i64, lac i64, payload (rest)
//	READ_RANGE  status, ledgerId, lac i64, count u32, count × (entryId i64, len u32, payload)
//	READ_LAC    status, ledgerId, lac i64
//	WAIT_LAC    status, ledgerId, lac i64
//	DELETE      status, ledgerId
//
// Master keys are at most MaxMasterKeySize (1 KiB). Trailing bytes after a body are
// malformed, so each message has exactly one encoding. A response with a non-OK status has
// an empty payload / zero entries but keeps the fixed fields.
//
// # Status codes
//
// One table (status.go) maps codes to the package's error sentinels in both directions:
// 0 OK, 1 no such entry, 2 no such ledger, 3 fenced, 4 wrong master key, 5 read-only,
// 6 corrupt, 7 too busy, 8 bad request, 9 internal error. A code unknown to the receiver
// reads as ErrServer. A corrupt or unreadable entry is always status 6, never 1.
//
// # Pipelining and errors
//
// A client may send any number of requests without waiting; the server answers each exactly
// once, in any order (adds complete in journal order in practice), and the client matches
// responses by request id. A frame the receiver cannot parse (bad length, version, flags,
// truncated or trailing body) closes that connection with a logged reason; an unknown op in
// a well-formed frame is answered with status 8 instead, so a newer client learns the server
// does not support it. READ_RANGE answers entries first..last in order, stopping before
// maxBytes of payload would be exceeded (always at least one entry when the first exists) or
// at the first entry that is missing or unreadable; an error on the first entry is the
// response's status.
//
// # Version history
//
// Version 1: this layout.
package bookieproto
