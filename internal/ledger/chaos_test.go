package ledger

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
)

// chaosRounds is how many randomized rounds TestChaosRecovery runs: defaultChaosRounds (12,
// or 500 with -tags soak), or LEDGER_CHAOS_ROUNDS. LEDGER_CHAOS_SEED runs one given round.
func chaosRounds() int {
	if n, err := strconv.Atoi(os.Getenv("LEDGER_CHAOS_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return defaultChaosRounds
}

// TestChaosRecovery: a writer appends while bookies of its ensemble die or stall at random,
// then another client recovers the ledger at a random moment. Whatever happened, every
// acknowledged entry is in the closed ledger with its data, nothing acknowledged lies past
// its end, and the writer only ever failed with ErrFenced or ErrNotEnoughBookies.
func TestChaosRecovery(t *testing.T) {
	if seed, err := strconv.ParseUint(os.Getenv("LEDGER_CHAOS_SEED"), 10, 64); err == nil {
		chaosRound(t, seed) // replay a failed round: its name is seed<N>
		return
	}
	for round := range chaosRounds() {
		seed := uint64(time.Now().UnixNano()) + uint64(round)
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { chaosRound(t, seed) })
	}
}

func chaosRound(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	shapes := [][3]int{{3, 3, 2}, {5, 3, 2}, {3, 2, 2}, {4, 3, 3}}
	shape := shapes[rng.IntN(len(shapes))]
	fc := newFakeCluster(t)
	addrs := fc.addBookies(shape[0] + 3)
	short := func(cfg *config.LedgerClientConfig) {
		cfg.AddEntryTimeout = 300 * time.Millisecond
		cfg.ReadEntryTimeout = 500 * time.Millisecond
	}
	c1 := newTestClient(t, fc.store, fc.client(), short)
	c2 := newTestClient(t, fc.store, fc.client(), short)
	ctx := testCtx(t)
	w, err := c1.Create(ctx, CreateOptions{EnsembleSize: shape[0], WriteQuorum: shape[1], AckQuorum: shape[2], Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	var log ackLog
	n := int64(100 + rng.IntN(300))
	faults, killed := 0, false
	for i := range n {
		log.append(w, entryData(i))
		if rng.IntN(60) == 0 && faults < 2 {
			// Fault one bookie of the current ensemble, at most two per round (three spares
			// exist). At most one is a kill: without the auditor, a second kill may take
			// the last copies of entries acknowledged with Qa=2, which is loss by design.
			faults++
			ens := mustMeta(t, fc.store, w.ID()).Fragments
			victim := ens[len(ens)-1].Ensemble[rng.IntN(shape[0])]
			if fc.bookie(victim).down {
				continue
			}
			if !killed && rng.IntN(2) == 0 {
				killed = true
				fc.kill(victim)
			} else {
				fc.bookie(victim).holdAdds() // stalls until its adds time out
			}
		}
		if rng.IntN(100) == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	// Recover either while adds are in flight or after they settled.
	if rng.IntN(2) == 0 {
		log.wait(t)
	}
	r, err := c2.Open(ctx, w.ID(), OpenOptions{Recovery: true, Password: testPassword})
	if err != nil {
		t.Fatalf("recovery (shape %v, faults %d): %v", shape, faults, err)
	}
	log.wait(t)
	for _, a := range addrs {
		fc.bookie(a).releaseAdds()
	}
	last := r.LastAddConfirmed()
	for _, err := range log.errs {
		if !errors.Is(err, ErrFenced) && !errors.Is(err, ErrNotEnoughBookies) {
			t.Fatalf("writer failed with %v", err)
		}
	}
	if len(log.acked) > 0 && slices.Max(log.acked) > last {
		t.Fatalf("entry %d acknowledged but the recovered ledger ends at %d", slices.Max(log.acked), last)
	}
	if len(log.acked) > 0 && !slices.IsSorted(log.acked) {
		t.Fatal("acknowledgements out of order")
	}
	checkReadsBack(t, c2, w.ID(), last)
}
