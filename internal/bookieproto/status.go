package bookieproto

import (
	"errors"
	"fmt"
)

// Status is a response's result code on the wire.
type Status uint16

// Status codes. Values are part of the wire format: never renumber, only append.
const (
	StatusOK           Status = 0
	StatusNoSuchEntry  Status = 1
	StatusNoSuchLedger Status = 2
	StatusFenced       Status = 3
	StatusUnauthorized Status = 4
	StatusReadOnly     Status = 5
	StatusCorrupt      Status = 6
	StatusTooBusy      Status = 7
	StatusBadRequest   Status = 8
	StatusServerError  Status = 9
)

// statusTable is the one mapping between status codes and error sentinels, used in both
// directions: the server turns an error into a code (StatusOf), the client turns a code back
// into the sentinel (Status.Err). Retriable says whether the same request may succeed if sent
// again (to this bookie later or to another one).
var statusTable = []struct {
	status    Status
	name      string // metric label
	err       error
	retriable bool
}{
	{StatusNoSuchEntry, "NO_SUCH_ENTRY", ErrNoSuchEntry, false},
	{StatusNoSuchLedger, "NO_SUCH_LEDGER", ErrNoSuchLedger, false},
	{StatusFenced, "FENCED", ErrFenced, false},
	{StatusUnauthorized, "UNAUTHORIZED", ErrUnauthorized, false},
	{StatusReadOnly, "READ_ONLY", ErrReadOnly, true},
	{StatusCorrupt, "CORRUPT", ErrCorrupt, false},
	{StatusTooBusy, "TOO_BUSY", ErrTooBusy, true},
	{StatusBadRequest, "BAD_REQUEST", ErrBadRequest, false},
	{StatusServerError, "SERVER_ERROR", ErrServer, true},
}

// Statuses lists every status code this build knows, OK first.
func Statuses() []Status {
	out := []Status{StatusOK}
	for _, e := range statusTable {
		out = append(out, e.status)
	}
	return out
}

// Err returns the sentinel for s: nil for StatusOK, ErrServer for a code this build does not
// know (a newer bookie), so callers never see an unmapped value.
func (s Status) Err() error {
	if s == StatusOK {
		return nil
	}
	for _, e := range statusTable {
		if e.status == s {
			return e.err
		}
	}
	return fmt.Errorf("%w (unknown status %d)", ErrServer, uint16(s))
}

// String names the status (OK, NO_SUCH_ENTRY, FENCED, ...), as metrics label it.
func (s Status) String() string {
	if s == StatusOK {
		return "OK"
	}
	for _, e := range statusTable {
		if e.status == s {
			return e.name
		}
	}
	return fmt.Sprintf("STATUS_%d", uint16(s))
}

// StatusOf maps an error whose chain holds one of the sentinels to its code; nil is
// StatusOK and anything else StatusServerError.
func StatusOf(err error) Status {
	if err == nil {
		return StatusOK
	}
	for _, e := range statusTable {
		if errors.Is(err, e.err) {
			return e.status
		}
	}
	return StatusServerError
}

// Retriable reports whether err (from a Client call) may succeed if the request is repeated:
// busy, read-only, internal errors, timeouts and connection failures.
func Retriable(err error) bool {
	if errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnavailable) {
		return true
	}
	for _, e := range statusTable {
		if errors.Is(err, e.err) {
			return e.retriable
		}
	}
	return false
}
