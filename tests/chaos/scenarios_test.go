package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/devcluster"
	"github.com/magnetar-io/magnetar/internal/testbin"
)

// binary is the magnetar binary TestMain built (with -race under -race).
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "magnetar-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if binary, err = testbin.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run is one scenario in progress: the cluster, the workload, the seeded randomness.
type run struct {
	t    *testing.T
	c    *chaosCluster
	w    *workload
	rng  *rand.Rand
	seed uint64
	// until reports whether the fault phase should go on (time or acknowledged count).
	until func() bool
	// interval between nemesis steps.
	interval time.Duration
	// long is the long tier: only there are time bounds checked (a loaded CI machine under
	// -race is no place for them; the figures are recorded either way).
	long bool
}

// sleep waits d, or less when the fault phase is over.
func (r *run) sleep(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end) && r.until(); {
		time.Sleep(min(100*time.Millisecond, time.Until(end)))
	}
}

// scenario is a row of the goal table.
type scenario struct {
	id, name string
	dedup    bool
	opts     clusterOpts
	// nemesis runs the faults of one step; the runner calls it until the fault phase ends.
	nemesis func(r *run)
	// after checks the scenario's own criteria once the run was checked (optional).
	after func(r *run, res *result)
	// notCovered says plainly what of the row is not done.
	notCovered string
	// prep runs once the cluster is up, before the workload (optional).
	prep func(r *run)
	// expectLoss marks a negative control: the run is valid only if it loses messages,
	// which proves the checker would see a loss.
	expectLoss bool
}

// lazyDisks turns on the recording of unsynced writes on every bookie (R7).
func lazyDisks(r *run) {
	r.c.lazy = true
	for _, b := range r.c.dc.Bookies {
		r.c.diskFault(b, "lazy")
	}
	time.Sleep(time.Second) // the bookies re-read the control file every 100 ms
}

func baseOpts() clusterOpts { return clusterOpts{bookies: 5, brokers: 3, e: 3, qw: 3, qa: 2} }

