package wire

import (
	"errors"

	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Error classes that cross the protocol edge. Components wrap their own errors with one of
// these (fmt.Errorf("%w: topic %s", wire.ErrTopicNotFound, name)) or implement
// ServerErrorer; the connection turns them into the ServerError the client understands
// with ServerErrorFor. The message sent along is err.Error().
var (
	ErrMetadata             = errors.New("wire: metadata error")
	ErrPersistence          = errors.New("wire: persistence error")
	ErrAuthentication       = errors.New("wire: authentication failed")
	ErrAuthorization        = errors.New("wire: not authorized")
	ErrConsumerBusy         = errors.New("wire: consumer busy")
	ErrServiceNotReady      = errors.New("wire: service not ready")
	ErrQuotaExceeded        = errors.New("wire: producer blocked: backlog quota exceeded")
	ErrUnsupportedVersion   = errors.New("wire: unsupported protocol version")
	ErrTopicNotFound        = errors.New("wire: topic not found")
	ErrSubscriptionNotFound = errors.New("wire: subscription not found")
	ErrConsumerNotFound     = errors.New("wire: consumer not found")
	ErrTooManyRequests      = errors.New("wire: too many requests")
	ErrTopicTerminated      = errors.New("wire: topic terminated")
	ErrProducerBusy         = errors.New("wire: producer busy")
	ErrInvalidTopicName     = errors.New("wire: invalid topic name")
	ErrIncompatibleSchema   = errors.New("wire: incompatible schema")
	ErrNotAllowed           = errors.New("wire: not allowed")
	ErrProducerFenced       = errors.New("wire: producer fenced")
	ErrMessageTooLarge      = errors.New("wire: message too large")
	ErrTransactionsDisabled = errors.New("wire: transactions are not enabled")
	// Transactions (internal/txn): the coordinator is not served here, the transaction is
	// unknown (ended or never begun), it is not in a state that allows the request, or a
	// transactional acknowledgement collides with another transaction's.
	ErrCoordinatorNotFound = errors.New("wire: transaction coordinator not found")
	ErrTransactionNotFound = errors.New("wire: transaction not found")
	ErrInvalidTxnStatus    = errors.New("wire: invalid transaction status")
	ErrTransactionConflict = errors.New("wire: transaction conflict")
)

// ServerErrorer is implemented by errors that know their protocol code.
type ServerErrorer interface {
	ServerError() pb.ServerError
}

// errorCode is one row of the table: an error class, its code, and whether a client may
// retry the same request (possibly after a new lookup) and expect it to succeed.
type errorCode struct {
	err       error
	code      pb.ServerError
	retriable bool
}

// errorTable is the single Go error -> ServerError mapping of the binary protocol. Order
// matters only when an error wraps several classes: the first match wins.
var errorTable = []errorCode{
	{ErrTopicNotFound, pb.ServerError_TopicNotFound, false},
	{ErrSubscriptionNotFound, pb.ServerError_SubscriptionNotFound, false},
	{ErrConsumerNotFound, pb.ServerError_ConsumerNotFound, false},
	{ErrProducerBusy, pb.ServerError_ProducerBusy, true},
	{ErrProducerFenced, pb.ServerError_ProducerFenced, false},
	{ErrConsumerBusy, pb.ServerError_ConsumerBusy, true},
	{ErrTopicTerminated, pb.ServerError_TopicTerminatedError, false},
	{ErrInvalidTopicName, pb.ServerError_InvalidTopicName, false},
	{ErrIncompatibleSchema, pb.ServerError_IncompatibleSchema, false},
	{ErrMessageTooLarge, pb.ServerError_NotAllowedError, false},
	{ErrTransactionsDisabled, pb.ServerError_NotAllowedError, false},
	{ErrCoordinatorNotFound, pb.ServerError_TransactionCoordinatorNotFound, true},
	{ErrTransactionNotFound, pb.ServerError_TransactionNotFound, false},
	{ErrInvalidTxnStatus, pb.ServerError_InvalidTxnStatus, false},
	{ErrTransactionConflict, pb.ServerError_TransactionConflict, false},
	{ErrNotAllowed, pb.ServerError_NotAllowedError, false},
	{ErrAuthentication, pb.ServerError_AuthenticationError, false},
	{ErrAuthorization, pb.ServerError_AuthorizationError, false},
	{ErrQuotaExceeded, pb.ServerError_ProducerBlockedQuotaExceededException, true},
	{ErrUnsupportedVersion, pb.ServerError_UnsupportedVersionError, false},
	{ErrServiceNotReady, pb.ServerError_ServiceNotReady, true},
	{ErrTooManyRequests, pb.ServerError_TooManyRequests, true},
	{ErrChecksum, pb.ServerError_ChecksumError, true},
	{ErrPersistence, pb.ServerError_PersistenceError, true},
	{ErrMetadata, pb.ServerError_MetadataError, true},
}

// ServerErrorFor maps err to the code sent to clients and says whether retrying may help.
// Unknown errors map to UnknownError, retriable.
func ServerErrorFor(err error) (code pb.ServerError, retriable bool) {
	var se ServerErrorer
	if errors.As(err, &se) {
		c := se.ServerError()
		return c, Retriable(c)
	}
	for _, row := range errorTable {
		if errors.Is(err, row.err) {
			return row.code, row.retriable
		}
	}
	return pb.ServerError_UnknownError, true
}

// Retriable tells whether a request that failed with code may succeed when retried.
func Retriable(code pb.ServerError) bool {
	for _, row := range errorTable {
		if row.code == code {
			return row.retriable
		}
	}
	return true
}

// ErrorFor is the reverse mapping for the receiving side of the protocol (our client
// tools): the error class for code, or nil if the table has none.
func ErrorFor(code pb.ServerError) error {
	for _, row := range errorTable {
		if row.code == code {
			return row.err
		}
	}
	return nil
}
