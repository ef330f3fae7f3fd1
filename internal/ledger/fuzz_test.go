package ledger

import (
	"bytes"
	"encoding/json"
	"testing"
)

func validMetadata() *ledgerMetadata {
	return &ledgerMetadata{FormatVersion: 1, EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2, Digest: digestNameCRC32C,
		MasterKey: masterKey([]byte("pw")), State: stateClosed, LastEntryID: 9, Length: 90,
		Fragments:      []fragment{{0, []string{"a:1", "b:1", "c:1"}}, {5, []string{"a:1", "d:1", "c:1"}}},
		CustomMetadata: map[string]string{"k": "v"}, CTimeMillis: 1}
}

func FuzzDecodeMetadata(f *testing.F) {
	good, _ := encodeMetadata(validMetadata())
	f.Add(good)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"formatVersion":1,"ensembleSize":64,"writeQuorumSize":1,"ackQuorumSize":1,"digestType":"DUMMY","state":"OPEN","lastEntryId":-1,"fragments":[{"firstEntryId":0,"ensemble":[]}]}`))
	f.Add([]byte(`{"formatVersion":1,"ensembleSize":1,"writeQuorumSize":1,"ackQuorumSize":1,"digestType":"CRC32C","state":"OPEN","lastEntryId":-1,"fragments":[{"firstEntryId":0,"ensemble":["x"]},{"firstEntryId":0,"ensemble":["y"]}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMetadata(b)
		if err != nil {
			return
		}
		// Whatever decodes must be safe to use everywhere the client indexes with it.
		for _, e := range []int64{0, 1, m.LastEntryID, 1 << 40} {
			if e < 0 {
				continue
			}
			fi := m.fragmentIndex(e)
			_ = m.fragmentLast(fi)
			ens := m.ensembleFor(e)
			for _, pos := range writeSet(e, m.EnsembleSize, m.WriteQuorum) {
				_ = ens[pos]
			}
		}
		again, err := encodeMetadata(m)
		if err != nil {
			t.Fatalf("decoded metadata does not re-encode: %v", err)
		}
		m2, err := decodeMetadata(again)
		if err != nil {
			t.Fatal(err)
		}
		j1, _ := json.Marshal(m)
		j2, _ := json.Marshal(m2)
		if !bytes.Equal(j1, j2) {
			t.Fatalf("round trip changed metadata:\n%s\n%s", j1, j2)
		}
	})
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntry(DigestCRC32C, entryHeader{LedgerID: 7, EntryID: 3, LAC: 2, Length: 100}, []byte("hello")), int64(7), int64(3), false)
	f.Add(encodeEntry(DigestDummy, entryHeader{LedgerID: 7, EntryID: 0, LAC: -1, Length: 0}, nil), int64(7), int64(0), true)
	f.Add([]byte("short"), int64(1), int64(1), false)
	f.Fuzz(func(t *testing.T, p []byte, ledgerID, entryID int64, dummy bool) {
		d := DigestCRC32C
		if dummy {
			d = DigestDummy
		}
		h, data, err := decodeEntry(d, p, ledgerID, entryID)
		if err != nil {
			return
		}
		if h.LedgerID != ledgerID || h.EntryID != entryID || len(data) != len(p)-entryHeaderSize {
			t.Fatalf("accepted the wrong entry: %+v", h)
		}
		if d == DigestCRC32C && !bytes.Equal(encodeEntry(d, h, data), p) {
			t.Fatal("accepted payload does not re-encode to itself")
		}
	})
}

func TestEntryDigestDetectsEveryBitFlip(t *testing.T) {
	p := encodeEntry(DigestCRC32C, entryHeader{LedgerID: 1, EntryID: 2, LAC: 1, Length: 3}, []byte("abc"))
	for i := range len(p) * 8 {
		q := bytes.Clone(p)
		q[i/8] ^= 1 << (i % 8)
		if _, _, err := decodeEntry(DigestCRC32C, q, 1, 2); err == nil {
			t.Fatalf("bit %d flipped and accepted", i)
		}
	}
}
