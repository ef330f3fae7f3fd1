//go:build kafkacompat

package kafka

import (
	"testing"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// Kafka's own command-line tools (Kafka 4.x from Maven Central, on this machine's Java)
// against the protocol layer. make kafka-compat runs these.

func TestKafkaCLITools(t *testing.T) {
	_, _, addr := startMem(t)
	testenv.KafkaToolsSuite(t, addr)
}
