package functions

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

func fnMeta(fqfn string, parallelism int) *FunctionMeta {
	return &FunctionMeta{Config: FunctionConfig{FQFN: fqfn, Parallelism: parallelism}, Version: 1}
}

// apply runs schedule and applies its result to current.
func apply(in schedInput) map[string]Assignment {
	puts, dels := schedule(in)
	out := map[string]Assignment{}
	for k, v := range in.current {
		out[k] = v
	}
	for _, k := range dels {
		delete(out, k)
	}
	for k, v := range puts {
		out[k] = v
	}
	return out
}

func loads(table map[string]Assignment) map[string]int {
	l := map[string]int{}
	for _, a := range table {
		l[a.WorkerID]++
	}
	return l
}

func TestScheduleSpreadsKeepsAndRebalances(t *testing.T) {
	now := time.Unix(1000, 0)
	in := schedInput{
		functions: map[string]*FunctionMeta{"t/n/f": fnMeta("t/n/f", 3)},
		live:      map[string]bool{"w1": true, "w2": true}, goneSince: map[string]time.Time{}, now: now, reschedule: time.Minute,
	}
	table := apply(in)
	if l := loads(table); len(table) != 3 || l["w1"]+l["w2"] != 3 || l["w1"] < 1 || l["w2"] < 1 {
		t.Fatalf("3 instances on 2 workers: %v", table)
	}
	// Nothing changed: nothing moves.
	in.current = table
	if puts, dels := schedule(in); len(puts) != 0 || len(dels) != 0 {
		t.Fatalf("a stable table changed: %v %v", puts, dels)
	}
	// A worker joins: it takes a share.
	in.functions["t/n/g"] = fnMeta("t/n/g", 3)
	in.live["w3"] = true
	table = apply(in)
	if l := loads(table); l["w1"] != 2 || l["w2"] != 2 || l["w3"] != 2 {
		t.Fatalf("rebalance onto the new worker: %v", l)
	}
	// w3 vanishes: its instances wait for rescheduleTimeout, then move.
	in.current = table
	delete(in.live, "w3")
	in.goneSince["w3"] = now
	in.now = now.Add(30 * time.Second)
	waiting := apply(in)
	if loads(waiting)["w3"] != 2 {
		t.Fatalf("moved before rescheduleTimeoutMs: %v", loads(waiting))
	}
	in.current = waiting
	in.now = now.Add(61 * time.Second)
	moved := apply(in)
	if l := loads(moved); l["w3"] != 0 || l["w1"] != 3 || l["w2"] != 3 {
		t.Fatalf("after rescheduleTimeoutMs: %v", l)
	}
	// A function shrinks and another is deleted: their assignments go.
	in.current = moved
	in.functions["t/n/f"] = fnMeta("t/n/f", 1)
	delete(in.functions, "t/n/g")
	final := apply(in)
	if len(final) != 1 {
		t.Fatalf("after shrink and delete: %v", final)
	}
}

func TestScheduleCarriesVersionEpochAndStop(t *testing.T) {
	m := fnMeta("t/n/f", 2)
	m.Version = 7
	m.Restarts = map[string]int64{"-1": 1, "1": 2}
	m.InstanceStates = map[string]string{"0": StateStopped}
	table := apply(schedInput{functions: map[string]*FunctionMeta{"t/n/f": m}, live: map[string]bool{"w": true}, now: time.Now()})
	a0, a1 := table[assignmentKey("t/n/f", 0)], table[assignmentKey("t/n/f", 1)]
	if !a0.Stopped || a1.Stopped || a0.Version != 7 || a0.Epoch != 1 || a1.Epoch != 3 {
		t.Fatalf("assignments %+v %+v", a0, a1)
	}
}

func TestScheduleWithoutWorkersPlacesNothing(t *testing.T) {
	puts, _ := schedule(schedInput{functions: map[string]*FunctionMeta{"t/n/f": fnMeta("t/n/f", 2)}, now: time.Now()})
	if len(puts) != 0 {
		t.Fatalf("placed without workers: %v", puts)
	}
}

func TestScheduleRoundRobinByLoad(t *testing.T) {
	live := map[string]bool{}
	for i := 0; i < 4; i++ {
		live[fmt.Sprintf("w%d", i)] = true
	}
	fns := map[string]*FunctionMeta{}
	for i := 0; i < 5; i++ {
		f := fmt.Sprintf("t/n/f%d", i)
		fns[f] = fnMeta(f, 2)
	}
	l := loads(apply(schedInput{functions: fns, live: live, now: time.Now()}))
	var counts []int
	for _, c := range l {
		counts = append(counts, c)
	}
	sort.Ints(counts)
	if fmt.Sprint(counts) != "[2 2 3 3]" {
		t.Fatalf("10 instances on 4 workers: %v", l)
	}
}

func TestParseAssignmentKey(t *testing.T) {
	f, i, ok := parseAssignmentKey(assignmentKey("a/b/c", 12))
	if !ok || f != "a/b/c" || i != 12 {
		t.Fatal(f, i, ok)
	}
	for _, bad := range []string{"/functions/assignments/a/b/3", "/functions/assignments/a/b/c/x", "/other/a/b/c/1"} {
		if _, _, ok := parseAssignmentKey(bad); ok {
			t.Fatalf("%s parsed", bad)
		}
	}
}
