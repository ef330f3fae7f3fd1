package topics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// Looking at stored messages without consuming them (pulsar-admin topics peek-messages,
// examine-message, get-message-by-id, get-message-id, stats-internal).

// peekReadBytes bounds one read of a peek or examine.
const peekReadBytes = 64 << 20

// Peek returns the k-th (from 1) unacknowledged entry of sub.
func (s *Service) Peek(ctx context.Context, name Name, sub string, k int) (Entry, error) {
	t, c, err := s.durableCursor(ctx, name, sub)
	if errors.Is(err, wire.ErrSubscriptionNotFound) {
		// As Pulsar's getSubscriptionReference: peeking a subscription that does not exist
		// creates it at the earliest message.
		if cerr := s.CreateSubscription(ctx, name, sub, Earliest); cerr != nil && !errors.Is(cerr, ErrSubscriptionExists) {
			return Entry{}, cerr
		}
		t, c, err = s.durableCursor(ctx, name, sub)
	}
	if err != nil {
		return Entry{}, err
	}
	r, err := t.log.ml.NewNonDurableCursor(c.MarkDeletePosition(), false)
	if err != nil {
		return Entry{}, mlErr(err)
	}
	defer func() { _ = r.Close(ctx) }()
	for seen := 0; ; {
		if !r.HasMoreEntries() {
			return Entry{}, fmt.Errorf("%w: no message at position %d of %s", ErrMessageNotFound, k, sub)
		}
		es, err := r.ReadEntries(ctx, min(k-seen, 100), peekReadBytes)
		if err != nil {
			return Entry{}, mlErr(err)
		}
		for _, e := range es {
			// What a consumer is never given is not peeked either (PIP-353's defaults:
			// no markers, no aborted or uncommitted transactions; the read limit keeps
			// the uncommitted out).
			if c.IsAcknowledged(e.Position) || t.txnHidden(metaOf(e)) {
				continue
			}
			if seen++; seen == k {
				return e, nil
			}
		}
	}
}

// ExamineMessage returns the pos-th (from 1) stored entry counted from the oldest, or from
// the newest if latest. A reader from the oldest stored entry skips to it (Skip jumps by
// counting, it does not read what it skips).
func (s *Service) ExamineMessage(ctx context.Context, name Name, latest bool, pos int64) (Entry, error) {
	t, err := s.subscriptionTopic(ctx, name, "", false)
	if err != nil {
		return Entry{}, err
	}
	n := t.log.ml.NumberOfEntries()
	if pos < 1 || pos > n {
		return Entry{}, fmt.Errorf("%w: message position %d of %s (%d stored)", ErrMessageNotFound, pos, t.full, n)
	}
	skip := pos - 1
	if latest {
		skip = n - pos
	}
	r, err := t.log.ml.NewNonDurableCursor(managedledger.Earliest, false)
	if err != nil {
		return Entry{}, mlErr(err)
	}
	defer func() { _ = r.Close(ctx) }()
	if !t.txnUsed() {
		if err := r.Skip(skip); err != nil {
			return Entry{}, mlErr(err)
		}
		es, err := r.ReadEntries(ctx, 1, peekReadBytes)
		if err != nil {
			return Entry{}, mlErr(err)
		}
		if len(es) == 0 {
			return Entry{}, fmt.Errorf("%w: message position %d of %s", ErrMessageNotFound, pos, t.full)
		}
		return es[0], nil
	}
	// With transactions the entry counted to may be one no consumer is given (a marker,
	// an aborted or still open transaction's): the nearest deliverable one in the counting
	// direction is examined, looking at most maxLastMessageScan entries back from the
	// newest end.
	from := skip
	if latest {
		from = max(skip-maxLastMessageScan, 0)
	}
	if err := r.Skip(from); err != nil {
		return Entry{}, mlErr(err)
	}
	var found *Entry
	at := from // the index of the next entry read
	done := func() bool { return latest && at > skip || !latest && found != nil }
	for !done() {
		es, err := r.ReadEntries(ctx, 100, peekReadBytes)
		if err != nil {
			return Entry{}, mlErr(err)
		}
		if len(es) == 0 {
			break
		}
		for i := 0; i < len(es) && !done(); i++ {
			if at++; !t.txnHidden(metaOf(es[i])) {
				found = &es[i]
			}
		}
	}
	if found == nil {
		return Entry{}, fmt.Errorf("%w: message position %d of %s", ErrMessageNotFound, pos, t.full)
	}
	return *found, nil
}

// Message returns the stored entry at p.
func (s *Service) Message(ctx context.Context, name Name, p Position) (Entry, error) {
	// Reading a message is consuming it (Pulsar's PEEK_MESSAGES), not looking the topic up.
	// p can only name an entry of this topic's own log (readAt reads through its cursor),
	// so a ledger id of another tenant's topic reads nothing (CVE-2021-41571).
	if err := s.authorize(ctx, ActionConsume, name); err != nil {
		return Entry{}, err
	}
	t, err := s.Topic(ctx, name, Load{})
	if err != nil {
		return Entry{}, err
	}
	if t.log == nil {
		return Entry{}, fmt.Errorf("%w: %s is not a persistent topic", wire.ErrNotAllowed, name)
	}
	e, err := t.log.readAt(ctx, p)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: message %s of %s: %w", ErrMessageNotFound, p, name, err)
	}
	return e, nil
}

// MessageIDAt is the position of the first message published at or after at (the
// position after the last message if there is none).
func (s *Service) MessageIDAt(ctx context.Context, name Name, at time.Time) (Position, error) {
	t, err := s.subscriptionTopic(ctx, name, "", false)
	if err != nil {
		return Position{}, err
	}
	p, err := t.log.ml.FindByPublishTime(ctx, at, entryPublishTime)
	return p, mlErr(err)
}

// InternalStats is Pulsar's PersistentTopicInternalStats JSON value of a persistent topic.
func (s *Service) InternalStats(ctx context.Context, name Name) (any, error) {
	if !name.Persistent() {
		return nil, fmt.Errorf("%w: %s is not a persistent topic", wire.ErrNotAllowed, name)
	}
	t, err := s.Topic(ctx, name, Load{}) // stats: a lookup (Pulsar's GET_STATS)
	if err != nil {
		return nil, err
	}
	st := t.log.ml.InternalStats()
	if st.Ledgers == nil {
		st.Ledgers = []managedledger.LedgerStats{}
	}
	out := internalStats{InternalStats: st, CompactedLedger: CompactedLedgerStats{LedgerID: -1, Entries: -1, Size: -1}}
	if v, err := t.compactedView(ctx); err == nil && v != nil {
		out.CompactedLedger = CompactedLedgerStats{LedgerID: v.r.ID(), Entries: int64(len(v.positions)), Size: v.size}
	}
	return out, nil
}

// internalStats is Pulsar's PersistentTopicInternalStats: the managed ledger's plus the
// compacted ledger.
type internalStats struct {
	managedledger.InternalStats
	CompactedLedger CompactedLedgerStats `json:"compactedLedger"`
}

// CompactedLedgerStats describes the compacted ledger (Pulsar's LedgerInfo; -1 without one).
type CompactedLedgerStats struct {
	LedgerID        int64 `json:"ledgerId"`
	Entries         int64 `json:"entries"`
	Size            int64 `json:"size"`
	Offloaded       bool  `json:"offloaded"`
	UnderReplicated bool  `json:"underReplicated"`
}
