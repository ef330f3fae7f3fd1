package storage

import (
	"bytes"
	"context"
	"fmt"
	"sync"
)

// Memory is the in-memory twin of the disk storage, for unit tests of the layers above.
// It keeps the same rules (master key, fencing, deletion, LAC) and passes the same
// conformance suite, but nothing survives the process. done is called before AddEntry
// returns. SetReadOnly lets tests of the server exercise the read-only path.
type Memory struct {
	mu       sync.Mutex
	ledgers  map[int64]*memLedger
	closed   bool
	readOnly bool
}

type memLedger struct {
	masterKey []byte
	fenced    bool
	deleted   bool
	lac       int64
	lacCh     chan struct{} // closed and replaced when lac grows; nil until someone waits
	entries   map[int64][]byte
}

// NewMemory returns an empty in-memory storage.
func NewMemory() *Memory { return &Memory{ledgers: map[int64]*memLedger{}} }

var _ Storage = (*Memory)(nil)

// SetReadOnly switches the read-only state (tests of the server's read-only handling).
func (m *Memory) SetReadOnly(ro bool) {
	m.mu.Lock()
	m.readOnly = ro
	m.mu.Unlock()
}

// AddEntry implements Storage.
func (m *Memory) AddEntry(ledgerID, entryID int64, masterKey []byte, lac int64, payload []byte, recovery bool, done func(error)) {
	done(m.add(ledgerID, entryID, masterKey, lac, payload, recovery))
}

func (m *Memory) add(ledgerID, entryID int64, masterKey []byte, lac int64, payload []byte, recovery bool) error {
	if err := checkIDs(ledgerID, entryID); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if m.readOnly {
		return ErrReadOnly
	}
	l, err := m.admit(ledgerID, masterKey)
	if err != nil {
		return err
	}
	if l.fenced && !recovery {
		return ErrFenced
	}
	l.entries[entryID] = bytes.Clone(payload)
	if lac > l.lac {
		l.lac = lac
		if l.lacCh != nil {
			close(l.lacCh)
			l.lacCh = nil
		}
	}
	return nil
}

// admit finds or creates the ledger and checks the master key. Caller holds m.mu.
func (m *Memory) admit(ledgerID int64, masterKey []byte) (*memLedger, error) {
	l := m.ledgers[ledgerID]
	if l == nil {
		l = &memLedger{masterKey: bytes.Clone(masterKey), lac: -1, entries: map[int64][]byte{}}
		m.ledgers[ledgerID] = l
		return l, nil
	}
	if l.deleted {
		return nil, fmt.Errorf("%w: ledger %d was deleted", ErrFenced, ledgerID)
	}
	if !bytes.Equal(l.masterKey, masterKey) {
		return nil, ErrUnauthorized
	}
	return l, nil
}

// ReadEntry implements Storage.
func (m *Memory) ReadEntry(ledgerID, entryID int64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	l := m.ledgers[ledgerID]
	if l == nil || l.deleted {
		return nil, ErrNoSuchLedger
	}
	p, ok := l.entries[entryID]
	if !ok {
		return nil, ErrNoSuchEntry
	}
	return bytes.Clone(p), nil
}

// LAC implements Storage.
func (m *Memory) LAC(ledgerID int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return -1, ErrClosed
	}
	l := m.ledgers[ledgerID]
	if l == nil || l.deleted {
		return -1, ErrNoSuchLedger
	}
	return l.lac, nil
}

// WaitLAC implements Storage.
func (m *Memory) WaitLAC(ctx context.Context, ledgerID, previous int64) (int64, error) {
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return -1, ErrClosed
		}
		l := m.ledgers[ledgerID]
		if l == nil || l.deleted {
			m.mu.Unlock()
			return -1, ErrNoSuchLedger
		}
		lac := l.lac
		if lac > previous {
			m.mu.Unlock()
			return lac, nil
		}
		if l.lacCh == nil {
			l.lacCh = make(chan struct{})
		}
		ch := l.lacCh
		m.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return lac, nil
		}
	}
}

// Fence implements Storage.
func (m *Memory) Fence(ledgerID int64, masterKey []byte) (int64, error) {
	if ledgerID < 0 {
		return -1, fmt.Errorf("storage: negative ledger id %d", ledgerID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return -1, ErrClosed
	}
	l, err := m.admit(ledgerID, masterKey)
	if err != nil {
		return -1, err
	}
	l.fenced = true
	return l.lac, nil
}

// DeleteLedger implements Storage.
func (m *Memory) DeleteLedger(ledgerID int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	l := m.ledgers[ledgerID]
	if l == nil {
		l = &memLedger{lac: -1}
		m.ledgers[ledgerID] = l
	}
	l.deleted, l.entries = true, nil
	if l.lacCh != nil {
		close(l.lacCh)
		l.lacCh = nil
	}
	return nil
}

// ReadOnly implements Storage.
func (m *Memory) ReadOnly() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.readOnly
}

// Close implements Storage.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	for _, l := range m.ledgers {
		if l.lacCh != nil {
			close(l.lacCh)
			l.lacCh = nil
		}
	}
	return nil
}

// checkIDs rejects ids the protocol never produces; negative ids would also break the
// index's key order.
func checkIDs(ledgerID, entryID int64) error {
	if ledgerID < 0 || entryID < 0 {
		return fmt.Errorf("storage: negative ledger or entry id (%d, %d)", ledgerID, entryID)
	}
	return nil
}
