package topics

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// Producer is one producer attached to a topic (Topic.AddProducer). The front end keeps
// its own per-producer state (the Pulsar front end's receipt queue) next to it.
type Producer struct {
	t      *Topic
	id     uint64
	name   string
	epoch  uint64
	mode   AccessMode
	client ProducerClient
	// schemaVersion is the registered version of its schema (8 bytes), nil without one.
	schemaVersion []byte
	// principal is who it produces for, rechecked while it lives (reauth.go).
	principal auth.Principal
	metadata  map[string]string // ProducerSpec.Metadata, for stats

	// Set under t.mu; atomics so that a client may read them from its callbacks.
	topicEpoch atomic.Uint64
	ready      atomic.Bool // false while waiting for exclusive access
}

// ID is the front end's id of the producer (ProducerSpec.ID).
func (p *Producer) ID() uint64 { return p.id }

// Name is the producer's name on its topic.
func (p *Producer) Name() string { return p.name }

// Topic is the producer's topic.
func (p *Producer) Topic() *Topic { return p.t }

// Mode is the producer's access mode.
func (p *Producer) Mode() AccessMode { return p.mode }

// SchemaVersion is the registered version of the producer's schema (8 bytes, big-endian),
// nil for a producer without schema.
func (p *Producer) SchemaVersion() []byte { return p.schemaVersion }

// Ready tells whether the producer may publish (false while it waits for exclusive access).
func (p *Producer) Ready() bool { return p.ready.Load() }

// TopicEpoch is the topic epoch the producer was admitted at (bumped by each exclusive grant).
func (p *Producer) TopicEpoch() uint64 { return p.topicEpoch.Load() }

// LastSequenceID is the producer's last persisted sequence id when deduplication is on, -1
// otherwise (Pulsar's last_sequence_id in PRODUCER_SUCCESS).
func (p *Producer) LastSequenceID() int64 { return p.t.dedup.lastSequence(p.name) }

// Close detaches the producer (or drops it from the wait queue); publishes in flight still
// complete. When the exclusive holder leaves, the first waiting producer gets the topic.
func (p *Producer) Close() { p.t.removeProducer(p) }

// Message is one entry to publish.
type Message struct {
	// Data is the entry in the Pulsar format (wire.AppendEntry; BuildMessage for front ends
	// that do not speak Pulsar). The service keeps it: never modify it afterwards.
	Data []byte
	// Buf, if not nil, is the buffer Data was copied into by EntryBuffer: the service may
	// write into the room in front of Data and stores the entry without copying it again.
	Buf []byte
	// Meta is its parsed metadata (MetaOf, ParseEntryMeta); it travels with the entry.
	Meta EntryMeta
	// SequenceID and HighestSequenceID are the producer's sequence ids the entry covers
	// (deduplication); HighestSequenceID >= SequenceID.
	SequenceID, HighestSequenceID int64
	// Txn, when not nil, publishes within a transaction (Options.Transactions).
	Txn *TxnID
}

// ErrDuplicate is Publish's answer to a message deduplication recognised as stored before:
// nothing is stored (the Pulsar protocol answers a receipt with id (-1, -1)).
var ErrDuplicate = errors.New("topics: duplicate message")

// Publish stores m. It returns ErrDuplicate, or another error, when m is not stored (done is
// then never called); otherwise done is called exactly once, with m's position once it is
// durable, or with an error. Per producer, done calls come in Publish order.
func (p *Producer) Publish(m Message, done func(Position, error)) error {
	return p.PublishIndexed(m, func(pos Position, _ int64, err error) { done(pos, err) })
}

// PublishIndexed is Publish for front ends that number messages by index (the Kafka
// front end's offsets): done also gets the index of the entry's last message (index.go).
func (p *Producer) PublishIndexed(m Message, done func(pos Position, index int64, err error)) error {
	t := p.t
	txn := m.Txn
	if txn != nil {
		var err error
		if m, err = t.beforeTxnAppend(m); err != nil { // txn.go
			return err
		}
	}
	switch t.dedup.check(p.name, m.SequenceID, m.HighestSequenceID) {
	case dedupDuplicate:
		t.txnNotAppended(txn)
		return ErrDuplicate
	case dedupUnknown:
		t.txnNotAppended(txn)
		return fmt.Errorf("%w: sequence id %d of producer %q is still being persisted", wire.ErrPersistence, m.SequenceID, p.name)
	}
	count, size := int64(msgCount(m.Meta)), int64(len(m.Data))
	t.s.m.msgsIn.Add(float64(count))
	t.s.m.bytesIn.Add(float64(size))
	t.counters.msgsIn.Add(count)
	t.counters.bytesIn.Add(size)
	start := time.Now()
	high := m.HighestSequenceID
	t.publish(m.Data, m.Buf, m.Meta, func(pos Position, index int64, err error) {
		t.txnAppended(txn, pos, err)
		t.dedup.appended(p.name, high, pos, err)
		if err == nil {
			t.observePublish(start)
		}
		done(pos, index, err)
	})
	return nil
}
