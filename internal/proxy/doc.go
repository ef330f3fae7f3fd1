// Package proxy is `magnetar proxy`: a stateless gateway that lets clients reach every broker
// of a cluster through one address (Pulsar's proxy protocol), and forwards admin HTTP.
//
// # Binary protocol (:6650)
//
// Every client connection starts with CONNECT. What happens next depends on one field:
//
//   - No proxy_to_broker_url: a lookup connection. The proxy answers CONNECTED itself and
//     serves the requests a client may send to any broker: LOOKUP, PARTITIONED_METADATA,
//     GET_TOPICS_OF_NAMESPACE, GET_SCHEMA, PING/PONG. Each is sent to a broker over the
//     proxy's own multiplexed connection to it (upstream.go: one per broker, its own request
//     ids, answers matched back to the client's request id). A LOOKUP is followed through
//     Redirect answers by the proxy itself (authoritative copied, at most 20 hops); the
//     final Connect goes back to the client with the owner's URL, authoritative=true and
//     proxy_through_service_url=true. Anything else (PRODUCER, SUBSCRIBE, ...) gets an ERROR
//     naming the command: it belongs on a spliced connection.
//   - proxy_to_broker_url=host:port: the Go client opens this connection after a lookup
//     answered with proxy_through_service_url (its pool key is logical=broker,
//     physical=proxy). The target must be a known broker (below), else the client gets
//     ERROR NotAllowedError and the connection closes; the proxy never dials an address a
//     client made up. The proxy dials the broker, sends the client's CONNECT unchanged except
//     for proxy_to_broker_url (so the client's auth_method_name/auth_data and any
//     original_principal/original_auth_* reach the broker, which authenticates the client
//     itself), relays the broker's first answer (CONNECTED, or ERROR and close), and then
//     splices: bytes are copied in both directions without decoding, and when either side
//     ends both are closed.
//
// Known brokers are: brokers registered in the metadata store (a watch on
// proxyBrokerRegistrationPrefix, default Pulsar's /loadbalance/brokers/; each value is JSON
// with pulsarServiceUrl and webServiceUrl, or the key's last element is host:port), the
// configured brokerServiceURL/brokerWebServiceURL (what a proxy in front of a standalone
// uses), and binary addresses that a broker itself returned in a lookup answer to this proxy
// ("vouched", at most 4096 remembered). Lookups go to registered brokers round-robin, then
// to the configured one; a broker that cannot be reached is skipped.
//
// # Bounds
//
//   - maxConcurrentInboundConnections: connections beyond it are closed on accept.
//   - maxConcurrentLookupRequests: requests in flight towards brokers, for all clients;
//     beyond it the client gets TooManyRequests at once (the Go client retries).
//     proxyMaxLookupRequestsPerConnection does the same per client connection, so one
//     client cannot take every slot (each request in flight is one goroutine).
//   - proxyMaxFrameSizeBytes: the largest frame decoded before splicing (CONNECT, lookups).
//     After splicing nothing is decoded; the broker enforces its own limits.
//   - Per spliced connection: between two TCP sockets the copy is splice(2) through a
//     kernel pipe (no user buffer); otherwise one proxySpliceBufferBytes buffer per
//     direction. The handshake readers hold clientBufferBytes each and are drained first.
//   - A client must send CONNECT within keepAliveIntervalSeconds; a lookup connection
//     silent for twice that is closed (the Go client pings every 30 s).
//   - Bad input (a malformed or oversized frame, a first frame that is not CONNECT) closes
//     that connection only, after an ERROR where one can be sent.
//
// # HTTP (:8080)
//
// /metrics is the proxy's own registry (connections, lookups, spliced bytes; Pulsar's
// pulsar_proxy_* names). Every other path (/admin/v2/..., /lookup/v2/..., /status.html) is
// forwarded to a broker's web service with httputil.ReverseProxy. The request body is
// buffered (httpMaxRequestSize) so that a 307/308 redirect from a broker to the topic's
// owner is followed by the proxy itself (at most proxyHttpMaxRedirects hops, and only to a
// known broker's web address). Following server-side rather than passing the 307 on is the
// choice because the whole point of the proxy is that clients cannot reach brokers: a
// pulsaradmin client would follow a passed-through Location to the broker's own address,
// which from outside the cluster network does not answer. Pulsar's proxy does the same
// (its admin proxy's HTTP client follows redirects). Failures answer 502/503 with the
// {"reason": "..."} body pulsaradmin shows.
//
// # Security (security.go)
//
// TLS listeners (servicePortTls, webServicePortTls) serve beside or instead of the plaintext
// ones. With authenticationEnabled the proxy authenticates every client itself and speaks to
// brokers as its own role (brokerClientAuthentication*, or its certificate) naming the
// client as original_principal (X-Original-Principal over HTTP), so brokers authorize the
// client and never the proxy alone; a client's lookups use connections of their own, its
// spliced connection closes when its credentials expire. tlsEnabledWithBroker dials brokers'
// TLS listeners with brokerClientTrustCertsFilePath. A client's own X-Original-Principal
// header is always dropped.
//
// Not done: HTTP lookups answering with the proxy's own URL (a client using an http://
// service URL against the proxy gets the broker's brokerUrl and must reach it directly).
package proxy