// scenarios are R0-R14 of docs/reliability.md's goal table.
var scenarios = []scenario{
	{id: "R0", name: "no faults", dedup: true, opts: baseOpts(), nemesis: func(r *run) { r.sleep(r.interval) }},
	{id: "R1", name: "kill -9 of an ensemble bookie, restart after a pause", dedup: true, opts: baseOpts(), nemesis: func(r *run) {
		b := pick(r.rng, r.c.dc.Bookies)
		r.c.kill(b)
		r.sleep(r.interval / 2)
		r.c.restart(b)
		r.sleep(r.interval)
	}},
	{id: "R2", name: "SIGSTOP of a bookie, then of a majority of one write set", dedup: true, opts: baseOpts(), nemesis: func(r *run) {
		n := 1
		if r.rng.IntN(3) == 0 {
			n = 2 // Qw=3, Qa=2: two paused bookies of a write set leave one
		}
		perm := r.rng.Perm(len(r.c.dc.Bookies))[:n]
		for _, i := range perm {
			r.c.pause(r.c.dc.Bookies[i])
		}
		r.sleep(r.interval)
		for _, i := range perm {
			r.c.resume(r.c.dc.Bookies[i])
		}
		r.sleep(r.interval / 2)
	}},
	{id: "R3", name: "kill -9 of a broker (topic owners move); dedup across it", dedup: true, opts: baseOpts(), nemesis: func(r *run) {
		b := pick(r.rng, r.c.dc.Brokers)
		r.c.kill(b)
		r.sleep(r.interval)
		r.c.restart(b)
		r.sleep(r.interval)
	}, after: func(r *run, res *result) {
		// Ownership moves when the dead owner's session expires: publishing must resume
		// within the session TTL plus the goal's 5 s (pulsar#5218 is the duplicates half,
		// which the checker fails on with deduplication on).
		if bound := (ttl + 5*time.Second).Seconds(); r.long && res.MaxUnavailabilityS > bound {
			res.Valid = false
			res.Problems = append(res.Problems, fmt.Sprintf("publishing stopped for %.1f s, more than the session TTL + 5 s (%.0f s)", res.MaxUnavailabilityS, bound))
		}
	}},
	{id: "R4", name: "a broker partitioned from the metadata store only, or SIGSTOPped (zombie owner)", dedup: true, opts: baseOpts(), nemesis: func(r *run) {
		b := pick(r.rng, r.c.dc.Brokers)
		if r.rng.IntN(2) == 0 {
			// Paused past its session: its bundles move; when it resumes it must not serve them.
			r.c.pause(b)
			r.sleep(r.interval * 2)
			r.c.resume(b)
			r.sleep(r.interval)
			return
		}
		var md []string
		for _, m := range r.c.dc.Metadata {
			md = append(md, m.Name)
		}
		r.c.record("partition from metadata", b.Name)
		r.c.net.partition([]string{b.Name}, md)
		r.sleep(r.interval * 2)
		r.c.record("heal network", "")
		r.c.net.heal()
		r.sleep(r.interval)
	}},
	{id: "R5", name: "network partitions: halves, one node isolated, a bookie cut from the brokers, a bridge node, one-way drops, a rate-limited link", dedup: true, opts: baseOpts(), nemesis: func(r *run) {
		names := r.c.net.order
		switch r.rng.IntN(6) {
		case 0:
			perm := r.rng.Perm(len(names))
			var a, b []string
			for i, j := range perm {
				if i%2 == 0 {
					a = append(a, names[j])
				} else {
					b = append(b, names[j])
				}
			}
			r.c.record("partition halves", strings.Join(a, ","))
			r.c.net.partition(a, b)
		case 1:
			n := pick(r.rng, names)
			r.c.record("isolate", n)
			r.c.net.isolate(n)
		case 2:
			b := pick(r.rng, r.c.dc.Bookies)
			var brokers []string
			for _, p := range r.c.dc.Brokers {
				brokers = append(brokers, p.Name)
			}
			r.c.record("cut from brokers", b.Name)
			r.c.net.partition([]string{b.Name}, brokers)
		case 3:
			// A bridge: two halves that cannot reach each other, and one node both reach.
			perm := r.rng.Perm(len(names))
			bridge := names[perm[0]]
			var a, b []string
			for i, j := range perm[1:] {
				if i%2 == 0 {
					a = append(a, names[j])
				} else {
					b = append(b, names[j])
				}
			}
			r.c.record("partition halves around bridge", bridge)
			r.c.net.partition(a, b)
		case 4:
			// One way: a broker's packets to a bookie vanish, the bookie's still arrive.
			br, bk := pick(r.rng, r.c.dc.Brokers), pick(r.rng, r.c.dc.Bookies)
			if r.rng.IntN(2) == 0 {
				r.c.record("one-way drop to "+bk.Name, br.Name)
				r.c.net.drop(br.Name, bk.Name)
			} else {
				r.c.record("one-way drop to "+br.Name, bk.Name)
				r.c.net.drop(bk.Name, br.Name)
			}
		default:
			n := pick(r.rng, append(append([]*devcluster.Proc{}, r.c.dc.Bookies...), r.c.dc.Brokers...))
			r.c.record("rate limit 1mbit", n.Name)
			r.c.net.rateLimit(n.Name, "1mbit")
		}
		r.sleep(r.interval)
		r.c.record("heal network", "")
		r.c.net.heal()
		r.sleep(r.interval)
	}},
	{id: "R6", name: "metadata faults: kill a member, partition a minority, link down, SIGSTOP a member", dedup: true, opts: baseOpts(), nemesis: func(r *run) {
		m := pick(r.rng, r.c.dc.Metadata)
		switch r.rng.IntN(4) {
		case 0:
			r.c.kill(m)
			r.sleep(r.interval)
			r.c.restart(m)
		case 1:
			r.c.record("isolate", m.Name)
			r.c.net.isolate(m.Name)
			r.sleep(r.interval)
			r.c.net.heal()
		case 2:
			r.c.record("link down", m.Name)
			r.c.net.link(m.Name, false)
			r.sleep(r.interval)
			r.c.net.link(m.Name, true)
		default:
			r.c.pause(m)
			r.sleep(r.interval)
			r.c.resume(m)
		}
		r.sleep(r.interval)
	}},
	{id: "R7", name: "a bookie crashes and loses its unsynced writes (journal fsync on)", dedup: true, opts: baseOpts(), prep: lazyDisks,
		nemesis: func(r *run) {
			b := pick(r.rng, r.c.dc.Bookies)
			r.c.crash(b)
			r.sleep(r.interval / 2)
			r.c.restart(b)
			r.sleep(r.interval)
		}},
	{id: "R7-control", name: "negative control of R7: journal fsync off, every bookie crashes at once", dedup: true, expectLoss: true,
		opts: clusterOpts{bookies: 3, brokers: 2, e: 3, qw: 3, qa: 2, bookieArgs: []string{"--journal-sync-data=false"}}, prep: lazyDisks,
		nemesis: func(r *run) {
			r.sleep(r.interval)
			for _, b := range r.c.dc.Bookies {
				r.c.crash(b)
			}
			for _, b := range r.c.dc.Bookies {
				r.c.restart(b)
			}
			r.sleep(r.interval)
		}},
	{id: "R8", name: "torn or bit-flipped last journal record on a stopped bookie", dedup: true, opts: baseOpts(), nemesis: func(r *run) {
		b := pick(r.rng, r.c.dc.Bookies)
		r.c.kill(b)
		damageJournalTail(r, b)
		r.c.restart(b)
		r.sleep(r.interval)
	}},
	{id: "R9", name: "disk full, then failing fsync, on one bookie", dedup: true, opts: baseOpts(), nemesis: func(r *run) {
		b := pick(r.rng, r.c.dc.Bookies)
		f := "full"
		if r.rng.IntN(2) == 0 {
			f = "syncfail"
		}
		r.c.diskFault(b, f)
		r.sleep(r.interval)
		r.c.diskFault(b, "")
		r.sleep(r.interval)
	}},
	// R9 on the Pebble index alone (vfs.FaultFS scoped to its files): the journal stays
	// healthy, so adds are acknowledged until a flush's index commit fails and the bookie
	// turns read-only; it must turn writable again (the index reopened) or, after a
	// restart, come back with everything it acknowledged. Flushes and disk checks every
	// second, so each fault window sees both.
	{id: "R9-index", name: "disk full, then failing fsync, on one bookie's Pebble index only", dedup: true,
		opts: clusterOpts{bookies: 5, brokers: 3, e: 3, qw: 3, qa: 2, bookieArgs: []string{"--flush-interval", "1s", "--disk-check-interval", "1s"}},
		nemesis: func(r *run) {
			b := pick(r.rng, r.c.dc.Bookies)
			f := "full index"
			if r.rng.IntN(2) == 0 {
				f = "syncfail index"
			}
			r.c.diskFault(b, f)
			r.sleep(r.interval)
			r.c.diskFault(b, "")
			if r.rng.IntN(2) == 0 {
				r.c.kill(b)
				r.c.restart(b)
			}
			r.sleep(r.interval)
		}, after: checkIndexFaultBit},
	{id: "R10", name: "bit flips in a stopped bookie's entry logs (a minority of each write set)", dedup: true, opts: baseOpts(), nemesis: func(r *run) {
		b := pick(r.rng, r.c.dc.Bookies)
		r.c.kill(b)
		flipEntryLogBits(r, b)
		r.c.restart(b)
		r.sleep(r.interval)
	}},
	{id: "R11", name: "a bookie's disk wiped: it must not rejoin under its old identity", dedup: true, opts: baseOpts(), nemesis: func(r *run) {
		r.sleep(r.interval)
	}, after: checkWipedBookieRefused},
	{id: "R12", name: "clock offset: a broker restarted with its clock 5 min ahead or behind", dedup: true, opts: baseOpts(),
		nemesis: func(r *run) {
			b := pick(r.rng, r.c.dc.Brokers)
			off := 5 * time.Minute
			if r.rng.IntN(2) == 0 {
				off = -off
			}
			r.c.clockOffset(b, off)
			r.sleep(r.interval)
			r.c.clockOffset(b, 0)
			r.sleep(r.interval)
		},
		notCovered: "bookies and metadata members keep the system clock (only the broker's retention, TTL, transaction timeouts and delayed delivery are behind the clock seam); the offset is applied by a restart, not stepped in a running process"},
	{id: "R13", name: "combined: a random fault of R1-R10 and R14 each step", dedup: true, opts: baseOpts(), nemesis: func(r *run) { mix(r) }},
	{id: "R14", name: "consumers: reconnects during acks, broker kills, cursor bookie kills", dedup: true, opts: baseOpts(), nemesis: func(r *run) {
		r.w.reconnectConsumers(50)
		if r.rng.IntN(2) == 0 {
			b := pick(r.rng, r.c.dc.Brokers)
			r.c.kill(b)
			r.sleep(r.interval / 2)
			r.c.restart(b)
		} else {
			b := pick(r.rng, r.c.dc.Bookies)
			r.c.kill(b)
			r.sleep(r.interval / 2)
			r.c.restart(b)
		}
		r.sleep(r.interval)
	}},
}

