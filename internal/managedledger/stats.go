package managedledger

import (
	"time"
)

// InternalStats has the shape of Pulsar's PersistentTopicInternalStats (managed-ledger part),
// so `pulsar-admin topics stats-internal` users see familiar fields.
type InternalStats struct {
	EntriesAddedCounter                int64                  `json:"entriesAddedCounter"`
	NumberOfEntries                    int64                  `json:"numberOfEntries"`
	TotalSize                          int64                  `json:"totalSize"`
	CurrentLedgerEntries               int64                  `json:"currentLedgerEntries"`
	CurrentLedgerSize                  int64                  `json:"currentLedgerSize"`
	LastLedgerCreatedTimestamp         string                 `json:"lastLedgerCreatedTimestamp"`
	LastLedgerCreationFailureTimestamp string                 `json:"lastLedgerCreationFailureTimestamp,omitempty"`
	WaitingCursorsCount                int                    `json:"waitingCursorsCount"`
	PendingAddEntriesCount             int                    `json:"pendingAddEntriesCount"`
	LastConfirmedEntry                 string                 `json:"lastConfirmedEntry"`
	State                              string                 `json:"state"`
	Ledgers                            []LedgerStats          `json:"ledgers"`
	Cursors                            map[string]CursorStats `json:"cursors"`
}

// LedgerStats describes one ledger of the list.
type LedgerStats struct {
	LedgerID  int64 `json:"ledgerId"`
	Entries   int64 `json:"entries"`
	Size      int64 `json:"size"`
	Offloaded bool  `json:"offloaded"`
	Timestamp int64 `json:"timestamp"`
}

// CursorStats describes one cursor (Pulsar's CursorStats).
type CursorStats struct {
	MarkDeletePosition                       string `json:"markDeletePosition"`
	ReadPosition                             string `json:"readPosition"`
	WaitingReadOp                            bool   `json:"waitingReadOp"`
	PendingReadOps                           int    `json:"pendingReadOps"`
	MessagesConsumedCounter                  int64  `json:"messagesConsumedCounter"`
	CursorLedger                             int64  `json:"cursorLedger"`
	CursorLedgerLastEntry                    int64  `json:"cursorLedgerLastEntry"`
	IndividuallyDeletedMessages              string `json:"individuallyDeletedMessages"`
	LastLedgerSwitchTimestamp                string `json:"lastLedgerSwitchTimestamp"`
	State                                    string `json:"state"`
	Active                                   bool   `json:"active"`
	NumberOfEntriesSinceFirstNotAckedMessage int64  `json:"numberOfEntriesSinceFirstNotAckedMessage"`
	TotalNonContiguousDeletedMessagesRange   int    `json:"totalNonContiguousDeletedMessagesRange"`
	Backlog                                  int64  `json:"messageBacklog"`
	Durable                                  bool   `json:"durable"`
}

// Stats is the cheap summary the broker samples for metrics.
type Stats struct {
	EntriesAdded    int64
	AddErrors       int64
	ReadErrors      int64
	NumberOfEntries int64
	TotalSize       int64
	PendingAdds     int
	Ledgers         int
	Cursors         int
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// Stats returns counters for metrics.
func (ml *ManagedLedger) Stats() Stats {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return Stats{
		EntriesAdded:    ml.entriesAdded,
		AddErrors:       ml.addErrors,
		ReadErrors:      ml.readErrors.Load(),
		NumberOfEntries: ml.numberOfEntries,
		TotalSize:       ml.totalSize,
		PendingAdds:     len(ml.add.pending),
		Ledgers:         len(ml.ledgers),
		Cursors:         len(ml.cur.cursors),
	}
}

func (ml *ManagedLedger) stateNameLocked() string {
	switch {
	case ml.state == stateFenced:
		return "Fenced"
	case ml.state == stateDeleted:
		return "Deleted"
	case ml.state == stateClosed || ml.closing:
		return "Closed"
	case ml.terminated:
		return "Terminated"
	case ml.add.writer == nil:
		return "LedgerClosed"
	case ml.add.rolling:
		return "ClosingLedger"
	}
	return "LedgerOpened"
}

// InternalStats returns the detailed state for admin (topics stats-internal).
func (ml *ManagedLedger) InternalStats() InternalStats {
	ml.mu.Lock()
	s := InternalStats{
		EntriesAddedCounter:                ml.entriesAdded,
		NumberOfEntries:                    ml.numberOfEntries,
		TotalSize:                          ml.totalSize,
		LastLedgerCreatedTimestamp:         formatTime(ml.lastCreated),
		LastLedgerCreationFailureTimestamp: formatTime(ml.lastCreateFail),
		PendingAddEntriesCount:             len(ml.add.pending),
		LastConfirmedEntry:                 ml.lastConfirmedLocked().String(),
		State:                              ml.stateNameLocked(),
		Cursors:                            map[string]CursorStats{},
	}
	if n := len(ml.ledgers); n > 0 && ml.add.writer != nil {
		s.CurrentLedgerEntries = ml.ledgers[n-1].Entries
		s.CurrentLedgerSize = ml.ledgers[n-1].Size
	}
	for _, l := range ml.ledgers {
		s.Ledgers = append(s.Ledgers, LedgerStats{LedgerID: l.LedgerID, Entries: l.Entries, Size: l.Size, Timestamp: l.Timestamp,
			Offloaded: l.Offload != nil && l.Offload.Complete})
	}
	cursors := ml.cur.list(true)
	ml.mu.Unlock()
	for _, c := range cursors {
		cs := c.stats()
		if cs.WaitingReadOp {
			s.WaitingCursorsCount++
		}
		s.Cursors[c.name] = cs
	}
	return s
}

func (c *Cursor) stats() CursorStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	ledgerID, entries, created := c.statLedgerID, c.statLedgerEntries, c.statLedgerCreated
	backlog, _ := c.backlogLocked()
	ml := c.ml
	ml.mu.Lock()
	readPos := ml.normalizeLocked(maxPos(c.readPos, ml.nextLocked(c.markDelete)))
	sinceFirst := ml.countLocked(c.markDelete, ml.lastConfirmedLocked())
	ml.mu.Unlock()
	state := "Open"
	if c.closed {
		state = "Closed"
	}
	return CursorStats{
		MarkDeletePosition:                       c.markDelete.String(),
		ReadPosition:                             readPos.String(),
		WaitingReadOp:                            c.waiting.Load() > 0,
		MessagesConsumedCounter:                  c.consumed,
		CursorLedger:                             ledgerID,
		CursorLedgerLastEntry:                    entries - 1,
		IndividuallyDeletedMessages:              c.acked.String(),
		LastLedgerSwitchTimestamp:                formatTime(created),
		State:                                    state,
		Active:                                   c.counted,
		NumberOfEntriesSinceFirstNotAckedMessage: sinceFirst,
		TotalNonContiguousDeletedMessagesRange:   c.acked.Len(),
		Backlog:                                  backlog,
		Durable:                                  c.durable,
	}
}
