package broker

import (
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// producer is one producer attached to a topic through a connection.
//
// Receipt ordering: every SEND is queued in pending in arrival order; storage callbacks
// mark their op done (they normally arrive in order, but nothing here relies on it) and
// flush sends receipts or errors from the head of the queue while the head is done. So
// SEND_RECEIPTs leave strictly in SEND order, which the Go client requires.
type producer struct {
	c     *conn
	topic *topic
	id    uint64
	name  string
	epoch uint64
	mode  pb.ProducerAccessMode
	rid   uint64 // request id of its PRODUCER, answered again when a waiting producer is granted access
	// schemaVersion is the registered version of the producer's schema (8 bytes), nil without one.
	schemaVersion []byte

	// Guarded by topic.mu.
	topicEpoch uint64
	ready      atomic.Bool // false while waiting for exclusive access

	mu      sync.Mutex
	pending []*sendOp
}

// sendOp is one SEND between arrival and its receipt.
type sendOp struct {
	seq, highest uint64
	size         int64
	done         bool
	pos          position
	err          error
}

// publish hands one SEND to the topic. The caller has already acquired size bytes from the
// connection and broker limiters; they are released when the receipt is sent. dedupHigh is
// the highest sequence id the entry covers (highestSequence), recorded once it is stored.
func (p *producer) publish(seq, highest uint64, dedupHigh int64, data []byte, count int, batchIndex int32) {
	op := &sendOp{seq: seq, highest: highest, size: int64(len(data))}
	p.mu.Lock()
	p.pending = append(p.pending, op)
	p.mu.Unlock()
	p.c.s.m.msgsIn.Add(float64(count))
	p.c.s.m.bytesIn.Add(float64(len(data)))
	p.topic.counters.msgsIn.Add(int64(count))
	p.topic.counters.bytesIn.Add(int64(len(data)))
	start := time.Now()
	p.topic.publish(data, count, batchIndex, func(pos position, err error) {
		p.topic.dedup.appended(p.name, dedupHigh, pos, err)
		if err == nil {
			p.topic.observePublish(start)
		}
		p.mu.Lock()
		op.done, op.pos, op.err = true, pos, err
		p.mu.Unlock()
		p.flush()
	})
}

// duplicate answers a SEND that deduplication recognised with SEND_RECEIPT (-1, -1), in its
// place in the receipt order, without storing it. size bytes were acquired by handleSend.
func (p *producer) duplicate(seq, highest uint64, size int64) {
	p.mu.Lock()
	p.pending = append(p.pending, &sendOp{seq: seq, highest: highest, size: size, done: true, pos: position{-1, -1}})
	p.mu.Unlock()
	p.flush()
}

// reject answers a SEND that is not stored with SEND_ERROR, in its place in the receipt
// order.
func (p *producer) reject(seq uint64, err error) {
	p.c.log.Warn("rejecting a message", "producer", p.name, "seq", seq, "err", err)
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
	for _, op := range ready {
		p.c.publishMem.release(op.size)
		p.c.s.publishMem.release(op.size)
		if op.err != nil {
			code, _ := wire.ServerErrorFor(op.err)
			if op.size > 0 {
				p.topic.logg.Warn("publish failed", "producer", p.name, "seq", op.seq, "err", op.err)
			}
			p.c.send(&pb.BaseCommand{Type: pb.BaseCommand_SEND_ERROR.Enum(), SendError: &pb.CommandSendError{
				ProducerId: proto.Uint64(p.id), SequenceId: proto.Uint64(op.seq),
				Error: code.Enum(), Message: proto.String(op.err.Error())}})
			continue
		}
		p.c.send(&pb.BaseCommand{Type: pb.BaseCommand_SEND_RECEIPT.Enum(), SendReceipt: &pb.CommandSendReceipt{
			ProducerId: proto.Uint64(p.id), SequenceId: proto.Uint64(op.seq),
			HighestSequenceId: proto.Uint64(op.highest),
			MessageId:         &pb.MessageIdData{LedgerId: u64(op.pos.ledger), EntryId: u64(op.pos.entry)}}})
	}
	p.mu.Unlock()
}
