package ledger

import (
	"errors"
	"fmt"
	"testing"

	"github.com/magnetar-io/magnetar/internal/config"
)

func rackedBookies(racks, perRack int) map[string]bookieInfo {
	m := map[string]bookieInfo{}
	for r := range racks {
		for i := range perRack {
			a := fmt.Sprintf("10.0.%d.%d:3181", r, i)
			m[a] = bookieInfo{Address: a, Rack: fmt.Sprintf("/rack-%d", r), Writable: true}
		}
	}
	return m
}

// Cases where a perfect spread exists (a cyclic rack sequence with every Qw consecutive
// positions distinct); the placement is best effort otherwise.
func TestRackAwarePlacementSpreadsWriteSets(t *testing.T) {
	for _, tc := range []struct{ racks, perRack, e, qw int }{{3, 2, 3, 3}, {3, 3, 6, 2}, {2, 4, 4, 2}, {5, 2, 5, 3}, {4, 3, 8, 4}, {4, 1, 4, 3}} {
		p := &placement{policy: config.PlacementRackAware, bookies: rackedBookies(tc.racks, tc.perRack)}
		for range 50 {
			ens, err := p.newEnsemble(tc.e, tc.qw, nil)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, a := range ens {
				if seen[a] {
					t.Fatalf("%+v: bookie %s twice in %v", tc, a, ens)
				}
				seen[a] = true
			}
			for e := range int64(tc.e) {
				racks := map[string]bool{}
				for _, pos := range writeSet(e, tc.e, tc.qw) {
					racks[p.bookies[ens[pos]].Rack] = true
				}
				if want := min(tc.qw, tc.racks); len(racks) != want {
					t.Fatalf("%+v: write set of entry %d spans %d racks, want %d: %v", tc, e, len(racks), want, ens)
				}
			}
			// A replacement keeps the write sets through its position on distinct racks.
			ex := map[string]bool{ens[0]: true}
			r, err := p.replacement(ens, 0, tc.qw, ex)
			if err != nil {
				if tc.racks*tc.perRack > tc.e {
					t.Fatal(err)
				}
				continue
			}
			ens[0] = r
			for e := range int64(tc.e) {
				racks := map[string]bool{}
				for _, pos := range writeSet(e, tc.e, tc.qw) {
					racks[p.bookies[ens[pos]].Rack] = true
				}
				if want := min(tc.qw, tc.racks); len(racks) != want && tc.perRack > 1 {
					t.Fatalf("%+v: after replacement, entry %d spans %d racks: %v", tc, e, len(racks), ens)
				}
			}
		}
	}
}

func TestPlacementSkipsReadOnlyAndExcluded(t *testing.T) {
	b := rackedBookies(1, 4)
	ro := "10.0.0.0:3181"
	b[ro] = bookieInfo{Address: ro, Writable: false}
	p := &placement{policy: config.PlacementRandom, bookies: b}
	for range 20 {
		ens, err := p.newEnsemble(3, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range ens {
			if a == ro {
				t.Fatal("read-only bookie placed")
			}
		}
	}
	if _, err := p.newEnsemble(3, 3, map[string]bool{"10.0.0.1:3181": true}); !errors.Is(err, ErrNotEnoughBookies) {
		t.Fatalf("2 usable bookies for E=3: %v", err)
	}
}
