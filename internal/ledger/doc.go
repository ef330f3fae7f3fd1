// Package ledger is the BookKeeper client: it creates ledgers replicated over an ensemble of
// bookies (write quorum, ack quorum, striping), keeps their metadata in the metadata store by
// CAS, replaces failed bookies (ensemble change), reads with speculative retries, recovers
// and fences ledgers of a dead writer, and deletes them. The Auditor re-replicates the
// fragments of lost bookies. Brokers import this package, never internal/bookie.
//
// Entry points: NewClient (Create, Open, Delete), NewAuditor, UnderReplicated, ListBookies,
// Decommission and Recommission. The add
// pipeline is described on the writer type (writer.go), recovery at the top of
// recovery.go, auto-recovery at the top of autorecovery.go.
//
// # Metadata-store layout
//
//	/ledgers/<id, 20 decimal digits, zero-padded>   ledger metadata (JSON, below)
//	/ledger-id-counter                               ids are its versions: one unconditional write per new ledger
//	/ledger-auditor                                  auditor election
//	/ledger-decommissioned/<host:port>               decommission marks ("{}"; Decommission)
//	/bookies/available/<host:port>                   bookie registrations (bookieproto)
//
// # Ledger metadata (JSON, formatVersion 1)
//
//	{
//	  "formatVersion": 1,
//	  "ensembleSize": 3, "writeQuorumSize": 3, "ackQuorumSize": 2,   // E >= Qw >= Qa >= 1, E <= 64
//	  "digestType": "CRC32C" | "DUMMY",
//	  "masterKey": "<base64 of SHA-256("magnetar-ledger-master-key\x00" || password)>",
//	  "state": "OPEN" | "IN_RECOVERY" | "CLOSED",
//	  "lastEntryId": -1,       // set when CLOSED; -1 while open or for an empty ledger
//	  "length": 0,             // data bytes through lastEntryId, set when CLOSED
//	  "fragments": [ {"firstEntryId": 0, "ensemble": ["h1:3181", "h2:3181", "h3:3181"]}, ... ],
//	  "customMetadata": {"k": "v"},
//	  "ctime": 1700000000000   // creation, Unix milliseconds
//	}
//
// Fragment i holds entries firstEntryId(i) .. firstEntryId(i+1)-1 (the last fragment: up to
// lastEntryId when closed, unbounded while open); fragments start at 0 and strictly
// increase; every ensemble has E distinct addresses. Entry e of a fragment is stored on the
// ensemble positions (e mod E), (e mod E)+1, ... Qw positions in all, modulo E. The master
// key is kept in metadata (as BookKeeper does) so the auditor can write recovery adds:
// access to the metadata store implies write access to ledgers. Decoding rejects anything
// that violates these rules (fuzzed by FuzzDecodeMetadata). Every change is a CAS on the
// key's version; a lost CAS re-reads and re-applies the change (updateMetadata).
//
// # Entry payload (what a bookie stores for each entry; fuzzed by FuzzDecodeEntry)
//
//	offset size
//	0      8    ledger id            big-endian int64
//	8      8    entry id             big-endian int64
//	16     8    LAC when written     big-endian int64, -1 if none; always < entry id
//	24     8    ledger length        big-endian int64: data bytes of entries 0..entry id
//	32     4    CRC32C (Castagnoli)  over bytes 0..31 followed by the data; 0 for DUMMY
//	36     n    data
//
// A reader checks the checksum and that ledger and entry id are the ones it asked for; any
// mismatch is ErrCorrupt and the reader tries another replica. A corrupt copy is never
// taken for a missing one (docs/ARCHITECTURE.md §4, invariant 4). The cumulative length lets
// recovery compute the closed ledger's length from the last recovered entry.
package ledger
