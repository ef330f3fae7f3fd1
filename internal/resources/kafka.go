package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// The Kafka protocol front end's records (internal/kafka):
//
//	/kafka/groups/{url-escaped group id}          KafkaGroupRecord: the partitions a
//	                                              group committed offsets to (the offsets
//	                                              themselves are its subscriptions' cursors)
//	/kafka/producer-ids                           KafkaProducerIDs: the next producer id
//	/kafka/log-start/{url-escaped partition}      KafkaLogStart: DeleteRecords' low watermark
//	                                              of one partition (its full Pulsar name)
//	/kafka/offsets/{group}/{partition}            KafkaOffset: a group's commit on a
//	                                              partition another broker owned at the
//	                                              time (its own commits are cursors)
//	/kafka/scram/{url-escaped user}               KafkaScramUser: the user's SCRAM
//	                                              credentials, one per mechanism
//	/kafka/txn/{url-escaped transactional id}     KafkaTxnProducer: the producer id and
//	                                              epoch of a transactional id, and its
//	                                              transaction in progress
//
// Group ids are any string, hence the escaping: each is one key segment.
const (
	kafkaGroupsPrefix   = KafkaRoot + "groups/"
	kafkaProducerIDsKey = KafkaRoot + "producer-ids"
	kafkaLogStartPrefix = KafkaRoot + "log-start/"
	kafkaOffsetsPrefix  = KafkaRoot + "offsets/"
	kafkaScramPrefix    = KafkaRoot + "scram/"
	kafkaTxnPrefix      = KafkaRoot + "txn/"
)

// KafkaOffset is a committed offset kept in the metadata store, with the commit's time
// (Unix ms) so the newer of it and the partition's cursor wins.
type KafkaOffset struct {
	Offset   int64  `json:"offset"`
	Metadata string `json:"metadata,omitempty"`
	CommitMs int64  `json:"commitMs"`
}

func kafkaOffsetKey(group, partition string) string {
	return kafkaOffsetsPrefix + url.PathEscape(group) + "/" + url.PathEscape(strings.TrimPrefix(partition, "persistent://"))
}

// KafkaOffset returns a group's stored commit on partition; ErrNotFound if none.
func (r *Resources) KafkaOffset(ctx context.Context, group, partition string) (KafkaOffset, error) {
	var o KafkaOffset
	_, err := r.get(ctx, kafkaOffsetKey(group, partition), &o)
	return o, err
}

// PutKafkaOffset stores a group's commit on partition.
func (r *Resources) PutKafkaOffset(ctx context.Context, group, partition string, o KafkaOffset) error {
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	_, err = r.store.Put(ctx, kafkaOffsetKey(group, partition), b, metadata.AnyVersion)
	return err
}

