package broker

import (
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Bounds on what one client can make the broker hold (issue 27), each named in config:
//
//   - brokerMaxConnections: a connection beyond it gets ERROR NotAllowed and is closed
//     (server.go:accept);
//   - maxConcurrentLookupRequest: LOOKUP and PARTITIONED_METADATA beyond it fail with
//     TooManyRequests, which clients retry (cmd_lookup.go);
//   - maxPendingPublishRequestsPerConnection (with the byte limits of cmd_send.go): at the
//     limit the read loop stops reading SENDs, so TCP pushes back;
//   - maxPendingWriteBytesPerConnection: what is queued for a client that does not read.
//     At the limit the read loop stops reading commands (so no more answers are queued) and
//     the connection's consumers are not writable (topics.ConsumerWritability), so dispatch
//     to them pauses; both resume when the write loop has written below the limit. What can
//     still be queued meanwhile is small and bounded (receipts of SENDs already read, pings,
//     close notices). A client that reads nothing for writeTimeout is disconnected.
//   - maxProducersPerConnection / maxConsumersPerConnection: a PRODUCER or SUBSCRIBE beyond
//     them is answered ProducerBusy / ConsumerBusy, Pulsar's codes for its per-topic counts
//     (connLimit); the connection and what it already holds go on.
//
// Per-topic and per-namespace counts (producers, consumers, subscriptions, topics) are
// namespace/topic policies with broker defaults: internal/topics/policies.go.

var errTooManyLookups = errors.New("Failed due to too many pending lookup requests")

// lookupSlot takes one of the broker's maxConcurrentLookupRequest slots, without waiting.
func (s *Server) lookupSlot() (release func(), ok bool) {
	select {
	case s.lookups <- struct{}{}:
		return func() { <-s.lookups }, true
	default:
		s.log.Warn("refusing a lookup", "reason", "maxConcurrentLookupRequest reached", "limit", cap(s.lookups))
		return nil, false
	}
}

// connLimit is the refusal of one more producer or consumer on a connection that holds n
// of them, with limit the most its config key allows (0: unlimited), or nil. The read loop
// runs one command at a time, so n cannot grow between this check and the handler's
// registration of the new one.
func (c *conn) connLimit(n, limit int, key string, code error) error {
	if limit <= 0 || n < limit {
		return nil
	}
	c.log.Warn("refusing a client's request", "reason", key+" reached", "limit", limit)
	return fmt.Errorf("%w: this connection holds %d, the most %s allows", code, n, key)
}

// refuseConnection answers a connection over brokerMaxConnections before closing it, as
// Pulsar does: ERROR NotAllowed (request id -1) the client reports.
func refuseConnection(nc net.Conn) {
	b, err := wire.AppendCommand(nil, &pb.BaseCommand{Type: pb.BaseCommand_ERROR.Enum(), Error: &pb.CommandError{
		RequestId: proto.Uint64(^uint64(0)), Error: pb.ServerError_NotAllowedError.Enum(),
		Message: proto.String("Reached the maximum number of connections (brokerMaxConnections)")}})
	if err != nil {
		return
	}
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write(b)
}

// writable tells whether less than maxPendingWriteBytesPerConnection is queued for the
// client. A false answer marks the connection blocked first, so the write loop's next
// drain below the limit is sure to wake whoever saw it false.
func (c *conn) writable() bool {
	limit := c.s.cfg.MaxPendingWriteBytesPerConnection
	if c.pendingWrite.Load() < limit {
		return true
	}
	c.writeBlocked.Store(true)
	return c.pendingWrite.Load() < limit
}

// waitWritable holds the read loop while the client is not writable (or until the
// connection closes).
func (c *conn) waitWritable() {
	if c.writable() {
		return
	}
	c.log.Debug("client not reading; pausing its commands", "pending_write_bytes", c.pendingWrite.Load())
	c.writableMu.Lock()
	for !c.writable() && !c.isClosed() {
		c.writableCond.Wait()
	}
	c.writableMu.Unlock()
}

// wrote records n bytes written to the client; below the limit again, it wakes the read
// loop and the connection's consumers.
func (c *conn) wrote(n int64) {
	if c.pendingWrite.Add(-n) >= c.s.cfg.MaxPendingWriteBytesPerConnection || !c.writeBlocked.Swap(false) {
		return
	}
	c.writableMu.Lock()
	c.writableCond.Broadcast()
	c.writableMu.Unlock()
	c.mu.Lock()
	consumers := make([]*consumer, 0, len(c.consumers))
	for _, cs := range c.consumers {
		consumers = append(consumers, cs)
	}
	c.mu.Unlock()
	for _, cs := range consumers {
		cs.tc.Resume()
	}
}

// Writable is the topics.ConsumerWritability of a consumer: its connection's.
func (cs *consumer) Writable() bool { return cs.c.writable() }
