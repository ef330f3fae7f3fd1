package broker

import (
	"errors"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// producer is the connection's side of one producer: the topic service's producer (tp) and
// the queue that orders its receipts. It is tp's topics.ProducerClient.
//
// Receipt ordering: every SEND is queued in pending in arrival order; storage callbacks
// mark their op done (they normally arrive in order, but nothing here relies on it) and
// flush sends receipts or errors from the head of the queue while the head is done. So
// SEND_RECEIPTs leave strictly in SEND order, which the Go client requires.
type producer struct {
	c   *conn
	tp  atomic.Pointer[topics.Producer] // set once AddProducer returned (or granted it)
	id  uint64
	rid uint64 // request id of its PRODUCER, answered again when a waiting producer is granted access

	mu      sync.Mutex
	pending []*sendOp
}

// sendOp is one SEND between arrival and its receipt.
type sendOp struct {
	seq, highest uint64
	size         int64
	done         bool
	pos          topics.Position
	err          error
}

// publish hands one SEND to the topic service. The caller has already acquired size bytes
// from the connection and broker limiters; they are released when the receipt is sent.
// dedupHigh is the highest sequence id the entry covers (highestSequence).
func (p *producer) publish(seq, highest uint64, dedupHigh int64, data, buf []byte, meta topics.EntryMeta, tx *topics.TxnID) {
	op := &sendOp{seq: seq, highest: highest, size: int64(len(data))}
	p.mu.Lock()
	p.pending = append(p.pending, op)
	p.mu.Unlock()
	err := p.tp.Load().Publish(topics.Message{Data: data, Buf: buf, Meta: meta, SequenceID: int64(seq), HighestSequenceID: dedupHigh, Txn: tx},
		func(pos topics.Position, err error) {
			p.mu.Lock()
			op.done, op.pos, op.err = true, pos, err
			p.mu.Unlock()
			p.flush()
		})
	switch {
	case err == nil:
		return
	case errors.Is(err, topics.ErrDuplicate):
		// Deduplication recognised it: SEND_RECEIPT (-1, -1) in its place in the order.
		p.mu.Lock()
		op.done, op.pos = true, topics.Position{LedgerID: -1, EntryID: -1}
		p.mu.Unlock()
	default: // refused before storage; flush logs it
		p.mu.Lock()
		op.done, op.err = true, err
		p.mu.Unlock()
	}
	p.flush()
}

// reject answers a SEND that is not stored with SEND_ERROR, in its place in the receipt
// order.
func (p *producer) reject(seq uint64, err error) {
	p.c.log.Warn("rejecting a message", "producer_id", p.id, "seq", seq, "err", err)
	p.mu.Lock()
	p.pending = append(p.pending, &sendOp{seq: seq, done: true, err: err})
	p.mu.Unlock()
	p.flush()
}

// flush sends the receipts of the completed ops at the head of the queue.
func (p *producer) flush() {
	p.mu.Lock()
	var ready []*sendOp
	for len(p.pending) > 0 && p.pending[0].done {
		ready = append(ready, p.pending[0])
		p.pending[0] = nil
		p.pending = p.pending[1:]
	}
	// NB: the sends happen under p.mu so two concurrent flushes cannot reorder receipts.
	terminated := false
	for _, op := range ready {
		p.c.publishMem.release(op.size)
		p.c.s.publishMem.release(op.size)
		if op.size > 0 { // it went through handleSend's limiters (a rejected op did not)
			p.c.publishReqs.release(1)
		}
		if op.err != nil && errors.Is(op.err, wire.ErrTopicTerminated) {
			// No SEND_ERROR: the Go client drops a producer on SEND_ERROR TopicTerminated
			// and then ignores the CLOSE_PRODUCER, so its pending sends time out instead of
			// failing with ErrTopicTerminated. The producer is closed instead (below; the
			// termination closes it too), and the client's reconnect learns TopicTerminated
			// from PRODUCER and fails every pending send with it, as the Java client does.
			terminated = true
			continue
		}
		if op.err != nil {
			code, _ := wire.ServerErrorFor(op.err)
			if op.size > 0 {
				tp := p.tp.Load()
				p.c.log.Warn("publish failed", "topic", tp.Topic().Name().String(), "producer", tp.Name(), "seq", op.seq, "err", op.err)
			}
			p.c.send(&pb.BaseCommand{Type: pb.BaseCommand_SEND_ERROR.Enum(), SendError: &pb.CommandSendError{
				ProducerId: proto.Uint64(p.id), SequenceId: proto.Uint64(op.seq),
				Error: code.Enum(), Message: proto.String(op.err.Error())}})
			continue
		}
		p.c.send(&pb.BaseCommand{Type: pb.BaseCommand_SEND_RECEIPT.Enum(), SendReceipt: &pb.CommandSendReceipt{
			ProducerId: proto.Uint64(p.id), SequenceId: proto.Uint64(op.seq),
			HighestSequenceId: proto.Uint64(op.highest),
			MessageId:         &pb.MessageIdData{LedgerId: u64(op.pos.LedgerID), EntryId: u64(op.pos.EntryID)}}})
	}
	p.mu.Unlock()
	if terminated {
		p.c.closeProducerFromBroker(p)
	}
}

// The topics.ProducerClient side.

// Granted answers the PRODUCER of a producer that waited for exclusive access.
func (p *producer) Granted(tp *topics.Producer) {
	p.tp.Store(tp)
	p.c.sendProducerSuccess(p.rid, tp)
}

// ready tells whether the producer may send: created and not waiting for access.
func (p *producer) ready() bool {
	tp := p.tp.Load()
	return tp != nil && tp.Ready()
}

// Disconnect detaches p from the connection and tells the client (CLOSE_PRODUCER with no
// request id); the client then reconnects through a new lookup.
func (p *producer) Disconnect() { p.c.closeProducerFromBroker(p) }

// Refuse answers the PRODUCER request of a producer that will never get exclusive access:
// the client is still waiting for that request's final answer (it ignored the first,
// producer_ready=false one), so the error fails its CreateProducer.
func (p *producer) Refuse(err error) {
	c := p.c
	c.mu.Lock()
	if c.producers[p.id] == p {
		delete(c.producers, p.id)
	}
	c.mu.Unlock()
	c.sendError(p.rid, err)
}

// Alive tells whether the producer's connection is still open.
func (p *producer) Alive() bool { return !p.c.isClosed() }

// Address is the client's address.
func (p *producer) Address() string { return p.c.remote }

// Version is the client's version string (CONNECT's client_version).
func (p *producer) Version() string { return p.c.clientVersion }

func u64(v int64) *uint64 { x := uint64(v); return &x }
func i32(v int32) *int32  { return &v }
