package functions

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// State values live in the metadata store, one key each, as a kind byte and the value:
//
//	0x00 value...        bytes (put/get state)
//	0x01 int64 BE        a counter (incr/get counter), 8 bytes as Pulsar's state store keeps them
//
// A counter increment is a CAS loop on the key's version, so concurrent instances never
// lose an increment. Values are bounded by functionsMaxStateValueBytes.
const (
	stateBytes   byte = 0
	stateCounter byte = 1
)

type stateStore struct {
	store    metadata.Store
	maxValue int
}

// StateValue is one key's value as read.
type StateValue struct {
	Counter bool
	Bytes   []byte // the value; for a counter its 8-byte big-endian form
	Number  int64
	Version int64
}

func stateKey(fqfn, key string) string { return prefixState + fqfn + "/" + key }

func (s stateStore) get(ctx context.Context, fqfn, key string) (StateValue, error) {
	kv, err := s.store.Get(ctx, stateKey(fqfn, key))
	if errors.Is(err, metadata.ErrNotFound) {
		return StateValue{}, fmt.Errorf("%w: state key %q of %s", ErrNotFound, key, fqfn)
	}
	if err != nil {
		return StateValue{}, err
	}
	return decodeState(kv)
}

func decodeState(kv metadata.KV) (StateValue, error) {
	if len(kv.Value) == 0 {
		return StateValue{}, fmt.Errorf("functions: state %s is corrupt (empty)", kv.Key)
	}
	v := StateValue{Bytes: kv.Value[1:], Version: int64(kv.Version)}
	if kv.Value[0] == stateCounter {
		if len(v.Bytes) != 8 {
			return StateValue{}, fmt.Errorf("functions: counter %s is corrupt (%d bytes)", kv.Key, len(v.Bytes))
		}
		v.Counter = true
		v.Number = int64(binary.BigEndian.Uint64(v.Bytes))
	}
	return v, nil
}

func (s stateStore) put(ctx context.Context, fqfn, key string, value []byte) error {
	if err := s.checkKey(key); err != nil {
		return err
	}
	if len(value) > s.maxValue {
		return badField("state", "value of %d bytes exceeds functionsMaxStateValueBytes (%d)", len(value), s.maxValue)
	}
	_, err := s.store.Put(ctx, stateKey(fqfn, key), append([]byte{stateBytes}, value...), metadata.AnyVersion)
	return err
}

func (s stateStore) putCounter(ctx context.Context, fqfn, key string, n int64) error {
	if err := s.checkKey(key); err != nil {
		return err
	}
	b := make([]byte, 9)
	b[0] = stateCounter
	binary.BigEndian.PutUint64(b[1:], uint64(n))
	_, err := s.store.Put(ctx, stateKey(fqfn, key), b, metadata.AnyVersion)
	return err
}

func (s stateStore) delete(ctx context.Context, fqfn, key string) error {
	err := s.store.Delete(ctx, stateKey(fqfn, key), metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNotFound) {
		return fmt.Errorf("%w: state key %q of %s", ErrNotFound, key, fqfn)
	}
	return err
}

// incr adds by to a counter (absent counts as 0) and returns the new value.
func (s stateStore) incr(ctx context.Context, fqfn, key string, by int64) (int64, error) {
	if err := s.checkKey(key); err != nil {
		return 0, err
	}
	k := stateKey(fqfn, key)
	for attempt := 0; ; attempt++ {
		var cur int64
		expected := metadata.NotExists
		kv, err := s.store.Get(ctx, k)
		switch {
		case err == nil:
			v, derr := decodeState(kv)
			if derr != nil {
				return 0, derr
			}
			if !v.Counter {
				return 0, badField("key", "state key %q holds bytes, not a counter", key)
			}
			cur, expected = v.Number, kv.Version
		case !errors.Is(err, metadata.ErrNotFound):
			return 0, err
		}
		b := make([]byte, 9)
		b[0] = stateCounter
		binary.BigEndian.PutUint64(b[1:], uint64(cur+by))
		_, err = s.store.Put(ctx, k, b, expected)
		if err == nil {
			return cur + by, nil
		}
		if !errors.Is(err, metadata.ErrBadVersion) || ctx.Err() != nil {
			return 0, err
		}
	}
}

// deleteAll removes a function's state (when the function is deleted).
func (s stateStore) deleteAll(ctx context.Context, fqfn string) error {
	kvs, err := s.store.List(ctx, prefixState+fqfn+"/")
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		if err := s.store.Delete(ctx, kv.Key, metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
			return err
		}
	}
	return nil
}

func (s stateStore) checkKey(key string) error {
	if key == "" || len(key) > 1024 {
		return badField("key", "state keys are 1 to 1024 bytes")
	}
	return nil
}
