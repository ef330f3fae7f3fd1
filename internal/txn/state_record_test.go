package txn

import (
	"reflect"
	"testing"
)

func sampleStates() []*stateRecord {
	return []*stateRecord{
		{kind: stSnapshot, snap: &snapshot{maxRead: Position{LedgerID: 5, EntryID: -1}, lowWater: map[uint64]uint64{}}},
		{kind: stSnapshot, snap: &snapshot{
			maxRead:  Position{LedgerID: 9, EntryID: 120},
			aborted:  []abortedTxn{{ID{1, 2}, Position{LedgerID: 7, EntryID: 3}}, {ID{0, 1 << 50}, Position{LedgerID: 9, EntryID: 100}}},
			lowWater: map[uint64]uint64{0: 17, 3: 1 << 40},
		}},
		{kind: stAck, sub: "my-sub", id: ID{2, 5}, acks: []AckPos{{Pos: Position{LedgerID: 3, EntryID: 4}}, {Pos: Position{LedgerID: 3, EntryID: 9}, Bits: []uint64{0b1011, 1 << 63}}}},
		{kind: stAck, sub: "s", id: ID{2, 6}, cumulative: true, acks: []AckPos{{Pos: Position{LedgerID: 8, EntryID: 0}}}},
		{kind: stAckEnd, sub: "s", id: ID{2, 6}, action: Abort},
		{kind: stAckEnd, sub: "s", id: ID{2, 7}, action: Commit},
	}
}

func TestStateRecordRoundTrip(t *testing.T) {
	for _, r := range sampleStates() {
		got, err := decodeState(encodeState(r))
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("got %+v, want %+v", got, r)
		}
	}
}

func TestStateRecordRejectsDamage(t *testing.T) {
	good := encodeState(sampleStates()[2])
	cum := encodeState(&stateRecord{kind: stAck, sub: "s", id: ID{1, 1}, cumulative: true, acks: []AckPos{{}, {}}})
	for name, b := range map[string][]byte{
		"empty":         {},
		"version":       append([]byte{7}, good[1:]...),
		"kind":          {stateVersion, 99},
		"truncated":     good[:len(good)-4],
		"trailing":      append(append([]byte(nil), good...), 1),
		"action":        {stateVersion, byte(stAckEnd), 1, 's', 1, 1, 5},
		"cumulative x2": cum,
		"huge aborted":  {stateVersion, byte(stSnapshot), 0, 0, 0xff, 0xff, 0xff, 0x0f},
		"huge bitset":   {stateVersion, byte(stAck), 1, 's', 1, 1, 0, 1, 0, 0, 0xff, 0x0f},
	} {
		if _, err := decodeState(b); !isErr(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

func FuzzDecodeState(f *testing.F) {
	for _, r := range sampleStates() {
		f.Add(encodeState(r))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeState(b)
		if err != nil {
			return
		}
		again, err := decodeState(encodeState(r))
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip changed the record: %+v -> %+v", r, again)
		}
	})
}
