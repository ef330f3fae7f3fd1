package redis

import (
	"bufio"
	"bytes"
	"testing"
)

func TestReadReply(t *testing.T) {
	in := "+OK\r\n-ERR bad\r\n:42\r\n$3\r\nabc\r\n$-1\r\n*2\r\n+QUEUED\r\n$0\r\n\r\n*-1\r\n"
	r := bufio.NewReader(bytes.NewBufferString(in))
	want := []func(reply) bool{
		func(x reply) bool { return x.Str == "OK" },
		func(x reply) bool { return x.Err == "ERR bad" },
		func(x reply) bool { return x.Int == 42 },
		func(x reply) bool { return x.Str == "abc" },
		func(x reply) bool { return x.Nil },
		func(x reply) bool {
			return len(x.Array) == 2 && x.Array[0].Str == "QUEUED" && x.Array[1].Str == "" && !x.Array[1].Nil
		},
		func(x reply) bool { return x.Nil && x.Array == nil },
	}
	for i, ok := range want {
		x, err := readReply(r)
		if err != nil || !ok(x) {
			t.Fatalf("reply %d: %+v %v", i, x, err)
		}
	}
	for _, bad := range []string{"", "?x\r\n", "$5\r\nab\r\n", "$99999999999\r\n", ":x\r\n", "+OK\n", "*1\r\n"} {
		if _, err := readReply(bufio.NewReader(bytes.NewBufferString(bad))); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if got := string(appendCommand(nil, []byte("SET"), []byte("k"), []byte(""))); got != "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n" {
		t.Errorf("command %q", got)
	}
}

func FuzzReadReply(f *testing.F) {
	f.Add([]byte("*2\r\n+QUEUED\r\n$3\r\nabc\r\n"))
	f.Add([]byte("-ERR x\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		for i := 0; i < 4; i++ {
			if _, err := readReply(r); err != nil {
				return
			}
		}
	})
}
