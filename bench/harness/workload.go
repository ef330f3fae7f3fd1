package harness

import (
	"fmt"
	"strconv"
	"time"
)

// Durability is the fsync policy held equal on both sides (performance.md §5.4).
type Durability string

// The durability modes: D1 fsync before the acknowledgement, D2 write without fsync.
const (
	D1 Durability = "D1"
	D2 Durability = "D2"
)

// Describe says what the mode means on each side, for every result line.
func (d Durability) Describe() string {
	if d == D1 {
		return "D1 fsync before ack (Magnetar journal fsync on; NATS sync_interval: always), replication 1"
	}
	return "D2 write without fsync (Magnetar journalSyncData=false; NATS default sync_interval 2m), replication 1"
}

// Spec is one workload variant: one shape, size, rate and durability.
type Spec struct {
	Name       string // e.g. "W2-1KiB-D1-max"
	Workload   string // catalogue ID
	Durability Durability
	Partitions int
	Producers  int
	Consumers  int // consumers per subscription
	Subs       int // subscriptions (W5 fan-out); each has Consumers consumers
	MsgSize    int
	// Rate is the aggregate open-loop rate in msg/s; 0 is closed-loop max rate.
	Rate float64
	// RateHalf resolves Rate at run time to half the peer's max of the matching max-rate
	// variant (RateOf) measured earlier in the run.
	RateHalf   bool
	RateOf     string
	NoBatching bool // Pulsar producers without client batching
	// BacklogBytes > 0 makes this a catch-up variant (W7/W8).
	BacklogBytes int64
	CatchupRate  float64
	Warmup       time.Duration
	Measure      time.Duration
}

// MaxRate reports a closed-loop (throughput) variant.
func (s Spec) MaxRate() bool { return s.Rate == 0 && !s.RateHalf && s.BacklogBytes == 0 }

type shape struct {
	partitions, producers, consumers, subs int
	sizes                                  []int
	durs                                   []Durability
	rates                                  bool // W3-style rate sweep
	halfOfMax                              bool // W4/W6-style 50 % of max point
	fixedRate                              float64
	backlog                                bool
	measureScale                           int // multiples of Config.Measure
	note                                   string
	// noBatch turns Pulsar client batching off: with 10 msg/s per topic a batch holds one
	// message, and 1,000 producers with 1 ms batch timers burn the load generator's CPU.
	noBatch bool
}

// catalogue is performance.md §5.2 scaled to this harness. W10 (fsync off) is not a separate
// shape: every workload runs D2 too when -durability lists it.
var catalogue = map[string]shape{
	"W1":  {1, 1, 1, 1, []int{100}, []Durability{D1, D2}, false, false, 0, false, 1, "1 partition, 1 producer, 1 consumer, max rate", false},
	"W2":  {1, 1, 1, 1, []int{1024}, []Durability{D1, D2}, false, false, 0, false, 1, "1 partition, 1 producer, 1 consumer, max rate", false},
	"W3":  {1, 1, 1, 1, []int{1024}, []Durability{D1, D2}, true, false, 0, false, 1, "1 partition, open-loop rate sweep (latency vs load)", false},
	"W4":  {16, 4, 4, 1, []int{1024}, []Durability{D1, D2}, false, false, 0, false, 1, "16 partitions (NATS: 16 subjects in 1 stream), 4 producers, 4 consumers, max rate", false},
	"W5":  {1, 1, 1, 4, []int{1024}, []Durability{D1}, false, false, 10000, false, 1, "fan-out: 1 partition, 1 producer, 4 subscriptions, 10k msg/s", false},
	"W6":  {1, 1, 1, 1, []int{1024}, []Durability{D1}, false, true, 0, false, 5, "tail reads at 50% of the W2 NATS max, long window", false},
	"W7":  {1, 1, 1, 1, []int{1024}, []Durability{D2}, false, false, 0, true, 1, "catch-up: backlog then drain from earliest while publishing", false},
	"W8":  {1, 1, 1, 1, []int{1024}, []Durability{D2}, false, false, 0, true, 1, "catch-up beyond RAM (set -backlog 32GiB)", false},
	"W9":  {1000, 4, 4, 1, []int{100}, []Durability{D1, D2}, false, false, 10000, false, 1, "1000 partitions, 10 msg/s each, Pulsar batching off", true},
	"W10": {1, 1, 1, 1, []int{100, 1024}, []Durability{D2}, false, false, 0, false, 1, "fsync off, max rate (W1/W2 in D2)", false},
}

// Expand turns the configured workload IDs into the ordered list of variants.
func Expand(c Config) []Spec {
	allowed := map[Durability]bool{}
	for _, d := range c.Durabilities {
		allowed[Durability(d)] = true
	}
	var out []Spec
	for _, id := range c.Workloads {
		sh := catalogue[id]
		for _, d := range sh.durs {
			if !allowed[d] {
				continue
			}
			for _, size := range sh.sizes {
				base := Spec{
					Workload: id, Durability: d, Partitions: sh.partitions, Producers: sh.producers,
					Consumers: sh.consumers, Subs: sh.subs, MsgSize: size, NoBatching: sh.noBatch,
					Warmup: c.Warmup, Measure: c.Measure * time.Duration(sh.measureScale),
				}
				prefix := fmt.Sprintf("%s-%s-%s", id, FormatBytes(int64(size)), d)
				maxName := fmt.Sprintf("W2-%s-%s-max", FormatBytes(int64(size)), d)
				if size != 1024 {
					maxName = fmt.Sprintf("W1-%s-%s-max", FormatBytes(int64(size)), d)
				}
				switch {
				case sh.rates:
					for _, r := range c.Rates {
						s := base
						if r == "half" {
							s.RateHalf, s.RateOf = true, maxName
							s.Name = prefix + "-halfmax"
						} else {
							s.Rate, _ = strconv.ParseFloat(r, 64)
							s.Name = fmt.Sprintf("%s-%s/s", prefix, r)
						}
						out = append(out, s)
					}
				case sh.halfOfMax:
					s := base
					s.RateHalf, s.RateOf, s.Name = true, maxName, prefix+"-halfmax"
					out = append(out, s)
				case sh.fixedRate > 0:
					s := base
					s.Rate = sh.fixedRate
					s.Name = fmt.Sprintf("%s-%.0f/s", prefix, sh.fixedRate)
					out = append(out, s)
				case sh.backlog:
					s := base
					s.BacklogBytes, s.CatchupRate = c.BacklogBytes, c.CatchupRate
					s.Name = fmt.Sprintf("%s-backlog%s", prefix, FormatBytes(c.BacklogBytes))
					out = append(out, s)
				default:
					s := base
					s.Name = prefix + "-max"
					if id == "W10" {
						s.Name = fmt.Sprintf("W10-%s-%s-max", FormatBytes(int64(size)), d)
					}
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// assign spreads partitions over n workers round-robin: worker i gets i, i+n, i+2n, ...
func assign(partitions, n, i int) []int {
	var out []int
	for p := i; p < partitions; p += n {
		out = append(out, p)
	}
	return out
}
