package harness

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestDefaultConfigValid(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestFlags(t *testing.T) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := c.BindFlags(fs)
	err := fs.Parse([]string{"-workloads", "w1, W3", "-durability", "d2", "-rates", "500,HALF", "-backlog", "4GiB",
		"-magnetar-arg", "--a", "-magnetar-arg", "--b=1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Finish(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Workloads, ",") != "W1,W3" || strings.Join(c.Durabilities, ",") != "D2" ||
		strings.Join(c.Rates, ",") != "500,half" || c.BacklogBytes != 4<<30 || len(c.MagnetarArgs) != 2 {
		t.Fatalf("parsed %+v", c)
	}
	specs := Expand(c)
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	// One half-rate variant per peer, at half of that peer's max.
	want := "W1-100B-D2-max,W3-1KiB-D2-500/s,W3-1KiB-D2-halfmax-nats,W3-1KiB-D2-halfmax-kafka,W3-1KiB-D2-halfmax-pulsar"
	if got := strings.Join(names, ","); got != want {
		t.Fatalf("specs %s, want %s", got, want)
	}
	if !specs[2].RateHalf || specs[2].RateOf != "W2-1KiB-D2-max" || specs[2].Versus != "nats" || specs[4].Versus != "pulsar" || specs[1].Rate != 500 {
		t.Fatalf("rate specs %+v", specs[1:])
	}
}

func TestValidateNamesFlag(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*Config)
		flag   string
	}{
		{func(c *Config) { c.Workloads = []string{"W42"} }, "workloads"},
		{func(c *Config) { c.Durabilities = []string{"D3"} }, "durability"},
		{func(c *Config) { c.Rates = []string{"-1"} }, "rates"},
		{func(c *Config) { c.AtomicBatch = 5000 }, "atomic-batch"},
		{func(c *Config) { c.Pairs = 0 }, "pairs"},
	} {
		c := DefaultConfig()
		tc.mutate(&c)
		err := c.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%s: got %v", tc.flag, err)
		}
	}
}

func TestBytes(t *testing.T) {
	for in, want := range map[string]int64{"100": 100, "100B": 100, "1KiB": 1024, "1KB": 1024, "128MiB": 128 << 20, "4GiB": 4 << 30} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("%s: %d %v", in, got, err)
		}
		if back, _ := ParseBytes(FormatBytes(want)); back != want {
			t.Errorf("round trip %s", in)
		}
	}
	if _, err := ParseBytes("lots"); !errors.Is(err, ErrConfig) {
		t.Error("want ErrConfig")
	}
}

func TestPayloadTimestamp(t *testing.T) {
	b := makePayload(100, 123456789, 7)
	if len(b) != 100 {
		t.Fatal(len(b))
	}
	if ts, ok := payloadTs(b); !ok || ts != 123456789 {
		t.Fatal(ts, ok)
	}
	if _, ok := payloadTs([]byte{1}); ok {
		t.Fatal("short payload accepted")
	}
}

func TestNATSConfig(t *testing.T) {
	if !strings.Contains(NATSConfig(1, "/x", D1), "sync_interval: always") || strings.Contains(NATSConfig(1, "/x", D2), "sync_interval") {
		t.Fatal("durability not reflected in config")
	}
}

func TestRatios(t *testing.T) {
	bs := []Block{
		{Spec: "s", System: "magnetar", Pair: 0, MsgPerS: 200}, {Spec: "s", System: "nats", Pair: 0, MsgPerS: 100},
		{Spec: "s", System: "nats", Pair: 1, MsgPerS: 100}, {Spec: "s", System: "magnetar", Pair: 1, MsgPerS: 400},
		{Spec: "s", System: "magnetar", Pair: 2, Failed: "x"}, {Spec: "s", System: "nats", Pair: 2, MsgPerS: 1},
	}
	got := ratioText(pairRatios(bs, "s", "nats", func(b Block) float64 { return b.MsgPerS }))
	if got != "3.00 [2.00,4.00]" {
		t.Fatal(got)
	}
}

func TestExpandPorts(t *testing.T) {
	ports, err := freePorts()
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	m := &magnetarSystem{baseArgs: c.MagnetarBaseArgs, noSync: c.MagnetarNoSyncFlag}
	args := strings.Join(m.Args(D2, "/d", ports), " ")
	if strings.Contains(args, "{") || !strings.Contains(args, "--port "+ports["port"]) || !strings.HasSuffix(args, "--journal-sync-data=false") {
		t.Fatal(args)
	}
	if u := expandPorts(c.MagnetarURL, ports); u != "pulsar://127.0.0.1:"+ports["port"] {
		t.Fatal(u)
	}
}

func TestProfileCPUPerM(t *testing.T) {
	top := "File: magnetar\nType: cpu\nDuration: 10.01s, Total samples = 4500ms (44.96%)\nShowing nodes"
	got := profileCPUPerM(top, 100000, 5.1)
	if !strings.Contains(got, "= 4.50 CPU-s per million messages (whole window from /proc: 5.10)") {
		t.Fatalf("summary: %s", got)
	}
	if profileCPUPerM("profile: timed out", 100000, 1) != "profile: timed out" {
		t.Fatal("a summary without a profile header changed")
	}
	if got := withPprofFlag(withPprofFlag([]string{"--log-level", "warn"})); len(got) != 3 || got[2] != "--enable-pprof" {
		t.Fatalf("args %v", got)
	}
}

// An A/B run names the other build, and only an A/B run does.
func TestPeerMagnetar(t *testing.T) {
	c := DefaultConfig()
	c.Peer = "magnetar"
	if err := c.Validate(); err == nil {
		t.Fatal("-peer magnetar without -peer-bin accepted")
	}
	c.PeerBin = "bin/magnetar-before"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := peerSystem(c); got != magnetarBefore {
		t.Fatalf("peer system %q", got)
	}
	c.Peer = "nats"
	if err := c.Validate(); err == nil {
		t.Fatal("-peer-bin without -peer magnetar accepted")
	}
}
