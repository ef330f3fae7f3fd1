package topics

import "math"

// sharedDispatcher serves Shared subscriptions: round-robin among the consumers with
// permits. Priority levels (SUBSCRIBE priority_level): a lower number is served first; the
// dispatcher picks, round-robin, among the consumers of the best level that can receive
// now, and a consumer of a worse level gets messages only while every better one is out of
// permits or at its unacknowledged limit.
type sharedDispatcher struct {
	holdsNothing
	s  *Subscription
	rr int
}

func (d *sharedDispatcher) kind() SubType                           { return Shared }
func (d *sharedDispatcher) admit(*Consumer, *KeySharedPolicy) error { return nil }
func (d *sharedDispatcher) permits() int                            { return d.s.permitsOfAll() }
func (d *sharedDispatcher) delays() bool                            { return true }
func (d *sharedDispatcher) releasesListed() bool                    { return true }

func (d *sharedDispatcher) route(Entry, EntryMeta, bool) (*Consumer, int, bool) {
	return d.pick(), -1, false
}

func (d *sharedDispatcher) routeNonPersistent(EntryMeta) *Consumer { return d.pick() }

// pick chooses the consumer for the next entry, or nil.
func (d *sharedDispatcher) pick() *Consumer {
	s := d.s
	n := len(s.consumers)
	best := int32(math.MaxInt32)
	found := false
	for _, cs := range s.consumers {
		if cs.priority <= best && s.canReceiveLocked(cs) {
			best, found = cs.priority, true
		}
	}
	if !found {
		return nil
	}
	for i := 0; i < n; i++ {
		cs := s.consumers[(d.rr+i)%n]
		if cs.priority == best && s.canReceiveLocked(cs) {
			d.rr = (d.rr + i + 1) % n
			return cs
		}
	}
	return nil
}
