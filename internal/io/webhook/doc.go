// Package webhook is the HTTP connector (builtin://http): a sink that POSTs each message to
// a URL, as Pulsar's http sink, and a source that serves a webhook endpoint and publishes
// each request it receives (also as builtin://netty with type=http, Pulsar's netty source).
//
// Sink configs (Pulsar's HttpSinkConfig): url (required), headers (a map of extra request
// headers); ours: timeoutMs (30000). The body is the message value (Content-Type
// application/json when it is JSON, else application/octet-stream) and the headers say where
// it came from, as Pulsar's sink sends them: PulsarTopic, PulsarKey, PulsarEventTime,
// PulsarPublishTime (ms), PulsarMessageId, PulsarRedeliveryCount and PulsarProperties-<name>
// per property. A 2xx answer acknowledges the message; a connection error, 408, 429 or 5xx is
// retried with backoff until the endpoint answers (messages stay in order); any other 4xx
// is permanent: after maxMessageRetries the message goes to the dead-letter topic.
//
// Source configs (Pulsar's netty source names): host (127.0.0.1), port (10999), type (http,
// tcp or udp), numberOfThreads (accepted; goroutines here); ours: path (/, the endpoint),
// maxBodyBytes (5 MiB), maxConnections (256, type tcp: served at once). Types tcp and udp are in netty.go: one message per read or
// datagram, at most once, as Pulsar's. For http: A POST or PUT body becomes a message;
// the PulsarKey header its key and PulsarProperties-<name> headers its properties (what the
// sink sends, so http chains; property names arrive lower-cased, as HTTP headers do not keep
// case). The answer waits for the broker: 200 once the message is
// durably published, 503 if it could not be, 413 for a body over maxBodyBytes, 405 for other
// methods. A client that got 200 never loses its request; one that got nothing retries.
package webhook
