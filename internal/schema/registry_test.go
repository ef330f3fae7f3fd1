package schema

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/resources"
)

func newTestRegistry(t *testing.T) (*Registry, *resources.Resources) {
	t.Helper()
	store := memstore.New(memstore.Options{})
	t.Cleanup(func() { _ = store.Close() })
	res := resources.New(store)
	if err := res.EnsureDefaults(context.Background(), "standalone"); err != nil {
		t.Fatal(err)
	}
	return New(store, config.DefaultSchemaConfig(), nil), res
}

func setStrategy(t *testing.T, res *resources.Resources, s Strategy) {
	t.Helper()
	err := res.UpdateNamespace(context.Background(), "public", "default", func(p *resources.Policies) error {
		p.SchemaCompatibility = string(s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRegistryLifecycle(t *testing.T) {
	ctx := context.Background()
	r, res := newTestRegistry(t)
	id := ID{"public", "default", "t"}
	if _, err := r.Latest(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Latest on empty = %v", err)
	}
	setStrategy(t, res, Backward)
	v, err := r.Put(ctx, id, avro(userV1))
	if err != nil || v != 0 {
		t.Fatalf("first put = %d, %v", v, err)
	}
	if v, err := r.Put(ctx, id, avro(userV1)); err != nil || v != 0 {
		t.Fatalf("same schema again = %d, %v", v, err)
	}
	if _, err := r.Put(ctx, id, avro(userV3)); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("incompatible put = %v", err)
	}
	if v, err := r.Put(ctx, id, avro(userV2)); err != nil || v != 1 {
		t.Fatalf("compatible put = %d, %v", v, err)
	}
	if v, err := r.VersionOf(ctx, id, avro(userV1)); err != nil || v != 0 {
		t.Fatalf("VersionOf = %d, %v", v, err)
	}
	if _, err := r.Put(ctx, id, Schema{Type: Avro, Data: []byte("{")}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("invalid avro = %v", err)
	}
	e, err := r.Latest(ctx, id)
	if err != nil || e.Version != 1 || string(e.Schema.Data) != userV2 {
		t.Fatalf("Latest = %+v, %v", e, err)
	}
	// Soft delete: tombstone at 2, history by number still there, numbering goes on.
	if v, err := r.Delete(ctx, id, false); err != nil || v != 2 {
		t.Fatalf("Delete = %d, %v", v, err)
	}
	if _, err := r.Latest(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Latest after delete = %v", err)
	}
	if _, err := r.Delete(ctx, id, false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete = %v", err)
	}
	if _, err := r.Get(ctx, id, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(0) after delete = %v", err)
	}
	if all, _ := r.All(ctx, id); len(all) != 0 {
		t.Fatalf("All after delete = %v", all)
	}
	// After a delete anything goes, even what was incompatible.
	if v, err := r.Put(ctx, id, avro(userV3)); err != nil || v != 3 {
		t.Fatalf("put after delete = %d, %v", v, err)
	}
	if v, err := r.Delete(ctx, id, true); err != nil || v != 3 {
		t.Fatalf("force delete = %d, %v", v, err)
	}
	if v, err := r.Put(ctx, id, Schema{Type: String}); err != nil || v != 0 {
		t.Fatalf("put after force delete = %d, %v", v, err)
	}
	// Type change refused unless ALWAYS_COMPATIBLE.
	if _, err := r.Put(ctx, id, avro(userV1)); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("type change = %v", err)
	}
	st, err := r.Check(ctx, id, avro(userV1), AlwaysCompatible)
	if err != nil || st != AlwaysCompatible {
		t.Fatalf("Check ALWAYS_COMPATIBLE = %v %v", st, err)
	}
}

func TestRegistryPolicies(t *testing.T) {
	ctx := context.Background()
	r, res := newTestRegistry(t)
	pol, err := r.Policy(ctx, "public", "default")
	if err != nil || pol.Strategy != Full || !pol.AllowAutoUpdate || pol.ValidationEnforced {
		t.Fatalf("default policy = %+v, %v", pol, err)
	}
	if _, err := r.Policy(ctx, "public", "nope"); !errors.Is(err, resources.ErrNotFound) {
		t.Fatalf("missing namespace = %v", err)
	}
	f := false
	err = res.UpdateNamespace(ctx, "public", "default", func(p *resources.Policies) error {
		p.IsAllowAutoUpdateSchema = &f
		p.SchemaValidationEnforced = true
		p.SchemaAutoUpdateCompat = "Backward"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pol, _ = r.Policy(ctx, "public", "default")
	if pol.Strategy != Backward || pol.AllowAutoUpdate || !pol.ValidationEnforced {
		t.Fatalf("policy = %+v", pol)
	}
	id := ID{"public", "default", "p"}
	if _, err := r.GetOrCreate(ctx, id, avro(userV1)); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("GetOrCreate with auto update off = %v", err)
	}
	if err := r.CheckProducerWithoutSchema(ctx, id); err != nil {
		t.Fatalf("no schema yet: %v", err)
	}
	if _, err := r.Put(ctx, id, avro(userV1)); err != nil { // admin upload ignores auto update
		t.Fatal(err)
	}
	if v, err := r.GetOrCreate(ctx, id, avro(userV1)); err != nil || v != 0 {
		t.Fatalf("registered schema = %d, %v", v, err)
	}
	if err := r.CheckProducerWithoutSchema(ctx, id); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("enforced validation = %v", err)
	}
	if err := r.AttachConsumer(ctx, id, avro(userV3), true); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("consumer v3 = %v", err)
	}
	if err := r.AttachConsumer(ctx, id, avro(userV2), true); err != nil {
		t.Fatalf("consumer v2 = %v", err)
	}
	// A busy topic without schema takes the consumer without registering its schema.
	busy := ID{"public", "default", "busy"}
	if err := r.AttachConsumer(ctx, busy, avro(userV1), false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Latest(ctx, busy); !errors.Is(err, ErrNotFound) {
		t.Fatalf("busy topic got a schema: %v", err)
	}
}

// Concurrent adders of different compatible schemas get distinct versions: the
// create-if-absent write makes the loser re-read.
func TestRegistryConcurrentPut(t *testing.T) {
	ctx := context.Background()
	r, res := newTestRegistry(t)
	setStrategy(t, res, AlwaysCompatible)
	id := ID{"public", "default", "c"}
	var wg sync.WaitGroup
	versions := make([]int64, 8)
	for i := range versions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := Schema{Type: String, Data: []byte{byte(i)}}
			v, err := r.Put(ctx, id, s)
			if err != nil {
				t.Error(err)
			}
			versions[i] = v
		}()
	}
	wg.Wait()
	seen := map[int64]bool{}
	for _, v := range versions {
		if seen[v] {
			t.Fatalf("version %d given twice: %v", v, versions)
		}
		seen[v] = true
	}
}

func TestRegistryVersionBound(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	t.Cleanup(func() { _ = store.Close() })
	if err := resources.New(store).EnsureDefaults(ctx, "standalone"); err != nil {
		t.Fatal(err)
	}
	cfg := config.DefaultSchemaConfig()
	cfg.MaxVersionsPerTopic = 3
	cfg.CompatibilityStrategy = "ALWAYS_COMPATIBLE"
	r := New(store, cfg, nil)
	id := ID{"public", "default", "bounded"}
	for i := range 3 {
		if _, err := r.Put(ctx, id, Schema{Type: String, Data: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Put(ctx, id, Schema{Type: String, Data: []byte{9}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("fourth version: %v", err)
	}
	if _, err := r.Delete(ctx, id, false); !errors.Is(err, ErrInvalid) {
		t.Fatalf("tombstone past the bound: %v", err)
	}
	if _, err := r.Delete(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	if v, err := r.Put(ctx, id, Schema{Type: String, Data: []byte{9}}); err != nil || v != 0 {
		t.Fatalf("after force delete: %d, %v", v, err)
	}
}
