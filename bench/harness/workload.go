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
		return "D1 fsync before ack (Magnetar journal fsync on; NATS sync_interval: always; Kafka log.flush.interval.messages=1; Pulsar journalSyncData=true), replication 1"
	}
	return "D2 write without fsync (Magnetar journalSyncData=false; NATS default sync_interval 2m; Kafka's default, the OS writes back; Pulsar journalSyncData=false), replication 1"
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
	// Versus, when set, limits the variant to Magnetar and this peer (a half-rate variant
	// runs at half of that peer's max).
	Versus string
	// Sweep names the scaling dimension of an S1-S3 variant ("topics", "subscriptions per
	// topic", "producer connections") and Point its value there.
	Sweep string
	Point int
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
	// sweep makes a scaling workload: one variant per point of the config's list.
	sweep sweepKind
}

// sweepKind is the dimension a scaling workload varies.
type sweepKind int

const (
	noSweep        sweepKind = iota
	sweepTopics              // Partitions = point, at ScaleRate in total
	sweepSubs                // Subs = point on one topic, at ScaleFanoutRate
	sweepProducers           // Producers = point connections over 16 topics, at ScaleRate
)

func (k sweepKind) String() string {
	switch k {
	case sweepTopics:
		return "topics"
	case sweepSubs:
		return "subscriptions per topic"
	case sweepProducers:
		return "producer connections"
	}
	return ""
}

// catalogue is performance.md §5.2 scaled to this harness. W10 (fsync off) is not a separate
// shape: every workload runs D2 too when -durability lists it.
var catalogue = map[string]shape{
	"W1":  {1, 1, 1, 1, []int{100}, []Durability{D1, D2}, false, false, 0, false, 1, "1 partition, 1 producer, 1 consumer, max rate", false, noSweep},
	"W2":  {1, 1, 1, 1, []int{1024}, []Durability{D1, D2}, false, false, 0, false, 1, "1 partition, 1 producer, 1 consumer, max rate", false, noSweep},
	"W3":  {1, 1, 1, 1, []int{1024}, []Durability{D1, D2}, true, false, 0, false, 1, "1 partition, open-loop rate sweep (latency vs load)", false, noSweep},
	"W4":  {16, 4, 4, 1, []int{1024}, []Durability{D1, D2}, false, false, 0, false, 1, "16 partitions (NATS: 16 subjects in 1 stream), 4 producers, 4 consumers, max rate", false, noSweep},
	"W5":  {1, 1, 1, 4, []int{1024}, []Durability{D1}, false, false, 10000, false, 1, "fan-out: 1 partition, 1 producer, 4 subscriptions, 10k msg/s", false, noSweep},
	"W6":  {1, 1, 1, 1, []int{1024}, []Durability{D1}, false, true, 0, false, 5, "tail reads at 50% of each peer's W2 max, long window", false, noSweep},
	"W7":  {1, 1, 1, 1, []int{1024}, []Durability{D2}, false, false, 0, true, 1, "catch-up: backlog then drain from earliest while publishing", false, noSweep},
	"W8":  {1, 1, 1, 1, []int{1024}, []Durability{D2}, false, false, 0, true, 1, "catch-up beyond RAM (set -backlog 32GiB)", false, noSweep},
	"W9":  {1000, 4, 4, 1, []int{100}, []Durability{D1, D2}, false, false, 10000, false, 1, "1000 partitions, 10 msg/s each, Pulsar batching off", true, noSweep},
	"W10": {1, 1, 1, 1, []int{100, 1024}, []Durability{D2}, false, false, 0, false, 1, "fsync off, max rate (W1/W2 in D2)", false, noSweep},
	// Scaling curves (issue 25): resident memory and publish p99 as one dimension grows at a
	// fixed total rate, fsync before ack. Partitions, producers and subscriptions below are
	// the shape the sweep does not vary.
	"S1": {0, 4, 4, 1, []int{100}, []Durability{D1}, false, false, 0, false, 1, "topics at a fixed total rate (4 producer and 4 consumer connections, batching off)", true, sweepTopics},
	"S2": {1, 1, 1, 0, []int{100}, []Durability{D1}, false, false, 0, false, 1, "subscriptions on one topic (one consumer each), fixed publish rate", false, sweepSubs},
	"S3": {16, 0, 4, 1, []int{100}, []Durability{D1}, false, false, 0, false, 1, "producer connections over 16 topics at a fixed total rate (4 consumers, batching off)", true, sweepProducers},
}

// Expand turns the configured workload IDs into the ordered list of variants.
func Expand(c Config) []Spec {
	allowed := map[Durability]bool{}
	for _, d := range c.Durabilities {
		allowed[Durability(d)] = true
	}
	var out []Spec
	halves := c.halfPeers()
	for _, id := range c.Workloads {
		sh := catalogue[id]
		if sh.sweep != noSweep {
			out = append(out, expandSweep(c, id, sh, allowed)...)
			continue
		}
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
				half := func() []Spec {
					var hs []Spec
					for _, peer := range halves {
						s := base
						s.RateHalf, s.RateOf, s.Versus, s.Name = true, maxName, peer, prefix+"-halfmax"
						if len(halves) > 1 {
							s.Name += "-" + peer
						}
						hs = append(hs, s)
					}
					return hs
				}
				switch {
				case sh.rates:
					for _, r := range c.Rates {
						if r == "half" {
							out = append(out, half()...)
							continue
						}
						s := base
						s.Rate, _ = strconv.ParseFloat(r, 64)
						s.Name = fmt.Sprintf("%s-%s/s", prefix, r)
						out = append(out, s)
					}
				case sh.halfOfMax:
					out = append(out, half()...)
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

// expandSweep makes one variant per point of a scaling workload.
func expandSweep(c Config, id string, sh shape, allowed map[Durability]bool) []Spec {
	var out []Spec
	points, rate := c.ScaleTopics, c.ScaleRate
	switch sh.sweep {
	case sweepSubs:
		points, rate = c.ScaleSubs, c.ScaleFanoutRate
	case sweepProducers:
		points = c.ScaleProducers
	}
	for _, d := range sh.durs {
		if !allowed[d] {
			continue
		}
		for _, n := range points {
			s := Spec{
				Workload: id, Durability: d, Partitions: sh.partitions, Producers: sh.producers,
				Consumers: sh.consumers, Subs: sh.subs, MsgSize: sh.sizes[0], NoBatching: sh.noBatch,
				Rate: rate, Sweep: sh.sweep.String(), Point: n,
				Warmup: c.Warmup, Measure: c.Measure * time.Duration(sh.measureScale),
			}
			unit := ""
			switch sh.sweep {
			case sweepTopics:
				s.Partitions, unit = n, "topics"
			case sweepSubs:
				s.Subs, unit = n, "subs"
			case sweepProducers:
				s.Producers, unit = n, "producers"
			}
			s.Name = fmt.Sprintf("%s-%s%d-%s-%.0f/s", id, unit, n, d, rate)
			out = append(out, s)
		}
	}
	return out
}

// assign spreads partitions over n workers round-robin: worker i gets i, i+n, i+2n, ...
// With more workers than partitions, worker i gets partition i mod partitions (several
// producers per topic).
func assign(partitions, n, i int) []int {
	if n > partitions {
		return []int{i % partitions}
	}
	var out []int
	for p := i; p < partitions; p += n {
		out = append(out, p)
	}
	return out
}
