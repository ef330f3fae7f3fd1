package topics

// One dispatcher per subscription type behind one interface. A subscription's loop
// (subscription.go:run) is the same for every type: it reads entries from the cursor,
// skips acknowledged and pending ones, holds delayed ones, hands out what the dispatcher
// routes, and rewinds for redelivery. What differs by type is the dispatcher's:
//
//   - activeDispatcher (dispatch_active.go): Exclusive and Failover, one active consumer
//     that gets everything in order, the others stand by;
//   - sharedDispatcher (dispatch_shared.go): Shared, round-robin among the consumers of the
//     best priority level that can receive;
//   - keySharedDispatcher (keyshared.go): Key_Shared, by the key's hash slot, holding back
//     what a key's consumer cannot take now, with later entries of the key.
//
// A subscription's type is its first consumer's: the dispatcher is replaced when a consumer
// of another type attaches to a subscription without consumers (newDispatcherLocked). Every
// method runs with the subscription's lock held.
type dispatcher interface {
	// kind is the subscription type served.
	kind() SubType
	// admit checks that cs may join (cs is not yet among s.consumers) and registers what the
	// type keeps per consumer.
	admit(cs *Consumer, ks *KeySharedPolicy) error
	// joined and left run after cs joined or left s.consumers.
	joined(cs *Consumer)
	left(cs *Consumer)
	// flowed runs when cs got permits.
	flowed(cs *Consumer)
	// permits is the number of messages the subscription may dispatch now: the permits of
	// the consumers that can receive.
	permits() int
	// route picks the consumer for an entry: cs to send it to now (slot is its Key_Shared
	// hash slot, -1 otherwise); or hold (kept back with the dispatcher, Key_Shared); or
	// neither (nobody may receive now: the caller stops and reads it again later). fresh
	// says the entry was just read from the cursor (not due from the delayed tracker).
	route(e Entry, m EntryMeta, fresh bool) (cs *Consumer, slot int, hold bool)
	// routeNonPersistent picks the consumer of a non-persistent message, or nil (dropped for
	// this subscription).
	routeNonPersistent(m EntryMeta) *Consumer
	// delays tells whether deliver-at times hold entries back (Shared and Key_Shared, as in
	// Pulsar; Exclusive and Failover deliver in order, at once).
	delays() bool
	// releasesListed tells whether a redelivery request that lists ids releases only those
	// (Shared, Key_Shared) rather than every pending entry (a rewind keeps the order).
	releasesListed() bool
	// held lists the entries the dispatcher holds back (nil for none), retryHeld hands out
	// those of them that may go now (entries are the held ones read again) and returns how
	// many it sent, holdFull tells whether new entries must not be read until some go out,
	// dropHeld forgets them (a rewind or reset re-reads them anyway), and stalled tells
	// whether a round that sent nothing should pause (Key_Shared: every entry was for a
	// consumer without permits).
	held() []Position
	retryHeld(entries []Entry) int
	holdFull() bool
	dropHeld()
	stalled(sent int) bool
}

// newDispatcherLocked makes the dispatcher of a subscription of type typ.
func (s *Subscription) newDispatcherLocked(typ SubType) dispatcher {
	switch typ {
	case Shared:
		return &sharedDispatcher{s: s}
	case KeyShared:
		return &keySharedDispatcher{s: s, halves: !s.t.s.cfg.SubscriptionKeySharedUseConsistentHashing}
	case Failover:
		return &activeDispatcher{s: s, failover: true}
	}
	return &activeDispatcher{s: s}
}

// holdsNothing is the dispatcher part for types that never hold entries back.
type holdsNothing struct{}

func (holdsNothing) held() []Position      { return nil }
func (holdsNothing) retryHeld([]Entry) int { return 0 }
func (holdsNothing) holdFull() bool        { return false }
func (holdsNothing) dropHeld()             {}
func (holdsNothing) stalled(int) bool      { return false }
func (holdsNothing) flowed(*Consumer)      {}
func (holdsNothing) joined(*Consumer)      {}
func (holdsNothing) left(*Consumer)        {}
func (holdsNothing) releasesListed() bool  { return false }
func (holdsNothing) delays() bool          { return false }

// permitsOfAll is the permits of every consumer that can receive (Shared, Key_Shared).
func (s *Subscription) permitsOfAll() int {
	n := 0
	for _, cs := range s.consumers {
		if s.canReceiveLocked(cs) {
			n += cs.permits
		}
	}
	return n
}