// mix is R13's nemesis (set in init: it refers to the table).
var mix func(r *run)

func init() {
	mix = func(r *run) {
		id := pick(r.rng, []string{"R1", "R2", "R3", "R4", "R5", "R6", "R8", "R9", "R10", "R14"})
		r.c.record("mix "+id, "")
		scenarioByID(id).nemesis(r)
	}
}

func scenarioByID(id string) scenario {
	for _, s := range scenarios {
		if s.id == id {
			return s
		}
	}
	panic("no scenario " + id)
}

// tier sizes a run: the short one inside make test, the long one behind make chaos.
type tier struct {
	minAcked int           // the fault phase lasts until this many sends were acknowledged
	minTime  time.Duration // and at least this long
	maxTime  time.Duration // but no longer (the run then fails if minAcked was not reached)
	interval time.Duration
	drain    time.Duration
	topics   int
	prods    int
	long     bool
}

var (
	shortTier = tier{minAcked: 1500, minTime: 20 * time.Second, maxTime: 3 * time.Minute, interval: 4 * time.Second, drain: 2 * time.Minute, topics: 2, prods: 2}
	longTier  = tier{minAcked: 1_000_000, minTime: 300 * time.Second, maxTime: 4 * time.Hour, interval: 10 * time.Second, drain: 5 * time.Minute, topics: 4, prods: 4, long: true}
)

