package broker

// cacheActivity is implemented by cursors whose log keeps an entry cache (the managed
// ledger's): a subscription marks its cursor active while it has consumers, so the log
// caches new entries for it, and inactive when the last consumer leaves, so a subscription
// nobody reads does not fill the broker's cache (managedledger/cursor_active.go). Cursors
// without a cache (the in-memory twin) need not implement it.
type cacheActivity interface {
	setActive(active bool)
}

func (c mlCursor) setActive(active bool) {
	if active {
		c.c.SetActive()
	} else {
		c.c.SetInactive()
	}
}

// setCursorActive tells the cursor, if it cares, whether a consumer is attached.
func (s *subscription) setCursorActive(active bool) {
	if a, ok := s.cursor.(cacheActivity); ok {
		a.setActive(active)
	}
}
