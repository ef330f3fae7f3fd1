package topics

import (
	"fmt"
	"sort"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// activeDispatcher serves Exclusive and Failover subscriptions: one active consumer gets
// every entry in order. Exclusive admits one consumer; Failover admits many and picks the
// active one (pickActive), telling each consumer whether it is active.
type activeDispatcher struct {
	holdsNothing
	s        *Subscription
	failover bool
	active   *Consumer
}

func (d *activeDispatcher) kind() SubType {
	if d.failover {
		return Failover
	}
	return Exclusive
}

func (d *activeDispatcher) admit(cs *Consumer, _ *KeySharedPolicy) error {
	if !d.failover && len(d.s.consumers) > 0 {
		return fmt.Errorf("%w: exclusive subscription %s already has a consumer", wire.ErrConsumerBusy, d.s.name)
	}
	// A Failover consumer hears whether it is active at its first FLOW (notifyPending).
	cs.notifyPending = d.failover
	return nil
}

func (d *activeDispatcher) joined(cs *Consumer) { d.update(cs) }
func (d *activeDispatcher) left(*Consumer)      { d.update(nil) }

// flowed tells a Failover consumer at its first FLOW whether it is active: the Go client
// registers a consumer only after SUBSCRIBE's answer, so an earlier notice could be lost.
func (d *activeDispatcher) flowed(cs *Consumer) {
	if cs.notifyPending {
		cs.notifyPending = false
		if d.failover && !cs.removed {
			cs.client.ActiveChanged(cs == d.active)
		}
	}
}

// update recomputes the active consumer. The previous active consumer's unacknowledged
// entries move to the new one (order is kept by rewinding). Failover consumers hear of the
// change (ActiveChanged); added (if non-nil) and consumers not yet flowing are told at their
// first FLOW.
func (d *activeDispatcher) update(added *Consumer) {
	s := d.s
	next := d.pickActive()
	if next == d.active {
		return
	}
	if old := d.active; old != nil && !old.removed {
		s.releaseLocked(old, nil)
	}
	d.active = next
	s.poke()
	if d.failover {
		for _, cs := range s.consumers {
			if cs != added && !cs.notifyPending {
				cs.client.ActiveChanged(cs == next)
			}
		}
	}
}

// pickActive chooses the active consumer: for a partition of a Failover subscription, sort
// by (priority, name) and take index partition % n (so consumers spread over partitions);
// otherwise the first connected consumer of the best priority.
func (d *activeDispatcher) pickActive() *Consumer {
	s := d.s
	if len(s.consumers) == 0 {
		return nil
	}
	if p := s.t.name.Partition; p >= 0 && d.failover {
		sorted := append([]*Consumer(nil), s.consumers...)
		sort.SliceStable(sorted, func(i, j int) bool {
			if sorted[i].priority != sorted[j].priority {
				return sorted[i].priority < sorted[j].priority
			}
			return sorted[i].name < sorted[j].name
		})
		best := 0
		for best < len(sorted) && sorted[best].priority == sorted[0].priority {
			best++
		}
		return sorted[p%best]
	}
	first := s.consumers[0]
	for _, cs := range s.consumers[1:] {
		if cs.priority < first.priority {
			first = cs
		}
	}
	return first
}

func (d *activeDispatcher) permits() int {
	if d.active != nil && d.s.canSendLocked(d.active) {
		return d.active.permits
	}
	return 0
}

func (d *activeDispatcher) route(Entry, EntryMeta, bool) (*Consumer, int, bool) {
	if d.active != nil && d.s.canSendLocked(d.active) {
		return d.active, -1, false
	}
	return nil, -1, false
}

func (d *activeDispatcher) routeNonPersistent(EntryMeta) *Consumer {
	cs, _, _ := d.route(Entry{}, EntryMeta{}, true)
	return cs
}