// seedFor is SEED from the environment (replay a failed run) or a fresh one.
func seedFor() uint64 {
	if s, err := strconv.ParseUint(os.Getenv("SEED"), 10, 64); err == nil {
		return s
	}
	return uint64(time.Now().UnixNano())
}

// runScenario runs sc on its own cluster and writes its JSON result to CHAOS_RESULTS (a
// directory; default: the test's temporary directory), failing on any safety violation.
func runScenario(t *testing.T, sc scenario, tr tier) *result {
	seed := seedFor()
	t.Logf("%s (%s): SEED=%d", sc.id, sc.name, seed)
	rng := rand.New(rand.NewPCG(seed, seed>>3))
	sc.opts.dedup = sc.dedup
	c := startChaosCluster(t, sc.opts)
	var topics []string
	for i := range tr.topics {
		topics = append(topics, fmt.Sprintf("persistent://public/default/chaos-%s-%d", strings.ToLower(sc.id), i))
	}
	w := newWorkload(t, c.dc.ClientServiceURL(), topics, seed)
	r := &run{t: t, c: c, w: w, rng: rng, seed: seed, interval: tr.interval, until: func() bool { return true }, long: tr.long}
	if sc.prep != nil {
		sc.prep(r)
	}
	meta := startMetaWorkload(c.dc.MetadataURL, 3)
	began := time.Now()
	c.start = began
	w.start(tr.prods)
	r.until = func() bool {
		el := time.Since(began)
		return el < tr.maxTime && (el < tr.minTime || w.acked.Load() < int64(tr.minAcked))
	}
	for r.until() {
		sc.nemesis(r)
	}
	c.heal()
	healed := time.Now()
	acksAtHeal := w.acked.Load()
	// Keep sending a little after the heal: recovery time is the heal to the first ack.
	for deadline := time.Now().Add(time.Minute); w.acked.Load() == acksAtHeal && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	recovery := time.Since(healed).Seconds()
	w.stopProducers()
	if sc.expectLoss {
		tr.drain = min(tr.drain, 30*time.Second) // what is lost never comes; do not wait long
	}
	subs := drain(w, topics, tr.drain)
	w.finish()
	lin, metaOps := meta.finish()
	res := check(w.hist.snapshot(), sc.dedup, subs)
	res.Scenario, res.Seed, res.Linearizable, res.MetadataOps = sc.id, seed, lin, metaOps
	res.MaxUnavailabilityS, res.RecoveryS = unavailability(w.hist.snapshot()), recovery
	res.Faults, res.DurationS, res.NotCovered = c.faults, time.Since(began).Seconds(), sc.notCovered
	if lin == "illegal" {
		res.Valid = false
		res.Problems = append(res.Problems, "metadata history not linearizable")
	}
	if res.AcknowledgedCount < tr.minAcked {
		res.Valid = false
		res.Problems = append(res.Problems, fmt.Sprintf("only %d sends acknowledged, want >= %d", res.AcknowledgedCount, tr.minAcked))
	}
	if sc.after != nil {
		sc.after(r, res)
		res.Faults = c.faults // with the faults after() made
	}
	if sc.expectLoss {
		// The negative control bites only if it lost acknowledged messages.
		res.Valid = res.LostCount > 0 && res.Linearizable != "illegal"
		if !res.Valid {
			res.Problems = append(res.Problems, "negative control lost nothing: the checker or the fault would not show a loss")
		}
	}
	writeResult(t, res)
	if !res.Valid {
		writeHistory(t, res, w.hist.snapshot())
		t.Errorf("%s SEED=%d invalid: lost %d (e.g. %v), unexpected %d, duplicated %d, reordered %d, metadata %s, problems %v",
			sc.id, seed, res.LostCount, res.LostExamples, res.UnexpectedCount, res.DuplicatedCount, res.ReorderedCount, lin, res.Problems)
	}
	t.Logf("%s: acknowledged %d, info %d, lost %d, duplicated %d, reordered %d, recovered %d, max unavailability %.1fs, recovery %.1fs, metadata ops %d %s",
		sc.id, res.AcknowledgedCount, res.InfoCount, res.LostCount, res.DuplicatedCount, res.ReorderedCount, res.RecoveredCount,
		res.MaxUnavailabilityS, res.RecoveryS, metaOps, lin)
	return res
}

