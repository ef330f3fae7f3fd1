package pf

import (
	"fmt"

	"github.com/apache/pulsar-client-go/pulsar"
)

// EFFECTIVELY_ONCE
//
// The output is deduplicated by the broker (deduplication must be enabled on the output's
// namespace or topic): every output carries a sequence id derived from its input's message
// id, and each input partition has a producer of its own whose name is derived from the
// function and the partition. Whatever instance processes a partition, before or after a
// crash, a move or a broker restart, it publishes through the same producer name with the
// same sequence ids, so the broker drops any output it stored already. Within a partition
// message ids grow, so sequence ids grow: the broker's "highest sequence id per producer"
// rule is all that is needed. The subscription is Failover, so one instance at a time reads
// a partition; the input is acknowledged only after the output's receipt; an output that
// fails stops the instance (the worker restarts it and the unacknowledged inputs come back).
//
// A sequence id packs (ledger id, entry id, batch index) into 63 bits:
//
//	bit 62 ........ 34 | 33 ........ 13 | 12 ...... 0
//	     ledger id      |    entry id    | batch index
//	     (29 bits)      |   (21 bits)    |  (13 bits)
//
// Entries per ledger are bounded by managedLedgerMaxEntriesPerLedger (50,000 by default) and
// a batch by the producer's batchingMaxMessages (1,000); a message id outside these bounds is
// an error that stops the instance rather than a sequence id that could collide.
const (
	seqBatchBits  = 13
	seqEntryBits  = 21
	seqLedgerBits = 29
)

func sequenceID(id pulsar.MessageID) (int64, error) {
	l, e, b := id.LedgerID(), id.EntryID(), int64(id.BatchIdx())
	if b < 0 {
		b = 0
	}
	if l < 0 || l >= 1<<seqLedgerBits || e < 0 || e >= 1<<seqEntryBits || b >= 1<<seqBatchBits {
		return 0, fmt.Errorf("pf: EFFECTIVELY_ONCE: message id %v does not fit a sequence id (ledger < 2^%d, entry < 2^%d, batch index < 2^%d)",
			id, seqLedgerBits, seqEntryBits, seqBatchBits)
	}
	return l<<(seqEntryBits+seqBatchBits) | e<<seqBatchBits | b, nil
}

// eoProducer is the output producer for input partition topic.
func (in *Instance) eoProducer(topic string) (pulsar.Producer, error) {
	if p, ok := in.eoOut[topic]; ok {
		return p, nil
	}
	p, err := in.client.CreateProducer(pulsar.ProducerOptions{
		Topic: in.conf.SinkSpecTopic, Name: in.conf.FQFN() + "-" + topic,
		DisableBatching: true, SendTimeout: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("pf: EFFECTIVELY_ONCE producer for %s: %w", topic, err)
	}
	in.eoOut[topic] = p
	return p, nil
}
