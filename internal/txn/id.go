package txn

import (
	"fmt"
	"strconv"
	"strings"
)

// ID is a transaction id, Pulsar's TxnID: Most is the coordinator that opened it (the
// partition of the assign topic), Least its sequence number there.
type ID struct{ Most, Least uint64 }

// String is Pulsar's text form, "(most,least)" (the txnId field of the admin API).
func (id ID) String() string {
	return "(" + strconv.FormatUint(id.Most, 10) + "," + strconv.FormatUint(id.Least, 10) + ")"
}

// ParseID reads the text form of String.
func ParseID(s string) (ID, error) {
	in, ok := strings.CutPrefix(s, "(")
	if in, ok = strings.CutSuffix(in, ")"); !ok {
		return ID{}, fmt.Errorf("txn: %q is not a transaction id (most,least)", s)
	}
	m, l, ok := strings.Cut(in, ",")
	if !ok {
		return ID{}, fmt.Errorf("txn: %q is not a transaction id (most,least)", s)
	}
	most, err := strconv.ParseUint(m, 10, 64)
	if err != nil {
		return ID{}, fmt.Errorf("txn: %q: %w", s, err)
	}
	least, err := strconv.ParseUint(l, 10, 64)
	if err != nil {
		return ID{}, fmt.Errorf("txn: %q: %w", s, err)
	}
	return ID{most, least}, nil
}

// Action ends a transaction: Pulsar's TxnAction (COMMIT 0, ABORT 1).
type Action int

// Actions.
const (
	Commit Action = 0
	Abort  Action = 1
)

func (a Action) String() string {
	switch a {
	case Commit:
		return "COMMIT"
	case Abort:
		return "ABORT"
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// Status is where a transaction is in its life, Pulsar's TxnStatus.
type Status int

// Statuses. A transaction goes OPEN -> COMMITTING -> COMMITTED or OPEN -> ABORTING ->
// ABORTED; the coordinator logs each step.
const (
	Open Status = iota
	Committing
	Committed
	Aborting
	Aborted
)

func (s Status) String() string {
	switch s {
	case Open:
		return "OPEN"
	case Committing:
		return "COMMITTING"
	case Committed:
		return "COMMITTED"
	case Aborting:
		return "ABORTING"
	case Aborted:
		return "ABORTED"
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// ending is the in-progress status that action leads to; final the one it ends in.
func (a Action) ending() Status {
	if a == Commit {
		return Committing
	}
	return Aborting
}

func (a Action) final() Status {
	if a == Commit {
		return Committed
	}
	return Aborted
}

// Subscription names a subscription a transaction acknowledges on.
type Subscription struct {
	Topic, Name string
}
