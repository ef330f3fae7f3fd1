package kafka

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/txn"
)

// Produce (key 0), v3-v11.
//
// Each partition's record batches are decoded (CRC, codec, record framing checked),
// turned into one Pulsar entry each (records.go) and appended in order to the partition's
// log; the response goes out when every partition's appends are durable. acks=1 and
// acks=-1 both wait for the ack quorum of bookies (Magnetar has no weaker "leader has
// it" point: the bookies ARE the replicas); acks=0 sends no response at all, as Kafka.
// Idempotent batches (producer id >= 0) go through the partition's sequence check
// (partition.go). Transactional batches (a transactional id in the request, the
// transactional attribute on each batch) are stamped with the id's transaction (txn.go),
// which must have added the partition.
func handleProduce(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.ProduceRequest)
	s := c.s
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	producerName := "kafka-" + c.clientID
	now := time.Now().UnixMilli()

	var wg sync.WaitGroup
	var mu sync.Mutex // guards resp's partitions, written by append callbacks
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(r.Topics))
	for ti := range r.Topics {
		rt := &r.Topics[ti]
		out := &resp.Topics[ti]
		out.Topic = rt.Topic
		out.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			op := &out.Partitions[pi]
			*op = kmsg.ProduceResponseTopicPartition{Partition: rp.Partition, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
			fail := func(err error) {
				op.ErrorCode, op.ErrorMessage = errorCode(err), errorMessage(err)
			}
			if r.Acks != 0 && r.Acks != 1 && r.Acks != -1 {
				fail(fmt.Errorf("%w: acks must be 0, 1 or -1, not %d", ErrInvalidRequest, r.Acks))
				continue
			}
			if err := c.authorizeName(c.ctx, rt.Topic, auth.TopicProduce, ""); err != nil {
				fail(err)
				continue
			}
			p, _, err := s.openPartition(c.ctx, rt.Topic, rp.Partition)
			if err != nil {
				fail(err)
				continue
			}
			batches, err := parseBatches(rp.Records, s.maxMsg*2)
			if err != nil {
				fail(err)
				continue
			}
			var tx *txn.ID
			if tx, err = s.produceTxnOf(c.ctx, r.TransactionID, p.name, batches); err != nil {
				fail(err)
				continue
			}
			entries := make([][]byte, len(batches))
			for i := range batches {
				name := producerName
				if batches[i].producerID >= 0 {
					name = idemProducerName(batches[i].producerID, batches[i].producerEpoch)
				}
				if entries[i], err = toPulsarEntry(&batches[i], entryOptions{producerName: name, publishTime: now, maxBytes: s.maxMsg}); err != nil {
					break
				}
			}
			if err != nil {
				fail(err)
				continue
			}
			for i := range batches {
				wg.Add(1)
				first := i == 0
				p.append(&batches[i], entries[i], now, tx, func(base int64, err error) {
					defer wg.Done()
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						if op.ErrorCode == 0 {
							fail(err)
						}
						return
					}
					if first {
						op.BaseOffset = base
						op.LogStartOffset = p.log.StartOffset()
					}
				})
			}
		}
	}
	size := 0
	for ti := range r.Topics {
		for pi := range r.Topics[ti].Partitions {
			size += len(r.Topics[ti].Partitions[pi].Records)
		}
	}
	resp.ThrottleMillis = c.throttle(quotaProduce, size)
	if r.Acks == 0 {
		reply(nil)
		return
	}
	// Waiting happens off the read loop, so the connection's next produce is read (and
	// appended, in order) while this one's bookie writes are in flight.
	go func() {
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				if op := &resp.Topics[ti].Partitions[pi]; op.ErrorCode != 0 {
					op.BaseOffset = -1
				}
			}
		}
		reply(resp)
	}()
}

// produceTxnOf is the transaction of a produce's batches for Pulsar partition part: nil
// without a transactional id; every batch must then be transactional, of one producer.
func (s *Server) produceTxnOf(ctx context.Context, tid *string, part string, batches []producedBatch) (*txn.ID, error) {
	b0 := &batches[0]
	if tid == nil {
		for i := range batches {
			if batches[i].attributes&attrTxn != 0 {
				return nil, fmt.Errorf("%w: a transactional batch without a transactional id", kerr.InvalidTxnState)
			}
		}
		return nil, nil
	}
	for i := range batches {
		b := &batches[i]
		if b.attributes&attrTxn == 0 || b.producerID < 0 || b.producerID != b0.producerID || b.producerEpoch != b0.producerEpoch {
			return nil, fmt.Errorf("%w: a produce with transactional id %q must hold transactional batches of one producer", ErrInvalidRecord, *tid)
		}
	}
	id, err := s.produceTxn(ctx, *tid, b0.producerID, b0.producerEpoch, part)
	if err != nil {
		return nil, err
	}
	return &id, nil
}
