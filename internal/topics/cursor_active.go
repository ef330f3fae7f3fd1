package topics

// A subscription marks its cursor active while it has consumers, so the managed ledger
// caches new entries for it, and inactive when the last consumer leaves, so a subscription
// nobody reads does not fill the broker's cache (managedledger/cursor_active.go).

// setActive tells the managed ledger whether a consumer reads through the cursor.
func (c *logCursor) setActive(active bool) {
	if active {
		c.c.SetActive()
	} else {
		c.c.SetInactive()
	}
}

// setCursorActive tells the cursor, if there is one, whether a consumer is attached.
func (s *Subscription) setCursorActive(active bool) {
	if s.cursor != nil {
		s.cursor.setActive(active)
	}
}
