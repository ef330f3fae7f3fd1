package harness

import (
	"fmt"
	"slices"
	"strings"
)

// targets evaluates the issues' ratio targets on the medians of the pair ratios: issue 10's
// against NATS, issue 25's against Apache Kafka and Apache Pulsar (and its two tails
// against NATS), issue 19's in a Kafka-protocol run, "no regression" in an A/B run.
func targets(res *Results) [][2]string {
	find := func(pred func(Spec) bool) []Spec {
		var out []Spec
		for _, s := range res.Specs {
			if pred(s) {
				out = append(out, s)
			}
		}
		return out
	}
	eval := func(specs []Spec, peer string, f func(Block) float64, ok func(float64) bool) string {
		var parts []string
		for _, s := range specs {
			rs := pairRatios(res.Blocks, s.Name, peer, f)
			if len(rs) == 0 {
				continue
			}
			verdict := "missed"
			if ok(medianF(rs)) {
				verdict = "met"
			}
			parts = append(parts, fmt.Sprintf("%s: r=%s %s", s.Name, ratioText(rs), verdict))
		}
		if len(parts) == 0 {
			return "not measured (a side not available or the variant not run)"
		}
		return strings.Join(parts, "; ")
	}
	maxD := func(d Durability) []Spec {
		return find(func(s Spec) bool { return s.MaxRate() && s.Durability == d })
	}
	maxAll := find(func(s Spec) bool { return s.MaxRate() })
	halfOf := func(peer string) []Spec {
		return find(func(s Spec) bool { return s.RateHalf && s.Versus == peer })
	}
	catchup := find(func(s Spec) bool { return s.BacklogBytes > 0 })
	steady := find(func(s Spec) bool { return s.Sweep == "" })
	tput := func(b Block) float64 { return b.MsgPerS }
	p99 := func(b Block) float64 { return b.PubP99 }
	rss := func(b Block) float64 { return float64(b.ServerHWMBytes) }
	readRate := func(b Block) float64 { return b.CatchupMsgPerS }
	atLeast := func(x float64) func(float64) bool { return func(r float64) bool { return r >= x } }
	atMost := func(x float64) func(float64) bool { return func(r float64) bool { return r <= x } }

	switch res.Config.Peer {
	case "magnetar":
		// An A/B of two builds: "no regression beyond noise", as the bounds below put it.
		return [][2]string{
			{"D1 throughput >= 0.95x before", eval(maxD(D1), magnetarBefore, tput, atLeast(0.95))},
			{"D2 throughput >= 0.95x before", eval(maxD(D2), magnetarBefore, tput, atLeast(0.95))},
			{"publish p99 <= 1.1x before", eval(maxAll, magnetarBefore, p99, atMost(1.1))},
			{"server CPU per message <= 1.05x before", eval(maxAll, magnetarBefore, func(b Block) float64 { return b.ServerCPUPerM }, atMost(1.05))},
			{"resident memory <= 1.1x before", eval(maxAll, magnetarBefore, rss, atMost(1.1))},
		}
	case "kafka":
		return [][2]string{
			{"D1 Kafka-protocol throughput on Magnetar >= Apache Kafka", eval(maxD(D1), "kafka", tput, atLeast(1))},
			{"D2 Kafka-protocol throughput on Magnetar >= Apache Kafka", eval(maxD(D2), "kafka", tput, atLeast(1))},
			{"publish p99 at half of Kafka's max <= Kafka", eval(halfOf("kafka"), "kafka", p99, atMost(1))},
		}
	}
	peers := res.Config.activePeers()
	var out [][2]string
	if slices.Contains(peers, "nats") {
		w3d2 := find(func(s Spec) bool {
			return s.Workload == "W3" && s.Durability == D2 && (s.Versus == "" || s.Versus == "nats")
		})
		w9 := find(func(s Spec) bool { return s.Workload == "W9" })
		out = append(out,
			[2]string{"D1 throughput >= 5x NATS async", eval(maxD(D1), "nats", tput, atLeast(5))},
			[2]string{"D1 throughput >= 1x NATS atomic batches", eval(maxD(D1), "nats-atomic", tput, atLeast(1))},
			[2]string{"D2 throughput >= 1x NATS default", eval(maxD(D2), "nats", tput, atLeast(1))},
			[2]string{"publish p99 at half of NATS max <= NATS", eval(halfOf("nats"), "nats", p99, atMost(1))},
			[2]string{"catch-up read rate >= NATS", eval(catchup, "nats", readRate, atLeast(1))},
			[2]string{"server CPU per message <= NATS", eval(maxAll, "nats", func(b Block) float64 { return b.ServerCPUPerM }, atMost(1))},
			[2]string{"resident memory <= 2x NATS", eval(maxAll, "nats", rss, atMost(2))},
			[2]string{"tail: W3 D2 publish p99.9 <= NATS (journal rotation)", eval(w3d2, "nats", func(b Block) float64 { return b.PubP999 }, atMost(1))},
			[2]string{"tail: W9 publish p99 <= NATS (1,000 topics, batching off)", eval(w9, "nats", p99, atMost(1))},
		)
	}
	if slices.Contains(peers, "pulsar") {
		out = append(out,
			[2]string{"throughput >= Apache Pulsar, every max-rate row", eval(maxAll, "pulsar", tput, atLeast(1))},
			[2]string{"publish p99 at half of Pulsar's max <= Pulsar's", eval(halfOf("pulsar"), "pulsar", p99, atMost(1))},
			[2]string{"catch-up read rate >= Apache Pulsar (not an issue target)", eval(catchup, "pulsar", readRate, atLeast(1))},
			[2]string{"resident memory <= 0.5x Apache Pulsar", eval(steady, "pulsar", rss, atMost(0.5))},
		)
	}
	if slices.Contains(peers, "kafka") {
		out = append(out,
			[2]string{"D1 throughput >= Apache Kafka D1", eval(maxD(D1), "kafka", tput, atLeast(1))},
			[2]string{"D2 throughput >= 1x Apache Kafka D2", eval(maxD(D2), "kafka", tput, atLeast(1))},
			[2]string{"catch-up read rate >= Apache Kafka", eval(catchup, "kafka", readRate, atLeast(1))},
			[2]string{"resident memory <= 0.5x Apache Kafka", eval(steady, "kafka", rss, atMost(0.5))},
		)
	}
	for _, peer := range []string{"kafka", "pulsar", "nats"} {
		if slices.Contains(peers, peer) {
			out = append(out, [2]string{"startup to ready vs " + peer + " (reported, no target)", readyRatio(res.Blocks, peer)})
		}
	}
	return out
}

// readyRatio is Magnetar's median startup-to-ready over the peer's, over every block.
func readyRatio(all []Block, peer string) string {
	med := func(sys string) (float64, int) {
		var bs []Block
		for _, b := range all {
			if b.System == sys && b.Failed == "" {
				bs = append(bs, b)
			}
		}
		return medianOf(bs, func(b Block) float64 { return b.ReadyMs }), len(bs)
	}
	m, nm := med("magnetar")
	p, np := med(peer)
	if nm == 0 || np == 0 || p <= 0 {
		return "not measured"
	}
	return fmt.Sprintf("r=%.3f (magnetar %s ms over %d blocks, %s %s ms over %d)", m/p, num(m), nm, peer, num(p), np)
}
