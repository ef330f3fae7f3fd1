package topics

import (
	"errors"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// The error classes of the topic service. Every error it returns wraps one of them; each
// front end turns them into its own codes in one table (wire/errors.go for the Pulsar
// protocol, admin/errors.go for HTTP). They are the protocol-neutral classes wire defines,
// re-exported so that a front end needs nothing of the Pulsar codec to test for them.
var (
	ErrMetadata             = wire.ErrMetadata
	ErrPersistence          = wire.ErrPersistence
	ErrAuthentication       = wire.ErrAuthentication
	ErrAuthorization        = wire.ErrAuthorization
	ErrConsumerBusy         = wire.ErrConsumerBusy
	ErrServiceNotReady      = wire.ErrServiceNotReady
	ErrQuotaExceeded        = wire.ErrQuotaExceeded
	ErrTopicNotFound        = wire.ErrTopicNotFound
	ErrSubscriptionNotFound = wire.ErrSubscriptionNotFound
	ErrTooManyRequests      = wire.ErrTooManyRequests
	ErrTopicTerminated      = wire.ErrTopicTerminated
	ErrProducerBusy         = wire.ErrProducerBusy
	ErrInvalidTopicName     = wire.ErrInvalidTopicName
	ErrIncompatibleSchema   = wire.ErrIncompatibleSchema
	ErrNotAllowed           = wire.ErrNotAllowed
	ErrProducerFenced       = wire.ErrProducerFenced
	ErrMessageTooLarge      = wire.ErrMessageTooLarge
	ErrTransactionsDisabled = wire.ErrTransactionsDisabled
)

// Errors of the service's own operations (admin ones mostly), beyond the classes above.
var (
	// ErrSubscriptionExists: CreateSubscription of a name in use.
	ErrSubscriptionExists = errors.New("topics: subscription already exists")
	// ErrMessageNotFound: no stored message where one was asked for (peek, examine, by id).
	ErrMessageNotFound = errors.New("topics: message not found")
	// ErrInvalidPosition: a position the topic's log cannot have (seek, reset, by id).
	ErrInvalidPosition = errors.New("topics: invalid position")
)
