package metadata

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors every Store implementation returns (wrapped with %w where context helps).
var (
	ErrNotFound    = errors.New("metadata: key not found")
	ErrBadVersion  = errors.New("metadata: version mismatch") // a CAS lost, or "must not exist" found the key
	ErrSessionLost = errors.New("metadata: session lost")
	ErrClosed      = errors.New("metadata: store closed")
)

// Version is a key's modification version. Versions only grow while a key exists.
type Version int64

// Special expected versions for Put and Delete.
const (
	AnyVersion Version = -1 // no CAS: write whatever is there
	NotExists  Version = 0  // Put only: create, failing with ErrBadVersion if the key exists
)

// KV is one key with its value and version.
type KV struct {
	Key     string
	Value   []byte
	Version Version
}

// EventType says what happened to a watched key.
type EventType int

// Event types.
const (
	EventPut EventType = iota + 1
	EventDelete
)

// Event is one change seen by a watch. For EventDelete, Value is nil.
type Event struct {
	Type    EventType
	Key     string
	Value   []byte
	Version Version
}

// Store is the metadata store: a versioned key-value store with CAS, prefix listing, watches,
// sessions with session-bound (ephemeral) keys, and leader election. Keys are '/'-separated
// paths such as "/ledgers/00000000000000000042".
type Store interface {
	// Get returns the key or ErrNotFound.
	Get(ctx context.Context, key string) (KV, error)
	// Put writes the key if its version equals expected (AnyVersion: always; NotExists:
	// only if absent) and returns the new version; otherwise ErrBadVersion.
	Put(ctx context.Context, key string, value []byte, expected Version) (Version, error)
	// Delete removes the key if its version equals expected (or AnyVersion); ErrNotFound if
	// absent, ErrBadVersion on a version mismatch.
	Delete(ctx context.Context, key string, expected Version) error
	// List returns every key that starts with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]KV, error)
	// Watch reports changes to key (or to every key under it when prefix is true). It first
	// delivers the current state as EventPut events, then every later change, in order,
	// until ctx is done; then the channel is closed. A consumer that falls too far behind
	// gets its channel closed early and must watch again.
	Watch(ctx context.Context, key string, prefix bool) (<-chan Event, error)
	// NewSession starts a session kept alive in the background; keys put through it vanish
	// when it ends (Close, or no keep-alive for ttl).
	NewSession(ctx context.Context, ttl time.Duration) (Session, error)
	// Close releases the store's resources; it does not stop an embedded server it did not start.
	Close() error
}

// Session owns ephemeral keys and leadership. A candidacy in an election is itself an
// ephemeral key, "<election>/<session id in hex>", holding the campaign value (etcd's
// concurrency.Election layout): it shows up in List and Watch of a prefix that covers it. When the store stops hearing from it for its
// ttl, its keys are deleted and Done is closed.
type Session interface {
	// PutEphemeral is Put for a key bound to this session.
	PutEphemeral(ctx context.Context, key string, value []byte, expected Version) (Version, error)
	// Campaign blocks until this session is the leader of election (or ctx is done), then
	// publishes value as the leader's value.
	Campaign(ctx context.Context, election string, value []byte) (Leadership, error)
	// Done is closed when the session has ended or was lost.
	Done() <-chan struct{}
	// Close ends the session, deleting its ephemeral keys and resigning leaderships.
	Close() error
}

// Leadership is won by Campaign and held until Resign or the session ends.
type Leadership interface {
	Resign(ctx context.Context) error
	Done() <-chan struct{}
}

// LeaderReader is implemented by stores that can say who leads an election (memstore and
// etcdstore both do). It sits beside Store rather than in it so that wrappers and fakes of
// Store written elsewhere keep compiling; call it through Leader.
type LeaderReader interface {
	// Leader returns the current leader's candidacy key and the value it campaigned with,
	// or ErrNotFound when the election has no candidates.
	Leader(ctx context.Context, election string) (KV, error)
}

// ErrNotSupported is returned by helpers whose optional interface a Store does not implement.
var ErrNotSupported = errors.New("metadata: not supported by this store")

// Leader returns the leader of election in s (see LeaderReader).
func Leader(ctx context.Context, s Store, election string) (KV, error) {
	lr, ok := s.(LeaderReader)
	if !ok {
		return KV{}, fmt.Errorf("%w: %T cannot read election leaders", ErrNotSupported, s)
	}
	return lr.Leader(ctx, election)
}
