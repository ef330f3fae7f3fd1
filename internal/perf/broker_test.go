package perf

import (
	"strings"
	"testing"
	"time"
)

func TestRecorderLineAndResult(t *testing.T) {
	r := newRecorder()
	for i := 1; i <= 100; i++ {
		r.record(100, time.Duration(i)*time.Millisecond)
	}
	l := r.line("produced", time.Second)
	for _, want := range []string{"Throughput produced:", "100.0 msg/s", "Mbit/s", "med:", "95pct:", "99pct:", "99.9pct:", "Max:"} {
		if !strings.Contains(l, want) {
			t.Errorf("line lacks %q: %s", want, l)
		}
	}
	res := r.result(2 * time.Second)
	if res.Messages != 100 || res.Bytes != 10000 || res.MsgPerSec != 50 || res.P50 < 49 || res.P50 > 51 || res.Max < 99 {
		t.Fatalf("result %+v", res)
	}
	if b := progressBar(5, 10); !strings.Contains(b, "[##########..........]  50%") {
		t.Fatalf("progress bar %q", b)
	}
	if got := TopicNames("t", 3); len(got) != 3 || got[2] != "t-2" {
		t.Fatalf("topic names %v", got)
	}
}
