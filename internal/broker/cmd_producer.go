package broker

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/topics"
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
		if p.ready() {
			c.sendProducerSuccess(rid, p.tp.Load())
		} else {
			c.sendError(rid, fmt.Errorf("%w: producer %d is still being created", wire.ErrServiceNotReady, pid))
		}
		return
	}
	err := c.connLimit(len(c.producers), c.s.cfg.MaxProducersPerConnection, "maxProducersPerConnection", wire.ErrProducerBusy)
	c.mu.Unlock()
	if err != nil {
		c.sendError(rid, err)
		return
	}

	name, err := topics.ParseName(cmd.GetTopic())
	if err != nil {
		c.sendError(rid, err)
		return
	}
	ctx, cancel := c.opContext()
	defer cancel()
	t, err := c.s.topics.Topic(ctx, name, topics.Load{Create: true})
	if err != nil {
		c.sendError(rid, err)
		return
	}
	p := &producer{c: c, id: pid, rid: rid}
	// Register on the connection first, so a waiting producer can be closed by the client
	// and a grant that races with this handler finds it.
	c.mu.Lock()
	if c.isClosed() {
		c.mu.Unlock()
		return
	}
	c.producers[pid] = p
	c.mu.Unlock()
	tp, err := t.AddProducer(ctx, topics.ProducerSpec{ID: pid, Name: cmd.GetProducerName(), Epoch: cmd.GetEpoch(),
		Mode: topics.AccessMode(cmd.GetProducerAccessMode()), Schema: producerSchemaFromWire(cmd.GetSchema()),
		Metadata: keyValues(cmd.GetMetadata()), InitialSubscription: cmd.GetInitialSubscriptionName()}, p)
	switch {
	case errors.Is(err, topics.ErrProducerWaiting):
		p.tp.CompareAndSwap(nil, tp) // a grant may have stored it already
		c.log.Debug("producer waits for exclusive access", "topic", name.String(), "producer", tp.Name(), "id", pid)
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER_SUCCESS.Enum(), ProducerSuccess: &pb.CommandProducerSuccess{
			RequestId: proto.Uint64(rid), ProducerName: proto.String(tp.Name()), LastSequenceId: proto.Int64(-1),
			ProducerReady: proto.Bool(false), SchemaVersion: schemaVersionField(tp.SchemaVersion())}})
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
	p.tp.Store(tp)
	c.log.Debug("producer created", "topic", name.String(), "producer", tp.Name(), "id", pid)
	c.sendProducerSuccess(rid, tp)
}

func (c *conn) sendProducerSuccess(rid uint64, tp *topics.Producer) {
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER_SUCCESS.Enum(), ProducerSuccess: &pb.CommandProducerSuccess{
		RequestId:      proto.Uint64(rid),
		ProducerName:   proto.String(tp.Name()),
		LastSequenceId: proto.Int64(tp.LastSequenceID()),
		ProducerReady:  proto.Bool(true),
		TopicEpoch:     proto.Uint64(tp.TopicEpoch()),
		SchemaVersion:  schemaVersionField(tp.SchemaVersion()),
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
		if tp := p.tp.Load(); tp != nil {
			tp.Close()
		}
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
