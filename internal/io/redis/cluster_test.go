package redis

import (
	"bufio"
	"bytes"
	"testing"
)

func TestSlotOf(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3 (CRC-16/XMODEM check value)", got)
	}
	for key, want := range map[string]uint16{
		"foo": 12182, "bar": 5061, "hello": 866,
		// Hash tags: only the part between the first { and the next } counts, when not empty.
		"{user1000}.following": slotOf([]byte("user1000")), "{user1000}.followers": slotOf([]byte("user1000")),
		"foo{}{bar}": slotOf([]byte("foo{}{bar}")), "{}x": crc16([]byte("{}x")) % numSlots,
	} {
		if got := slotOf([]byte(key)); got != want {
			t.Errorf("slotOf(%q) = %d, want %d", key, got, want)
		}
	}
	if slotOf([]byte("foo{}{bar}")) != crc16([]byte("foo{}{bar}"))%numSlots {
		t.Error("an empty first tag must hash the whole key")
	}
}

func TestParseSlots(t *testing.T) {
	in := "*2\r\n" +
		"*3\r\n:0\r\n:8191\r\n*3\r\n$9\r\n127.0.0.1\r\n:7001\r\n$3\r\nid1\r\n" +
		"*4\r\n:8192\r\n:16383\r\n*2\r\n$0\r\n\r\n:7002\r\n*2\r\n$9\r\n127.0.0.1\r\n:7003\r\n"
	r, err := readReply(bufio.NewReader(bytes.NewBufferString(in)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseSlots(r, "10.0.0.9:7002")
	if err != nil {
		t.Fatal(err)
	}
	if a := m.addrs[m.owner[0]]; a != "127.0.0.1:7001" {
		t.Errorf("slot 0 on %s", a)
	}
	if a := m.addrs[m.owner[16383]]; a != "10.0.0.9:7002" {
		t.Errorf("slot 16383 on %s, want the asked node's host for an empty host", a)
	}
	for _, bad := range []string{
		"-ERR This instance has cluster support disabled\r\n",
		"*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n", // slot out of range
		"*1\r\n*3\r\n:9\r\n:3\r\n*2\r\n$1\r\nh\r\n:1\r\n",     // lo > hi
		"*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\nh\r\n:0\r\n",     // port 0
		"*1\r\n*2\r\n:0\r\n:1\r\n",                            // no node
	} {
		r, err := readReply(bufio.NewReader(bytes.NewBufferString(bad)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parseSlots(r, "h:1"); err == nil {
			t.Errorf("parseSlots(%q) accepted", bad)
		}
	}
}

func FuzzParseSlots(f *testing.F) {
	f.Add("*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:7001\r\n")
	f.Add("*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$0\r\n\r\n:7\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		r, err := readReply(bufio.NewReader(bytes.NewBufferString(in)))
		if err != nil {
			return
		}
		m, err := parseSlots(r, "127.0.0.1:1")
		if err != nil {
			return
		}
		for _, o := range m.owner {
			if o >= int16(len(m.addrs)) {
				t.Fatalf("owner %d of %d nodes", o, len(m.addrs))
			}
		}
	})
}