// DeleteKafkaOffset removes a group's stored commit on partition, if any.
func (r *Resources) DeleteKafkaOffset(ctx context.Context, group, partition string) error {
	if err := r.del(ctx, kafkaOffsetKey(group, partition)); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// KafkaGroupRecord is a Kafka group's durable record.
type KafkaGroupRecord struct {
	Partitions []KafkaTopicPartition `json:"partitions"`
}

// KafkaTopicPartition names a partition the way the Kafka client did.
type KafkaTopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// KafkaProducerIDs is the producer-id counter.
type KafkaProducerIDs struct {
	Next int64 `json:"next"`
}

// KafkaLogStart is the first offset of a partition still readable after DeleteRecords, and
// the ledger that held it: once the managed ledger no longer starts at or before that
// ledger (trimmed since, or the topic deleted and made again) the record says nothing.
type KafkaLogStart struct {
	Offset   int64 `json:"offset"`
	LedgerID int64 `json:"ledgerId"`
}

func kafkaGroupKey(group string) string { return kafkaGroupsPrefix + url.PathEscape(group) }

// KafkaGroup returns a group's record; ErrNotFound if it has none.
func (r *Resources) KafkaGroup(ctx context.Context, group string) (KafkaGroupRecord, error) {
	var g KafkaGroupRecord
	_, err := r.get(ctx, kafkaGroupKey(group), &g)
	return g, err
}

// PutKafkaGroup writes a group's record (ErrInvalid for the empty group id, which Kafka
// refuses too).
func (r *Resources) PutKafkaGroup(ctx context.Context, group string, g KafkaGroupRecord) error {
	if group == "" {
		return fmt.Errorf("%w: empty group id", ErrInvalid)
	}
	b, err := json.Marshal(g)
	if err != nil {
		return err
	}
	_, err = r.store.Put(ctx, kafkaGroupKey(group), b, metadata.AnyVersion)
	return err
}

// DeleteKafkaGroup removes a group's record; ErrNotFound if it has none.
func (r *Resources) DeleteKafkaGroup(ctx context.Context, group string) error {
	return r.del(ctx, kafkaGroupKey(group))
}

// KafkaGroups lists the groups that have a record, sorted.
func (r *Resources) KafkaGroups(ctx context.Context) ([]string, error) {
	return r.escapedChildren(ctx, kafkaGroupsPrefix)
}

// escapedChildren is children for records named by a path-escaped name (Kafka group and
// user names may hold '/'), unescaped; a name that does not unescape is not ours and is
// left out.
func (r *Resources) escapedChildren(ctx context.Context, prefix string) ([]string, error) {
	names, err := r.children(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if u, err := url.PathUnescape(n); err == nil {
			out = append(out, u)
		}
	}
	return out, nil
}

// NextKafkaProducerIDs reserves n producer ids, unique in the cluster and across restarts,
// and returns the first (ids start at 1000, leaving small ones to tests and tools).
func (r *Resources) NextKafkaProducerIDs(ctx context.Context, n int64) (int64, error) {
	if n <= 0 {
		return 0, fmt.Errorf("%w: reserve %d producer ids", ErrInvalid, n)
	}
	if err := r.create(ctx, kafkaProducerIDsKey, KafkaProducerIDs{Next: 1000}); err != nil && !errors.Is(err, ErrAlreadyExists) {
		return 0, err
	}
	var first int64
	err := update(ctx, r, kafkaProducerIDsKey, func(c *KafkaProducerIDs) error {
		first = c.Next
		c.Next += n
		return nil
	})
	return first, err
}

func kafkaLogStartKey(partition string) string {
	return kafkaLogStartPrefix + url.PathEscape(strings.TrimPrefix(partition, "persistent://"))
}

// KafkaLogStart returns a partition's DeleteRecords record; ErrNotFound if it has none.
func (r *Resources) KafkaLogStart(ctx context.Context, partition string) (KafkaLogStart, error) {
	var s KafkaLogStart
	_, err := r.get(ctx, kafkaLogStartKey(partition), &s)
	return s, err
}

// PutKafkaLogStart writes a partition's DeleteRecords record.
func (r *Resources) PutKafkaLogStart(ctx context.Context, partition string, s KafkaLogStart) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = r.store.Put(ctx, kafkaLogStartKey(partition), b, metadata.AnyVersion)
	return err
}

