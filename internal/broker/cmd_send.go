package broker

import (
	"encoding/binary"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// handleSend validates one SEND and hands its entry to the producer. The entry (from the
// 0x0e01 magic on) is stored exactly as received: compression, batching and encryption
// pass through untouched. Only the metadata is decoded, to count messages and to refuse
// entries consumers could not parse.
func (c *conn) handleSend(cmd *pb.CommandSend, hp []byte, owned bool) error {
	pid, seq := cmd.GetProducerId(), cmd.GetSequenceId()
	c.mu.Lock()
	p := c.producers[pid]
	c.mu.Unlock()
	if p == nil {
		// As the Java broker does: a SEND for a producer that never existed here is a
		// client bug or a stale stream. Tell the client rather than close: a producer
		// closed by the broker may still have SENDs on the wire.
		c.sendSendError(pid, seq, fmt.Errorf("%w: producer %d is not connected", wire.ErrNotAllowed, pid))
		return nil
	}
	if hp == nil {
		return fmt.Errorf("%w: SEND without a payload", errProtocol)
	}
	if !p.ready() {
		p.reject(seq, fmt.Errorf("%w: producer %d has no access to the topic yet", wire.ErrNotAllowed, pid))
		return nil
	}
	_, entry, err := wire.SplitHeadersAndPayload(hp)
	if err != nil {
		return fmt.Errorf("%w: SEND: %w", errProtocol, err)
	}
	if len(entry) < 2 || binary.BigEndian.Uint16(entry) != wire.MagicCRC32C {
		// ParseEntry would skip a (second) broker entry metadata block; the broker adds
		// its own when storing, so a client's must not get into the log.
		p.reject(seq, fmt.Errorf("%w: SEND payload does not start with the entry magic", wire.ErrNotAllowed))
		return nil
	}
	e, err := wire.ParseEntry(entry, true)
	if err != nil {
		// A checksum mismatch is a transmission problem: the client reconnects and resends.
		p.reject(seq, err)
		return nil
	}
	// maxMessageSize bounds the (compressed) payload, as clients apply it; the metadata
	// rides in the frame padding. The frame limit already bounded the whole entry.
	if len(e.Payload) > c.s.cfg.MaxMessageSize {
		p.reject(seq, fmt.Errorf("%w: %d bytes, limit %d", wire.ErrMessageTooLarge, len(e.Payload), c.s.cfg.MaxMessageSize))
		return nil
	}
	md, err := wire.ParseMetadata(e.Metadata)
	if err != nil {
		p.reject(seq, fmt.Errorf("%w: %w", wire.ErrNotAllowed, err))
		return nil
	}
	size := int64(len(entry))
	// Throttle: wait for room before reading further frames from this connection.
	if !c.publishMem.acquire(size) {
		return nil // connection closing
	}
	if !c.s.publishMem.acquire(size) {
		c.publishMem.release(size)
		return nil
	}
	if !c.publishReqs.acquire(1) { // maxPendingPublishRequestsPerConnection
		c.publishMem.release(size)
		c.s.publishMem.release(size)
		return nil
	}
	highest := cmd.GetHighestSequenceId()
	if highest < seq {
		highest = seq
	}
	// A reused frame buffer is overwritten by the next frame, so storage gets a copy, with
	// room in front for the broker entry metadata so that storing it copies nothing more; a
	// large frame has its own buffer (owned) and is kept as is.
	var buf []byte
	if !owned {
		entry, buf = topics.EntryBuffer(entry)
	}
	// The metadata decoded here travels with the entry, so dispatch never parses it again.
	var tx *topics.TxnID
	if cmd.TxnidMostBits != nil || cmd.TxnidLeastBits != nil {
		tx = &topics.TxnID{Most: cmd.GetTxnidMostBits(), Least: cmd.GetTxnidLeastBits()}
	}
	p.publish(seq, highest, topics.HighestSequence(seq, highest, md), entry, buf, topics.MetaOf(md), tx)
	if tp := p.tp.Load(); tp != nil {
		// Over the topic's publish rate: stop reading this connection until the window ends.
		if d := tp.Topic().PublishThrottle(int(md.GetNumMessagesInBatch()), int(size)); d > 0 {
			select {
			case <-time.After(d):
			case <-c.closed:
			}
		}
	}
	return nil
}

func (c *conn) sendSendError(pid, seq uint64, err error) {
	code, _ := wire.ServerErrorFor(err)
	c.log.Warn("rejecting a message", "producer_id", pid, "seq", seq, "err", err)
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_SEND_ERROR.Enum(), SendError: &pb.CommandSendError{
		ProducerId: proto.Uint64(pid), SequenceId: proto.Uint64(seq), Error: code.Enum(), Message: proto.String(err.Error())}})
}
