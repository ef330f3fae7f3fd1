package config

import "errors"

// DeliveryConfig is the broker's consumption semantics beyond plain dispatch: batch-index
// acknowledgement, delayed delivery and regex subscriptions. Keys are Pulsar's broker.conf keys except
// delayedDeliveryMaxTrackedMessages (Pulsar's in-memory tracker is unbounded).
type DeliveryConfig struct {
	// AcknowledgmentAtBatchIndexLevelEnabled keeps acknowledgements of single messages of a
	// batch (ack_set) with the cursor, so a redelivered batch skips the acknowledged ones.
	AcknowledgmentAtBatchIndexLevelEnabled bool `key:"acknowledgmentAtBatchIndexLevelEnabled" help:"keep acknowledgements of single messages inside a batch"`
	// DelayedDeliveryEnabled holds messages with a deliver_at_time on Shared and Key_Shared
	// subscriptions until that time; when off they are delivered at once.
	DelayedDeliveryEnabled bool `key:"delayedDeliveryEnabled" help:"hold messages with a delivery time on Shared and Key_Shared subscriptions"`
	// DelayedDeliveryTickTimeMillis is the granularity of delayed delivery: a message due at
	// t goes out at the first tick at or after t, so one wake-up serves many messages.
	DelayedDeliveryTickTimeMillis int `key:"delayedDeliveryTickTimeMillis" help:"granularity of delayed delivery, in milliseconds"`
	// DelayedDeliveryMaxTrackedMessages bounds the delayed messages one subscription holds
	// in memory; when full, the subscription reads no further entries until some are due.
	DelayedDeliveryMaxTrackedMessages int `key:"delayedDeliveryMaxTrackedMessages" help:"delayed messages held per subscription before reading pauses"`

	// Regex subscriptions: the broker filters GET_TOPICS_OF_NAMESPACE by the client's
	// pattern when evaluation is on and the pattern is at most this long (bounding the
	// cost of compiling client input); otherwise the client filters.
	EnableBrokerSideSubscriptionPatternEvaluation bool `key:"enableBrokerSideSubscriptionPatternEvaluation" help:"filter topic lists by the client's regex pattern on the broker"`
	SubscriptionPatternMaxLength                  int  `key:"subscriptionPatternMaxLength" help:"longest regex pattern the broker evaluates"`
}

// DefaultDeliveryConfig returns Pulsar's defaults (and ours for the tracker bound).
func DefaultDeliveryConfig() DeliveryConfig {
	return DeliveryConfig{
		AcknowledgmentAtBatchIndexLevelEnabled:        true,
		DelayedDeliveryEnabled:                        true,
		DelayedDeliveryTickTimeMillis:                 1000,
		DelayedDeliveryMaxTrackedMessages:             100000,
		EnableBrokerSideSubscriptionPatternEvaluation: true,
		SubscriptionPatternMaxLength:                  50,
	}
}

// Validate checks the delivery settings.
func (c *DeliveryConfig) Validate() error {
	return errors.Join(
		Between("delayedDeliveryTickTimeMillis", c.DelayedDeliveryTickTimeMillis, 1, 3_600_000),
		Between("delayedDeliveryMaxTrackedMessages", c.DelayedDeliveryMaxTrackedMessages, 1, 100_000_000),
		Between("subscriptionPatternMaxLength", c.SubscriptionPatternMaxLength, 1, 100_000),
	)
}