// drain waits until every subscription received every acknowledged send, or d passes
// (whatever is missing then counts as lost).
func drain(w *workload, topics []string, d time.Duration) []string {
	var subs []string
	for _, tp := range topics {
		for _, s := range subscriptions {
			subs = append(subs, tp+"/"+s.name)
		}
	}
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(time.Second) {
		if res := check(w.hist.snapshot(), false, subs); res.LostCount == 0 {
			break
		}
	}
	return subs
}

func writeResult(t *testing.T, res *result) {
	dir := os.Getenv("CHAOS_RESULTS")
	if dir == "" {
		dir = t.TempDir()
	}
	_ = os.MkdirAll(dir, 0o755)
	b, _ := json.MarshalIndent(res, "", "  ")
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.json", res.Scenario, res.Seed))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Error(err)
	}
	t.Logf("result: %s", path)
}

// writeHistory saves the history of an invalid run next to its result, one JSON op a line.
func writeHistory(t *testing.T, res *result, ops []op) {
	dir := os.Getenv("CHAOS_RESULTS")
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.history.jsonl", res.Scenario, res.Seed)))
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, o := range ops {
		_ = enc.Encode(o)
	}
}

// damageJournalTail tears or bit-flips the last record of a stopped bookie's newest journal
// file (R8): the bookie must start, and the checker finds no acknowledged message lost.
func damageJournalTail(r *run, b *devcluster.Proc) {
	dir := filepath.Join(r.c.dir, b.Name, "journal")
	names, _ := filepath.Glob(filepath.Join(dir, "*.txn"))
	if len(names) == 0 {
		return
	}
	path := names[len(names)-1]
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	end := len(strings.TrimRight(string(data), "\x00"))
	if end <= 64 {
		return
	}
	if r.rng.IntN(2) == 0 {
		cut := end - 1 - r.rng.IntN(min(end-16, 512))
		clear(data[cut:end])
		r.c.record("journal torn", b.Name)
	} else {
		data[end-1-r.rng.IntN(min(end-16, 64))] ^= 1 << r.rng.IntN(8)
		r.c.record("journal bit flip", b.Name)
	}
	_ = os.WriteFile(path, data, 0o644)
}

