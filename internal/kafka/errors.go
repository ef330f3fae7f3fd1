package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// Error classes of the Kafka front end. They are Kafka's own error values (kerr), so code
// in this package wraps them (fmt.Errorf("%w: topic %s", ErrUnknownTopic, t)) and the table
// below needs no second name for each.
var (
	ErrInvalidTopic         = kerr.InvalidTopicException
	ErrUnknownTopic         = kerr.UnknownTopicOrPartition
	ErrTopicExists          = kerr.TopicAlreadyExists
	ErrInvalidPartitions    = kerr.InvalidPartitions
	ErrOffsetOutOfRange     = kerr.OffsetOutOfRange
	ErrCorruptMessage       = kerr.CorruptMessage
	ErrInvalidRecord        = kerr.InvalidRecord
	ErrUnsupportedCodec     = kerr.UnsupportedCompressionType
	ErrMessageTooLarge      = kerr.MessageTooLarge
	ErrInvalidRequest       = kerr.InvalidRequest
	ErrUnsupportedVersion   = kerr.UnsupportedVersion
	ErrNotCoordinator       = kerr.NotCoordinator
	ErrNotLeader            = kerr.NotLeaderForPartition
	ErrLeaderNotAvailable   = kerr.LeaderNotAvailable
	ErrOutOfOrderSequence   = kerr.OutOfOrderSequenceNumber
	ErrDuplicateSequence    = kerr.DuplicateSequenceNumber
	ErrProducerFenced       = kerr.InvalidProducerEpoch
	ErrUnknownProducerID    = kerr.UnknownProducerID
	ErrInvalidConfig        = kerr.InvalidConfig
	ErrPolicyViolation      = kerr.PolicyViolation
	ErrTopicAuthorization   = kerr.TopicAuthorizationFailed
	ErrGroupAuthorization   = kerr.GroupAuthorizationFailed
	ErrClusterAuthorization = kerr.ClusterAuthorizationFailed
	ErrSASLAuthentication   = kerr.SaslAuthenticationFailed
	ErrTimeout              = kerr.RequestTimedOut
	ErrNotEnoughReplicas    = kerr.NotEnoughReplicas
	ErrUnknownServer        = kerr.UnknownServerError
	ErrOffsetMetadataTooBig = kerr.OffsetMetadataTooLarge
)

// errorRow maps one Go error class that comes from below this package (the topic service,
// storage, auth) to the Kafka error a client understands.
type errorRow struct {
	err  error
	code *kerr.Error
}

// errorTable is the single Go error -> Kafka error code mapping of the Kafka protocol.
// Errors of this package are kerr values already and are matched first; the first matching
// row wins. Retriable classes map to Kafka codes the clients retry (the client's view of
// "retriable" is the code's, not ours).
var errorTable = []errorRow{
	{wire.ErrTopicNotFound, kerr.UnknownTopicOrPartition},
	{wire.ErrInvalidTopicName, kerr.InvalidTopicException},
	{wire.ErrMessageTooLarge, kerr.MessageTooLarge},
	{wire.ErrTopicTerminated, kerr.InvalidTopicException},
	{wire.ErrAuthentication, kerr.SaslAuthenticationFailed},
	{wire.ErrAuthorization, kerr.TopicAuthorizationFailed},
	{wire.ErrQuotaExceeded, kerr.PolicyViolation},
	{wire.ErrProducerFenced, kerr.InvalidProducerEpoch},
	{wire.ErrNotAllowed, kerr.PolicyViolation},
	// A topic moving between owners, a fenced ledger, a closing topic: the client looks the
	// leader up again (NOT_LEADER_OR_FOLLOWER is retriable and refreshes metadata).
	{wire.ErrServiceNotReady, kerr.NotLeaderForPartition},
	{wire.ErrTooManyRequests, kerr.ThrottlingQuotaExceeded},
	{wire.ErrChecksum, kerr.CorruptMessage},
	{wire.ErrPersistence, kerr.KafkaStorageError},
	{wire.ErrMetadata, kerr.KafkaStorageError},
	{context.DeadlineExceeded, kerr.RequestTimedOut},
	{context.Canceled, kerr.RequestTimedOut},
}

// errorCode is the Kafka error code for err: 0 for nil, UNKNOWN_SERVER_ERROR (-1) for
// errors no row knows.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	return kafkaError(err).Code
}

// kafkaError is errorCode's row: the kerr value for err.
func kafkaError(err error) *kerr.Error {
	if ke, ok := errors.AsType[*kerr.Error](err); ok {
		return ke
	}
	for _, r := range errorTable {
		if errors.Is(err, r.err) {
			return r.code
		}
	}
	return kerr.UnknownServerError
}

// errorMessage is the text sent in responses that carry one (ErrorMessage fields): nil for
// nil, so a success has no message.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

// isUnknownTopic tells whether err means the topic does not exist, whichever layer said so.
func isUnknownTopic(err error) bool {
	return err != nil && errorCode(err) == ErrUnknownTopic.Code
}
