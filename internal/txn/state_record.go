package txn

import (
	"encoding/binary"
	"fmt"
)

// Records of a topic's transaction-state log (format in doc.go, "Topic state log"): the
// transaction buffer's snapshots and the pending acknowledgements of its subscriptions.

type stateKind byte

const (
	stSnapshot stateKind = 1
	stAck      stateKind = 2
	stAckEnd   stateKind = 3
)

const (
	stateVersion = 1
	// maxBitsetWords bounds one batch bitset (the managed ledger's own bound).
	maxBitsetWords = 1024
	// maxStateList bounds the lists of one state record (aborted transactions of a
	// snapshot, positions of an acknowledgement); a corrupt count cannot allocate more.
	maxStateList   = 1 << 24
	flagCumulative = 1
)

// AckPos is one acknowledged entry of a transactional acknowledgement: the whole entry
// (Bits nil) or some messages of a batch. Bits has Pulsar's ack_set meaning: bit i set
// means message i is NOT acknowledged by this request.
type AckPos struct {
	Pos  Position
	Bits []uint64
}

// abortedTxn is an aborted transaction and the position of its abort marker.
type abortedTxn struct {
	id     ID
	marker Position
}

// snapshot is a transaction buffer snapshot.
type snapshot struct {
	// maxRead: every transactional entry at or before it belongs to a transaction that
	// had ended when the snapshot was taken; a recovery replays the topic after it.
	maxRead Position
	aborted []abortedTxn
	// lowWater: per coordinator, its low water mark as last heard.
	lowWater map[uint64]uint64
}

// stateRecord is one decoded record of a topic's transaction-state log.
type stateRecord struct {
	kind stateKind
	snap *snapshot
	// stAck, stAckEnd
	sub        string
	id         ID
	cumulative bool
	acks       []AckPos
	action     Action
}

func appendPos(b []byte, p Position) []byte {
	return binary.AppendVarint(binary.AppendVarint(b, p.LedgerID), p.EntryID)
}

func (r *reader) pos(what string) Position {
	return Position{LedgerID: r.varint(what), EntryID: r.varint(what)}
}

func encodeState(r *stateRecord) []byte {
	b := make([]byte, 0, 64)
	b = append(b, stateVersion, byte(r.kind))
	switch r.kind {
	case stSnapshot:
		s := r.snap
		b = appendPos(b, s.maxRead)
		b = binary.AppendUvarint(b, uint64(len(s.aborted)))
		for _, a := range s.aborted {
			b = binary.AppendUvarint(b, a.id.Most)
			b = binary.AppendUvarint(b, a.id.Least)
			b = appendPos(b, a.marker)
		}
		b = binary.AppendUvarint(b, uint64(len(s.lowWater)))
		for _, tc := range sortedKeys(s.lowWater) {
			b = binary.AppendUvarint(b, tc)
			b = binary.AppendUvarint(b, s.lowWater[tc])
		}
	case stAck:
		b = appendStr(b, r.sub)
		b = binary.AppendUvarint(b, r.id.Most)
		b = binary.AppendUvarint(b, r.id.Least)
		var f byte
		if r.cumulative {
			f |= flagCumulative
		}
		b = append(b, f)
		b = binary.AppendUvarint(b, uint64(len(r.acks)))
		for _, a := range r.acks {
			b = appendPos(b, a.Pos)
			b = binary.AppendUvarint(b, uint64(len(a.Bits)))
			for _, w := range a.Bits {
				b = binary.LittleEndian.AppendUint64(b, w)
			}
		}
	case stAckEnd:
		b = appendStr(b, r.sub)
		b = binary.AppendUvarint(b, r.id.Most)
		b = binary.AppendUvarint(b, r.id.Least)
		b = append(b, byte(r.action))
	}
	return b
}

func decodeState(b []byte) (*stateRecord, error) {
	r := &reader{b: b}
	if v := r.byte1("version"); r.err == nil && v != stateVersion {
		return nil, fmt.Errorf("%w: state record version %d", ErrCorrupt, v)
	}
	rec := &stateRecord{kind: stateKind(r.byte1("kind"))}
	switch rec.kind {
	case stSnapshot:
		s := &snapshot{maxRead: r.pos("max read position"), lowWater: map[uint64]uint64{}}
		n := r.count("aborted transactions", maxStateList, 4)
		for i := 0; i < n && r.err == nil; i++ {
			id := ID{r.uvarint("aborted txn"), r.uvarint("aborted txn")}
			s.aborted = append(s.aborted, abortedTxn{id: id, marker: r.pos("abort marker")})
		}
		w := r.count("low water marks", maxStateList, 2)
		for i := 0; i < w && r.err == nil; i++ {
			tc := r.uvarint("coordinator")
			s.lowWater[tc] = r.uvarint("low water mark")
		}
		rec.snap = s
	case stAck:
		rec.sub = r.str("subscription")
		rec.id = ID{r.uvarint("txn"), r.uvarint("txn")}
		rec.cumulative = r.byte1("flags")&flagCumulative != 0
		n := r.count("acknowledged positions", maxStateList, 3)
		for i := 0; i < n && r.err == nil; i++ {
			a := AckPos{Pos: r.pos("position")}
			if w := r.count("bitset words", maxBitsetWords, 8); w > 0 {
				a.Bits = make([]uint64, w)
				for j := range a.Bits {
					if len(r.b) < 8 {
						r.fail("bitset")
						break
					}
					a.Bits[j] = binary.LittleEndian.Uint64(r.b)
					r.b = r.b[8:]
				}
			}
			rec.acks = append(rec.acks, a)
		}
		if rec.cumulative && n != 1 {
			r.fail("cumulative acknowledgement of several positions")
		}
	case stAckEnd:
		rec.sub = r.str("subscription")
		rec.id = ID{r.uvarint("txn"), r.uvarint("txn")}
		rec.action = Action(r.byte1("action"))
		if rec.action != Commit && rec.action != Abort {
			r.fail("action")
		}
	default:
		if r.err == nil {
			return nil, fmt.Errorf("%w: state record kind %d", ErrCorrupt, rec.kind)
		}
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return rec, nil
}
