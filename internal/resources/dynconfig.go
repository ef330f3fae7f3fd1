package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// The dynamic configuration overrides (DynamicConfigKey): a JSON object of key name ->
// value string, changed through any broker's admin API and watched by every broker.

// ParseDynamicConfig decodes the overrides record; nil or empty is no override.
func ParseDynamicConfig(value []byte) (map[string]string, error) {
	m := map[string]string{}
	if len(value) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(value, &m); err != nil {
		return map[string]string{}, fmt.Errorf("%w: dynamic configuration: %w", ErrInvalid, err)
	}
	return m, nil
}

// UpdateDynamicConfig applies change to the stored overrides with compare-and-set,
// retrying on a concurrent writer. An unreadable record is handed to change as empty (and
// so replaced) rather than blocking every change forever; replaced tells whether it was.
func (r *Resources) UpdateDynamicConfig(ctx context.Context, change func(map[string]string)) (replaced bool, err error) {
	for {
		m := map[string]string{}
		ver := metadata.NotExists
		kv, err := r.store.Get(ctx, DynamicConfigKey)
		switch {
		case err == nil:
			ver = kv.Version
			if m, err = ParseDynamicConfig(kv.Value); err != nil {
				replaced = true
			}
		case errors.Is(err, metadata.ErrNotFound):
		default:
			return replaced, err
		}
		change(m)
		b, _ := json.Marshal(m)
		if _, err = r.store.Put(ctx, DynamicConfigKey, b, ver); errors.Is(err, metadata.ErrBadVersion) {
			continue
		} else if err != nil {
			return replaced, err
		}
		return replaced, nil
	}
}
