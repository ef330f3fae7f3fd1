package topics

import (
	"strconv"

	"github.com/magnetar-io/magnetar/internal/schema"
)

// The kinds a front end names when it attaches producers and consumers. Their numeric values
// are the Pulsar protocol's, so the Pulsar front end converts by a cast; other front ends pick
// the one that matches their semantics.

// SubType is a subscription's type (Pulsar's CommandSubscribe.SubType).
type SubType int32

// Subscription types.
const (
	// Exclusive: one consumer; a second is refused.
	Exclusive SubType = 0
	// Shared: messages go round-robin to the consumers with permits (a queue).
	Shared SubType = 1
	// Failover: one active consumer (order kept), the others stand by.
	Failover SubType = 2
	// KeyShared: a key's messages always go to the same consumer, in order.
	KeyShared SubType = 3
)

func (t SubType) String() string {
	switch t {
	case Exclusive:
		return "Exclusive"
	case Shared:
		return "Shared"
	case Failover:
		return "Failover"
	case KeyShared:
		return "Key_Shared"
	}
	return "SubType(" + strconv.Itoa(int(t)) + ")"
}

// AccessMode is a producer's access to its topic (Pulsar's ProducerAccessMode).
type AccessMode int32

// Producer access modes.
const (
	// SharedAccess: any number of producers.
	SharedAccess AccessMode = 0
	// ExclusiveAccess: refused while other producers are connected.
	ExclusiveAccess AccessMode = 1
	// WaitForExclusive: queued until the topic has no other producer.
	WaitForExclusive AccessMode = 2
	// ExclusiveWithFencing: the other producers are disconnected.
	ExclusiveWithFencing AccessMode = 3
)

// String is Pulsar's JSON name of the mode (publishers[].accessMode).
func (m AccessMode) String() string {
	switch m {
	case ExclusiveAccess:
		return "Exclusive"
	case ExclusiveWithFencing:
		return "ExclusiveWithFencing"
	case WaitForExclusive:
		return "WaitForExclusive"
	}
	return "Shared"
}

// KeySharedMode is how a Key_Shared subscription assigns keys (Pulsar's KeySharedMode).
type KeySharedMode int32

// Key_Shared modes.
const (
	// AutoSplit spreads the hash slots over the consumers by consistent hashing.
	AutoSplit KeySharedMode = 0
	// Sticky: each consumer declares the hash ranges it takes.
	Sticky KeySharedMode = 1
)

func (m KeySharedMode) String() string {
	if m == Sticky {
		return "STICKY"
	}
	return "AUTO_SPLIT"
}

// HashRange is an inclusive range of Key_Shared hash slots (0..65535).
type HashRange struct{ Start, End int32 }

// KeySharedPolicy is a Key_Shared consumer's choice of mode and, for Sticky, its ranges.
type KeySharedPolicy struct {
	Mode   KeySharedMode
	Ranges []HashRange // Sticky only
	// AllowOutOfOrder gives up per-key order while consumers come and go, for speed.
	AllowOutOfOrder bool
}

// ProducerSpec describes a producer being attached.
type ProducerSpec struct {
	// ID is the front end's id for the producer (publishers[].producerId in stats).
	ID uint64
	// Name identifies the producer on its topic (deduplication keys on it); empty: the
	// service generates one (NewProducerName).
	Name string
	// Epoch orders reconnections of one producer: a newer epoch replaces the connected one.
	Epoch uint64
	Mode  AccessMode
	// Schema is the producer's schema, registered or checked against the topic's (nil:
	// none, which the namespace's schema policy may refuse).
	Schema *schema.Schema
	// Metadata is the client's key/value metadata, shown in stats (publishers[].metadata).
	Metadata map[string]string
	// InitialSubscription, when set on a persistent topic, is a durable subscription created
	// at the earliest message before the producer is admitted, unless it exists (Pulsar's
	// initial_subscription_name: a dead-letter producer makes its topic's subscription so
	// the first dead letters are kept for it).
	InitialSubscription string
}

// ProducerClient is the front end's side of one producer. Its methods may be called with
// the topic's lock held: they must not call back into the service synchronously.
type ProducerClient interface {
	// Granted tells a producer that waited for exclusive access that it has the topic now.
	// p is the producer AddProducer returned (it may not have returned yet).
	Granted(p *Producer)
	// Disconnect tells the client the broker closed the producer (fenced by an exclusive
	// one, backlog quota, unload, termination); it may reconnect.
	Disconnect()
	// Refuse tells a producer waiting for exclusive access that it will never get it.
	Refuse(err error)
	// Alive tells whether the client is still connected (a gone waiter is skipped).
	Alive() bool
	// Address and Version describe the client in stats.
	Address() string
	Version() string
}

// ConsumerSpec describes a consumer being attached to a subscription.
type ConsumerSpec struct {
	// ID is the front end's id for the consumer (part of its Key_Shared ring points).
	ID       uint64
	Name     string
	Priority int32 // Shared priority level: lower is served first
	// Subscription names the subscription; Type is its type.
	Subscription string
	Type         SubType
	// Durable subscriptions keep a cursor across consumers and restarts; a non-durable one
	// (a reader) ends with its last consumer.
	Durable bool
	// InitialEarliest starts a new durable subscription at the oldest stored message
	// instead of the next one published.
	InitialEarliest bool
	// Start is where a non-durable subscription starts (Earliest, Latest or an entry); nil
	// means the initial position.
	Start *Position
	// KeyShared is the Key_Shared policy (nil: AutoSplit).
	KeyShared *KeySharedPolicy
	// Create allows auto-creating the topic (Subscribe's topic load).
	Create bool
	// Metadata is the client's key/value metadata, shown in stats (consumers[].metadata).
	Metadata map[string]string
	// ReadCompacted reads the compacted ledger up to the compaction horizon first
	// (compaction_read.go); Exclusive and Failover subscriptions of persistent topics only.
	ReadCompacted bool
}

// ConsumerClient is the front end's side of one consumer. Its methods may be called with
// the subscription's lock held: they must queue their work (a frame to write) and not call
// back into the service synchronously.
type ConsumerClient interface {
	// Send delivers one entry holding count messages. redeliveries is how often it was
	// delivered before; ackSet, when not nil, has a set bit per member of a batch still
	// unacknowledged.
	Send(e Entry, redeliveries uint32, count int, ackSet []int64)
	// ActiveChanged tells a Failover consumer whether it is the active one.
	ActiveChanged(active bool)
	// Disconnect tells the client the broker closed the consumer (unload, seek, deletion,
	// another consumer's forced unsubscribe); it may subscribe again.
	Disconnect()
	// Address describes the client in stats and seeds its Key_Shared ring points.
	Address() string
}

// ConsumerVersion is an optional method of a ConsumerClient: the client library's version,
// shown in stats (consumers[].clientVersion).
type ConsumerVersion interface {
	Version() string
}

// ConsumerWritability is an optional method of a ConsumerClient: while Writable is false
// (the client does not read what was sent) the dispatcher sends it nothing more, and the
// front end calls Consumer.Resume once it is true again. It bounds what a front end queues
// for a client that stopped reading.
type ConsumerWritability interface {
	Writable() bool
}

// AckID names an acknowledged entry. AckSet, when it has a set bit, acknowledges only the
// members of a batch entry whose bits are clear (Pulsar's ack_set: set = not acknowledged).
type AckID struct {
	Position Position
	AckSet   []int64
}
