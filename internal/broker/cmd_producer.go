package broker

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// handleProducer attaches a producer (PRODUCER -> PRODUCER_SUCCESS or ERROR). The client
// does not retry creation, so errors must be final ones or the exact retriable codes.
func (c *conn) handleProducer(cmd *pb.CommandProducer) {
	rid, pid := cmd.GetRequestId(), cmd.GetProducerId()
	c.mu.Lock()
	if p, ok := c.producers[pid]; ok {
		// The same producer id again on this connection: answer success again if it is
		// ready; one still waiting or being created is not ready yet.
		c.mu.Unlock()
		if p.ready.Load() {
			c.sendProducerSuccess(rid, p)
		} else {
			c.sendError(rid, fmt.Errorf("%w: producer %d is still being created", wire.ErrServiceNotReady, pid))
		}
		return
	}
	c.mu.Unlock()

	name, err := ParseTopicName(cmd.GetTopic())
	if err != nil {
		c.sendError(rid, err)
		return
	}
	ctx, cancel := c.opContext()
	defer cancel()
	t, err := c.s.getTopic(ctx, name, true)
	if err != nil {
		c.sendError(rid, err)
		return
	}
	if t.log != nil && t.log.terminated() {
		c.sendError(rid, fmt.Errorf("%w: %s", wire.ErrTopicTerminated, t.full))
		return
	}
	if err := t.admitProducer(); err != nil {
		c.sendError(rid, err)
		return
	}
	schemaVersion, err := c.producerSchema(ctx, name, cmd.GetSchema())
	if err != nil {
		c.sendError(rid, err)
		return
	}
	p := &producer{c: c, topic: t, id: pid, rid: rid, name: cmd.GetProducerName(), epoch: cmd.GetEpoch(),
		mode: cmd.GetProducerAccessMode(), schemaVersion: schemaVersion}
	if p.name == "" {
		p.name = c.s.nextProducerName()
	}
	// Register on the connection first, so a waiting producer can be closed by the client
	// and a grant that races with this handler finds it.
	c.mu.Lock()
	if c.isClosed() {
		c.mu.Unlock()
		return
	}
	c.producers[pid] = p
	c.mu.Unlock()
	err = t.addProducer(p)
	switch {
	case errors.Is(err, errProducerWaiting):
		c.log.Debug("producer waits for exclusive access", "topic", t.full, "producer", p.name, "id", pid)
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER_SUCCESS.Enum(), ProducerSuccess: &pb.CommandProducerSuccess{
			RequestId: proto.Uint64(rid), ProducerName: proto.String(p.name), LastSequenceId: proto.Int64(-1),
			ProducerReady: proto.Bool(false), SchemaVersion: schemaVersionField(p.schemaVersion)}})
		return
	case err != nil:
		c.mu.Lock()
		if c.producers[pid] == p {
			delete(c.producers, pid)
		}
		c.mu.Unlock()
		c.sendError(rid, err)
		return
	}
	c.log.Debug("producer created", "topic", t.full, "producer", p.name, "id", pid)
	c.producerReady(p)
}

// producerReady marks p ready and answers its PRODUCER (again, for a producer that was
// waiting for exclusive access). Called under topic.mu for grants.
func (c *conn) producerReady(p *producer) {
	p.ready.Store(true)
	c.sendProducerSuccess(p.rid, p)
}

func (c *conn) sendProducerSuccess(rid uint64, p *producer) {
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER_SUCCESS.Enum(), ProducerSuccess: &pb.CommandProducerSuccess{
		RequestId:      proto.Uint64(rid),
		ProducerName:   proto.String(p.name),
		LastSequenceId: proto.Int64(p.topic.dedup.lastSequence(p.name)),
		ProducerReady:  proto.Bool(true),
		TopicEpoch:     proto.Uint64(p.topicEpoch),
		SchemaVersion:  schemaVersionField(p.schemaVersion),
	}})
}

// schemaVersionField is PRODUCER_SUCCESS's schema_version: always present, empty for a
// producer without schema, as Pulsar sends it (Commands.newProducerSuccess). The Java client
// reads the field unconditionally (ClientCnx.handleProducerSuccess), so without it no
// producer without schema could be created (found with pulsar-perf: "Field 'schema_version'
// is not set").
func schemaVersionField(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

// handleCloseProducer detaches a producer; unknown ids succeed too (the client may be
// closing one whose creation failed). Pending sends still get their receipts.
func (c *conn) handleCloseProducer(cmd *pb.CommandCloseProducer) {
	c.mu.Lock()
	p, ok := c.producers[cmd.GetProducerId()]
	delete(c.producers, cmd.GetProducerId())
	c.mu.Unlock()
	if ok {
		p.topic.removeProducer(p)
	}
	c.sendSuccess(cmd.GetRequestId())
}

// closeProducerFromBroker detaches p and tells the client (CLOSE_PRODUCER with no request
// id); the client then reconnects through a new lookup.
func (c *conn) closeProducerFromBroker(p *producer) {
	c.mu.Lock()
	if c.producers[p.id] != p {
		c.mu.Unlock()
		return
	}
	delete(c.producers, p.id)
	c.mu.Unlock()
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_CLOSE_PRODUCER.Enum(), CloseProducer: &pb.CommandCloseProducer{
		ProducerId: proto.Uint64(p.id), RequestId: proto.Uint64(wire.NoRequestID)}})
}