// flipEntryLogBits flips a few bits in a stopped bookie's entry logs (R10).
func flipEntryLogBits(r *run, b *devcluster.Proc) {
	logs, _ := filepath.Glob(filepath.Join(r.c.dir, b.Name, "ledgers", "*.log"))
	if len(logs) == 0 {
		return
	}
	path := pick(r.rng, logs)
	data, err := os.ReadFile(path)
	if err != nil || len(data) < 4096 {
		return
	}
	for range 2 {
		data[4096+r.rng.IntN(len(data)-4096)] ^= 1 << r.rng.IntN(8)
	}
	_ = os.WriteFile(path, data, 0o644)
	r.c.record("entry log bit flips", b.Name)
}

// checkWipedBookieRefused (R11): stop a bookie, wipe its disks, start it at its address:
// it must refuse (cluster-wide cookie) instead of serving empty under the old identity.
func checkWipedBookieRefused(r *run, res *result) {
	b := r.c.dc.Bookies[0]
	r.c.kill(b)
	for _, d := range []string{"journal", "ledgers"} {
		_ = os.RemoveAll(filepath.Join(r.c.dir, b.Name, d))
	}
	r.c.record("wipe and start", b.Name)
	if err := b.Start(); err != nil {
		r.t.Fatal(err)
	}
	if !b.Wait(2 * time.Minute) {
		res.Valid = false
		res.Problems = append(res.Problems, "a bookie with wiped disks serves under its old address")
		return
	}
	log, _ := os.ReadFile(b.Log())
	if !strings.Contains(string(log), "cookie mismatch") {
		res.Valid = false
		res.Problems = append(res.Problems, "the wiped bookie exited, but not with a cookie mismatch")
	}
}

// checkIndexFaultBit fails an R9-index run in which no bookie turned read-only: the
// faults on the index would then have missed every flush, and the run proved nothing.
func checkIndexFaultBit(r *run, res *result) {
	for _, b := range r.c.dc.Bookies {
		if log, err := os.ReadFile(b.Log()); err == nil && bytes.Contains(log, []byte("bookie storage is read-only")) {
			return
		}
	}
	res.Valid = false
	res.Problems = append(res.Problems, "no bookie turned read-only: the index faults never met a flush")
}

// TestChaosShort is the seeded short tier inside make test: R1 (bookie kills), R3 (broker
// kills with deduplication), R5 (partitions) and R9-index (the Pebble index's disk failing)
// on a small cluster, a few thousand acknowledged messages each.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	for _, id := range []string{"R1", "R3", "R5", "R9-index"} {
		sc := scenarioByID(id)
		sc.opts.bookies, sc.opts.brokers = 4, 2
		t.Run(id, func(t *testing.T) { runScenario(t, sc, shortTier) })
	}
}

// TestChaosLong is the long tier (make chaos): every scenario, >= 1,000,000 acknowledged
// messages and >= 300 s of faults each. CHAOS_SCENARIOS=R1,R3 selects rows; SEED replays.
func TestChaosLong(t *testing.T) {
	if os.Getenv("CHAOS_LONG") == "" && !soakTag {
		t.Skip("the long tier runs with CHAOS_LONG=1 (make chaos) or -tags soak")
	}
	want := os.Getenv("CHAOS_SCENARIOS")
	tr := longTier
	if n, err := strconv.Atoi(os.Getenv("CHAOS_MIN_ACKED")); err == nil {
		tr.minAcked = n
	}
	if d, err := time.ParseDuration(os.Getenv("CHAOS_MIN_TIME")); err == nil {
		tr.minTime = d
	}
	for _, sc := range scenarios {
		if want != "" && !strings.Contains(","+want+",", ","+sc.id+",") {
			continue
		}
		t.Run(sc.id, func(t *testing.T) { runScenario(t, sc, tr) })
	}
}
