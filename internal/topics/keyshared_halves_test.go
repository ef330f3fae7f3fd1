package topics

import "testing"

// TestKeySharedHalvingRanges: with subscriptionKeySharedUseConsistentHashing=false (the Go
// client's CI config) AUTO_SPLIT halves ranges as Pulsar's HashRangeAutoSplit selector does,
// so pulsar-client-go's TestConsumerKeyShared sees its three keys split 2 and 1 over two
// consumers on every run (with the ring, about a quarter of runs sent all to one).
func TestKeySharedHalvingRanges(t *testing.T) {
	s := &Subscription{name: "sub-1"}
	d := &keySharedDispatcher{s: s, halves: true}
	s.d = d
	add := func(name string) *Consumer {
		t.Helper()
		cs := &Consumer{name: name}
		if err := d.admit(cs, nil); err != nil {
			t.Fatal(err)
		}
		s.consumers = append(s.consumers, cs)
		return cs
	}
	remove := func(cs *Consumer) {
		for i, c := range s.consumers {
			if c == cs {
				s.consumers = append(s.consumers[:i], s.consumers[i+1:]...)
			}
		}
		d.left(cs)
	}
	want := func(what string, slots map[int]*Consumer) {
		t.Helper()
		for slot, cs := range slots {
			if got := d.consumerOf(slot); got != cs {
				t.Errorf("%s: slot %d at %v, want %v", what, slot, got, cs)
			}
		}
	}
	c1 := add("c1")
	want("one consumer", map[int]*Consumer{0: c1, 32768: c1, keySlots - 1: c1})
	c2 := add("c2")
	want("two consumers", map[int]*Consumer{0: c2, 32768: c2, 32769: c1, keySlots - 1: c1})
	per := map[*Consumer]int{}
	for i := range 3 {
		per[d.consumerOf(keyHashSlot("key-shared-"+string(rune('0'+i))))]++
	}
	if per[c1] != 1 || per[c2] != 2 {
		t.Errorf("TestConsumerKeyShared's keys: %d at the first consumer, %d at the second; want 1 and 2", per[c1], per[c2])
	}
	// A third halves the first of the two equal ranges.
	c3 := add("c3")
	want("three consumers", map[int]*Consumer{0: c3, 16384: c3, 16385: c2, 32768: c2, 32769: c1})
	// The last range's consumer leaves: the one below takes its range up to the end.
	remove(c1)
	want("c1 left", map[int]*Consumer{0: c3, 16385: c2, keySlots - 1: c2})
	// A middle one leaves: the next one up takes its slots.
	remove(c3)
	want("c3 left", map[int]*Consumer{0: c2, keySlots - 1: c2})
	remove(c2)
	if got := d.consumerOf(5); got != nil {
		t.Errorf("no consumers: slot 5 at %v", got)
	}
}
