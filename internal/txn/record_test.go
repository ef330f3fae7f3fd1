package txn

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

func sampleRecords() []*record {
	return []*record{
		{kind: recNew, least: 1, timeout: 10 * time.Minute, opened: time.UnixMilli(1_764_400_000_123), owner: "alice"},
		{kind: recNew, least: 1 << 40, timeout: time.Millisecond, opened: time.UnixMilli(0)},
		{kind: recPartitions, least: 7, partitions: []string{"persistent://public/default/a", "persistent://public/default/b-partition-3"}},
		{kind: recSubscriptions, least: 7, subs: []Subscription{{"persistent://public/default/in", "my-sub"}}},
		{kind: recStatus, least: 7, status: Committing},
		{kind: recStatus, least: 8, status: Aborted, timedOut: true},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range sampleRecords() {
		got, err := decodeRecord(encodeRecord(r))
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if !got.opened.Equal(r.opened) {
			t.Fatalf("opened %v, want %v", got.opened, r.opened)
		}
		got.opened = r.opened
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("got %+v, want %+v", got, r)
		}
	}
}

func TestRecordRejectsDamage(t *testing.T) {
	good := encodeRecord(sampleRecords()[2])
	for name, b := range map[string][]byte{
		"empty":        {},
		"version":      append([]byte{9}, good[1:]...),
		"kind":         {recordVersion, 77, 1},
		"truncated":    good[:len(good)-3],
		"trailing":     append(append([]byte(nil), good...), 0),
		"status":       {recordVersion, byte(recStatus), 1, byte(Open), 0},
		"huge count":   {recordVersion, byte(recPartitions), 1, 0xff, 0xff, 0x03},
		"huge string":  {recordVersion, byte(recNew), 1, 1, 2, 0xff, 0xff, 0xff, 0x7f},
		"huge timeout": append([]byte{recordVersion, byte(recNew), 1}, bytes.Repeat([]byte{0xff}, 9)...),
	} {
		if _, err := decodeRecord(b); !isErr(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(encodeRecord(r))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			return
		}
		// What decodes re-encodes to a record that decodes the same.
		again, err := decodeRecord(encodeRecord(r))
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if again.kind != r.kind || again.least != r.least || len(again.partitions) != len(r.partitions) || len(again.subs) != len(r.subs) {
			t.Fatalf("round trip changed the record: %+v -> %+v", r, again)
		}
	})
}
