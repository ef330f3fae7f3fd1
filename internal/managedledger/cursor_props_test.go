package managedledger

import (
	"errors"
	"reflect"
	"testing"
)

// TestCursorPropertiesSurviveCrashAndCleanClose: properties set with the mark-delete
// position come back after a crash (from the cursor ledger) and after a clean close (from
// the metadata snapshot).
func TestCursorPropertiesSurviveCrashAndCleanClose(t *testing.T) {
	e := newEnv(t)
	f1 := e.factory()
	ml := open(t, f1, "t/props", func(c *Config) { c.MaxEntriesPerLedger = 3 })
	ps := addN(t, ml, 7, "x")
	c, err := ml.OpenCursor(ctxT(t), "pulsar.dedup", InitialPositionEarliest)
	must(t, err)
	want := map[string]int64{"producer-a": 41, "producer-b": -1, "": 7}
	must(t, c.MarkDeleteWithProperties(ps[4], want))
	// Properties change even when the position does not move.
	want["producer-a"] = 42
	must(t, c.MarkDeleteWithProperties(ps[2], want))
	wantPos(t, "mark-delete", c.MarkDeletePosition(), ps[4])
	must(t, c.Flush(ctxT(t)))
	crash(f1)

	f2 := e.factory()
	ml2 := open(t, f2, "t/props", nil)
	rc, ok := ml2.Cursor("pulsar.dedup")
	if !ok {
		t.Fatal("cursor lost")
	}
	if got := rc.Properties(); !reflect.DeepEqual(got, want) {
		t.Fatalf("properties after crash %v, want %v", got, want)
	}
	wantPos(t, "recovered mark-delete", rc.MarkDeletePosition(), ps[4])
	want2 := map[string]int64{"producer-c": 9}
	must(t, rc.MarkDeleteWithProperties(ps[5], want2))
	must(t, f2.Close(ctxT(t)))

	ml3 := open(t, e.factory(), "t/props", nil)
	rc3, _ := ml3.Cursor("pulsar.dedup")
	if got := rc3.Properties(); !reflect.DeepEqual(got, want2) {
		t.Fatalf("properties after clean close %v, want %v", got, want2)
	}
	// A cursor without properties reports none.
	plain, err := ml3.OpenCursor(ctxT(t), "plain", InitialPositionEarliest)
	must(t, err)
	if plain.Properties() != nil {
		t.Fatalf("plain cursor has properties %v", plain.Properties())
	}
	if err := rc3.MarkDeleteWithProperties(ps[5], map[string]int64{string(make([]byte, maxCursorPropKey+1)): 1}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("oversized property name: %v", err)
	}
}

func TestCursorStatePropsCodec(t *testing.T) {
	var rs RangeSet
	rs.Add(Position{5, 7})
	props := map[string]int64{"b": -3, "a": 1 << 40}
	b := encodeCursorStateProps(Position{5, 1}, &rs, 10, props)
	if b[0] != cursorStateVersionExt {
		t.Fatalf("version %d", b[0])
	}
	st, err := decodeCursorState(b)
	must(t, err)
	if !reflect.DeepEqual(st.Props, props) || st.Acked.String() != rs.String() || st.MarkDelete != (Position{5, 1}) {
		t.Fatalf("decoded %+v", st)
	}
	// No properties: still version 1, byte for byte.
	if b1 := encodeCursorStateProps(Position{5, 1}, &rs, 10, nil); b1[0] != cursorStateVersion {
		t.Fatalf("version without properties %d", b1[0])
	}
	for _, bad := range [][]byte{
		b[:len(b)-1],
		append(append([]byte{}, b...), 0),
		{2, 0, 0, 0, 0},                       // zero properties
		{2, 0, 0, 0, 1, 5, 'a'},               // truncated name
		{2, 0, 0, 0, 2, 1, 'a', 2, 1, 'a', 2}, // duplicate
	} {
		if _, err := decodeCursorState(bad); !errors.Is(err, ErrCorruptMetadata) {
			t.Fatalf("decode(%v) = %v", bad, err)
		}
	}
}

// Properties and partly acknowledged batches share version 2 of the cursor state.
func TestCursorStateWithPropsAndBatches(t *testing.T) {
	var acked RangeSet
	acked.Add(Position{3, 5})
	props := map[string]int64{"producer-a": 41, "producer-b": 7}
	batches := map[Position][]uint64{{3, 7}: {0b1010}, {4, 0}: {1, 1 << 63}}
	b := encodeCursorStateFull(Position{3, 1}, &acked, 100, props, batches)
	st, err := decodeCursorState(b)
	if err != nil {
		t.Fatal(err)
	}
	if st.MarkDelete != (Position{3, 1}) || st.Acked.String() != acked.String() ||
		len(st.Props) != 2 || st.Props["producer-a"] != 41 || len(st.BatchAcks) != 2 ||
		st.BatchAcks[Position{4, 0}][1] != 1<<63 {
		t.Fatalf("round trip: %+v", st)
	}
	// Only batches: properties count 0; only properties: batch count 0.
	for _, c := range []struct {
		p map[string]int64
		b map[Position][]uint64
	}{{nil, batches}, {props, nil}} {
		st, err := decodeCursorState(encodeCursorStateFull(Position{3, 1}, &acked, 100, c.p, c.b))
		if err != nil || len(st.Props) != len(c.p) || len(st.BatchAcks) != len(c.b) {
			t.Fatalf("one section: %+v %v", st, err)
		}
	}
}