// DeleteKafkaLogStart removes a partition's DeleteRecords record, if any.
func (r *Resources) DeleteKafkaLogStart(ctx context.Context, partition string) error {
	if err := r.del(ctx, kafkaLogStartKey(partition)); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// KafkaScramUser holds a user's SCRAM credentials keyed by mechanism name (SCRAM-SHA-256,
// SCRAM-SHA-512).
type KafkaScramUser struct {
	Credentials map[string]KafkaScramCredential `json:"credentials"`
}

// KafkaScramCredential is RFC 5802's stored form of a password: the salt, the iteration
// count, StoredKey = H(HMAC(SaltedPassword, "Client Key")) and ServerKey =
// HMAC(SaltedPassword, "Server Key"). Neither the password nor SaltedPassword is kept, so
// a copy of the store cannot be used to log in.
type KafkaScramCredential struct {
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"storedKey"`
	ServerKey  []byte `json:"serverKey"`
}

func kafkaScramKey(user string) string { return kafkaScramPrefix + url.PathEscape(user) }

// KafkaScramUser returns a user's SCRAM credentials; ErrNotFound if it has none.
func (r *Resources) KafkaScramUser(ctx context.Context, user string) (KafkaScramUser, error) {
	var u KafkaScramUser
	_, err := r.get(ctx, kafkaScramKey(user), &u)
	return u, err
}

// UpdateKafkaScramUser changes a user's credentials atomically (modify sees an empty
// record for a user without one); a record left with no credential is removed.
func (r *Resources) UpdateKafkaScramUser(ctx context.Context, user string, modify func(*KafkaScramUser) error) error {
	if user == "" {
		return fmt.Errorf("%w: empty SCRAM user name", ErrInvalid)
	}
	key := kafkaScramKey(user)
	for {
		var u KafkaScramUser
		ver, err := r.get(ctx, key, &u)
		switch {
		case errors.Is(err, ErrNotFound):
			ver = metadata.NotExists
		case err != nil:
			return err
		}
		if u.Credentials == nil {
			u.Credentials = map[string]KafkaScramCredential{}
		}
		if err := modify(&u); err != nil {
			return err
		}
		if len(u.Credentials) == 0 {
			if ver == metadata.NotExists {
				return nil
			}
			err = r.store.Delete(ctx, key, ver)
		} else {
			var b []byte
			if b, err = json.Marshal(u); err != nil {
				return err
			}
			_, err = r.store.Put(ctx, key, b, ver)
		}
		if errors.Is(err, metadata.ErrBadVersion) || errors.Is(err, metadata.ErrNotFound) {
			continue // changed under us: read again
		}
		return err
	}
}

// KafkaScramUsers lists the users with SCRAM credentials, sorted.
func (r *Resources) KafkaScramUsers(ctx context.Context) ([]string, error) {
	return r.escapedChildren(ctx, kafkaScramPrefix)
}

// KafkaTxnProducer is a Kafka transactional id's durable state (the Kafka front end's
// transaction coordinator, internal/kafka/txn.go): who holds the id now (producer id and
// epoch; an older epoch is fenced) and the transaction it has in progress, which is a
// transaction of internal/txn's coordinator (TxnMost/TxnLeast, TxnOpen).
type KafkaTxnProducer struct {
	ProducerID int64 `json:"producerId"`
	Epoch      int16 `json:"epoch"`
	// LastEpoch is the epoch before a timeout's abort bumped it (equal to Epoch
	// otherwise): that producer may still InitProducerId with it (KIP-360).
	LastEpoch int16 `json:"lastEpoch"`
	TimeoutMs int32 `json:"timeoutMs"`
	// Owner is the principal that created the id: with authorization on, only it and
	// superusers may use the id (its epoch bump would fence the owner's producer).
	Owner    string `json:"owner,omitempty"`
	TxnOpen  bool   `json:"txnOpen,omitempty"`
	TxnMost  uint64 `json:"txnMost,omitempty"`
	TxnLeast uint64 `json:"txnLeast,omitempty"`
	// Partitions are the Pulsar partitions the transaction wrote to (AddPartitionsToTxn).
	Partitions []string `json:"partitions,omitempty"`
	// Offsets are its TxnOffsetCommits, applied to the groups when it commits.
	Offsets []KafkaTxnOffset `json:"offsets,omitempty"`
	// Committing is set (durably) before the commit starts, so that a coordinator that
	// takes over finishes applying Offsets.
	Committing bool `json:"committing,omitempty"`
	// Completed is how its last transaction ended ("commit" or "abort"; empty before the
	// first): Kafka's CompleteCommit / CompleteAbort states in ListTransactions.
	Completed string `json:"completed,omitempty"`
}

// KafkaTxnOffset is one offset commit held by a transaction.
type KafkaTxnOffset struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"` // the Kafka topic name as the client sent it
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Metadata  string `json:"metadata,omitempty"`
}

func kafkaTxnKey(id string) string { return kafkaTxnPrefix + url.PathEscape(id) }

// KafkaTxnProducer returns a transactional id's record and its version; ErrNotFound if it
// has none.
func (r *Resources) KafkaTxnProducer(ctx context.Context, id string) (KafkaTxnProducer, metadata.Version, error) {
	var p KafkaTxnProducer
	ver, err := r.get(ctx, kafkaTxnKey(id), &p)
	return p, ver, err
}

// KafkaTxnProducers lists the transactional ids that have a record, sorted.
func (r *Resources) KafkaTxnProducers(ctx context.Context) ([]string, error) {
	return r.escapedChildren(ctx, kafkaTxnPrefix)
}

// PutKafkaTxnProducer writes a transactional id's record if it is still at version ver
// (metadata.NotExists for a new one) and returns the new version; ErrBadVersion (wrapped)
// when another writer changed it.
func (r *Resources) PutKafkaTxnProducer(ctx context.Context, id string, p KafkaTxnProducer, ver metadata.Version) (metadata.Version, error) {
	if id == "" {
		return 0, fmt.Errorf("%w: empty transactional id", ErrInvalid)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return 0, err
	}
	return r.store.Put(ctx, kafkaTxnKey(id), b, ver)
}
