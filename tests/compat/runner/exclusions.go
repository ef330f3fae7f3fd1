package main

// exclusions are tests that cannot pass for a reason outside Magnetar, keyed "suite/Test",
// each with the reason proven against the client's source (docs/compatibility.md repeats
// them). A test is listed here only with that proof; everything else must pass.
var exclusions = map[string]string{
	"pulsar/TestConsumerKeepReconnectingAndThenCallClose": containerTest("consumer_test.go:5603"),
	"pulsar/TestReconnectConsumer":                        containerTest("consumer_zero_queue_test.go:143"),
	"pulsar/TestReconnectedBrokerSendPermits":             containerTest("consumer_zero_queue_test.go:260"),
	"pulsar/TestProducerKeepReconnectingAndThenCallClose": containerTest("producer_test.go:2676"),
	"pulsar/TestSendAsyncCouldTimeoutWhileReconnecting":   containerTest("producer_test.go:2811"),
}

// containerTest is the reason of the tests that bring their own server: at the line given
// they start getPulsarTestImage() (PULSAR_IMAGE, default apachepulsar/pulsar:latest,
// producer_test.go:2661) through testcontainers-go, which needs a Docker engine, and then
// test the client against that Apache Pulsar container, never against the server the
// suite runs with (not even in the client's own CI).
func containerTest(where string) string {
	return "starts apachepulsar/pulsar in Docker (testcontainers-go, pulsar/" + where +
		") and tests the client against it, not against the server under test; no container engine here"
}
