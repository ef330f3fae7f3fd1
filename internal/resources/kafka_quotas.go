package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// KafkaQuota is one Kafka client quota entity and its settings (KIP-546: what kafka-configs
// --entity-type users/clients/ips sets), one record per entity under /kafka/quotas/.
type KafkaQuota struct {
	Entity []KafkaQuotaEntity `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// KafkaQuotaEntity is one component of a quota entity: a user, a client id or an ip.
type KafkaQuotaEntity struct {
	Type string  `json:"type"`
	Name *string `json:"name,omitempty"` // nil: the type's default entity
}

const kafkaQuotasPrefix = KafkaRoot + "quotas/"

func kafkaQuotaKey(key string) string { return kafkaQuotasPrefix + url.PathEscape(key) }

// KafkaQuotas returns every quota record.
func (r *Resources) KafkaQuotas(ctx context.Context) ([]KafkaQuota, error) {
	keys, err := r.escapedChildren(ctx, kafkaQuotasPrefix)
	if err != nil {
		return nil, err
	}
	out := make([]KafkaQuota, 0, len(keys))
	for _, k := range keys {
		var q KafkaQuota
		if _, err := r.get(ctx, kafkaQuotaKey(k), &q); errors.Is(err, ErrNotFound) {
			continue // removed since the listing
		} else if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// UpdateKafkaQuota changes the record called key (the caller's canonical name of the
// entity) atomically: modify sees an empty record when there is none, and a record left
// without values is removed.
func (r *Resources) UpdateKafkaQuota(ctx context.Context, key string, modify func(*KafkaQuota) error) error {
	if key == "" {
		return fmt.Errorf("%w: empty quota entity", ErrInvalid)
	}
	path := kafkaQuotaKey(key)
	for {
		var q KafkaQuota
		ver, err := r.get(ctx, path, &q)
		switch {
		case errors.Is(err, ErrNotFound):
			ver = metadata.NotExists
		case err != nil:
			return err
		}
		if q.Values == nil {
			q.Values = map[string]float64{}
		}
		if err := modify(&q); err != nil {
			return err
		}
		if len(q.Values) == 0 {
			if ver == metadata.NotExists {
				return nil
			}
			err = r.store.Delete(ctx, path, ver)
		} else {
			var b []byte
			if b, err = json.Marshal(q); err != nil {
				return err
			}
			_, err = r.store.Put(ctx, path, b, ver)
		}
		if errors.Is(err, metadata.ErrBadVersion) || errors.Is(err, metadata.ErrNotFound) {
			continue // changed under us: read again
		}
		return err
	}
}
