package txn

import (
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// The error classes of transactions. Every error of this package wraps one of them (or a
// topic service class); each front end translates them in its own table (wire's for the
// Pulsar protocol, admin's errors.go for HTTP). They are wire's protocol-neutral classes.
var (
	// ErrDisabled: transactionCoordinatorEnabled is off.
	ErrDisabled = wire.ErrTransactionsDisabled
	// ErrCoordinatorNotFound: the coordinator is not served by this broker (or not yet).
	ErrCoordinatorNotFound = wire.ErrCoordinatorNotFound
	// ErrNotFound: no such transaction (never opened here, or ended).
	ErrNotFound = wire.ErrTransactionNotFound
	// ErrInvalidStatus: the transaction is not in a status that allows the request (adding
	// to an ending transaction, committing an aborting one).
	ErrInvalidStatus = wire.ErrInvalidTxnStatus
	// ErrConflict: a transactional acknowledgement of something another transaction
	// acknowledged, or that is acknowledged already.
	ErrConflict = wire.ErrTransactionConflict
	// ErrNotAllowed: a request that can never succeed (a bad timeout, too many
	// participants, too many open transactions).
	ErrNotAllowed = wire.ErrNotAllowed
)

// Errors of this package's own making beyond the classes.
var (
	// ErrClosed: the buffer or pending-ack store of a topic was closed (unload, shutdown):
	// the client asks the topic's owner again.
	ErrClosed = fmt.Errorf("%w: txn: closed", wire.ErrServiceNotReady)
	// ErrCorrupt: a record of a transaction log could not be decoded.
	ErrCorrupt = errors.New("txn: corrupt record")
)
