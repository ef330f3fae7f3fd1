package functions

import (
	"slices"
	"sort"
	"time"
)

// schedInput is what the leader decides assignments from.
type schedInput struct {
	functions  map[string]*FunctionMeta // by FQFN
	current    map[string]Assignment    // by assignment key
	live       map[string]bool          // workers registered now
	goneSince  map[string]time.Time     // workers that hold assignments but are not registered
	now        time.Time
	reschedule time.Duration
}

// schedule computes the assignment table: every instance of every function on one worker.
// It is a pure function of its input, so the leader can rerun it on any change and a new
// leader converges on the same table.
//
//   - An instance stays where it is while its worker is registered, and while it has been
//     gone for less than the reschedule timeout (a restart of the worker keeps its instances).
//   - New instances, and those of workers gone longer, go to the least loaded worker (load =
//     instances assigned; ties by worker id), which spreads them round-robin.
//   - Then the table is rebalanced: while the most loaded worker has two or more instances
//     more than the least loaded one, one instance moves. A worker that joins therefore takes
//     its share, and a balanced table never moves anything.
func schedule(in schedInput) (puts map[string]Assignment, deletes []string) {
	desired := map[string]Assignment{}
	load := map[string][]string{} // worker -> keys
	for w := range in.live {
		load[w] = nil
	}
	var unplaced []string
	fqfns := make([]string, 0, len(in.functions))
	for f := range in.functions {
		fqfns = append(fqfns, f)
	}
	sort.Strings(fqfns)
	for _, f := range fqfns {
		m := in.functions[f]
		for i := 0; i < m.Config.Parallelism; i++ {
			key := assignmentKey(f, i)
			a := Assignment{Version: m.Version, Epoch: m.restartEpoch(i), Stopped: m.stopped(i)}
			cur, ok := in.current[key]
			switch {
			case ok && in.live[cur.WorkerID]:
				a.WorkerID = cur.WorkerID
				load[cur.WorkerID] = append(load[cur.WorkerID], key)
			case ok && len(in.live) == 0, ok && in.now.Sub(in.goneSince[cur.WorkerID]) < in.reschedule:
				a.WorkerID = cur.WorkerID // waiting for its worker to come back
			default:
				unplaced = append(unplaced, key)
			}
			desired[key] = a
		}
	}
	workers := make([]string, 0, len(load))
	for w := range load {
		workers = append(workers, w)
	}
	sort.Strings(workers)
	least := func() string {
		best := ""
		for _, w := range workers {
			if best == "" || len(load[w]) < len(load[best]) {
				best = w
			}
		}
		return best
	}
	for _, key := range unplaced {
		w := least()
		if w == "" {
			delete(desired, key) // no worker at all: nothing to run it on yet
			continue
		}
		a := desired[key]
		a.WorkerID = w
		desired[key] = a
		load[w] = append(load[w], key)
	}
	for len(workers) > 1 {
		most := workers[0]
		for _, w := range workers {
			if len(load[w]) > len(load[most]) {
				most = w
			}
		}
		to := least()
		if len(load[most])-len(load[to]) < 2 {
			break
		}
		keys := load[most]
		slices.Sort(keys)
		key := keys[len(keys)-1]
		load[most] = keys[:len(keys)-1]
		load[to] = append(load[to], key)
		a := desired[key]
		a.WorkerID = to
		desired[key] = a
	}
	puts = map[string]Assignment{}
	for key, a := range desired {
		if cur, ok := in.current[key]; !ok || cur != a {
			puts[key] = a
		}
	}
	for key := range in.current {
		if _, ok := desired[key]; !ok {
			deletes = append(deletes, key)
		}
	}
	sort.Strings(deletes)
	return puts, deletes
}
