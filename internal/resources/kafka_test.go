package resources_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/magnetar-io/magnetar/internal/resources"
)

func TestKafkaRecords(t *testing.T) {
	ctx := context.Background()
	r := resources.New(newStore())
	// Group ids are any string: "/" and "%" must round-trip as one key segment each.
	groups := []string{"plain", "a/b", "100%"}
	for i, g := range groups {
		if err := r.PutKafkaGroup(ctx, g, resources.KafkaGroupRecord{Partitions: []resources.KafkaTopicPartition{{Topic: "t", Partition: int32(i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := r.KafkaGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(groups)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("groups %q, want %q", got, want)
	}
	if err := r.PutKafkaGroup(ctx, "", resources.KafkaGroupRecord{}); !errors.Is(err, resources.ErrInvalid) {
		t.Fatalf("empty group id: %v", err)
	}
	if g, err := r.KafkaGroup(ctx, "a/b"); err != nil || g.Partitions[0].Partition != 1 {
		t.Fatalf("a/b: %+v %v", g, err)
	}
	if err := r.DeleteKafkaGroup(ctx, "a/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.KafkaGroup(ctx, "a/b"); !errors.Is(err, resources.ErrNotFound) {
		t.Fatalf("deleted group: %v", err)
	}

	// Producer ids are unique under concurrent reservations.
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first, err := r.NextKafkaProducerIDs(ctx, 3)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for id := first; id < first+3; id++ {
				if seen[id] || id < 1000 {
					t.Errorf("producer id %d twice or too small", id)
				}
				seen[id] = true
			}
		}()
	}
	wg.Wait()
	if _, err := r.NextKafkaProducerIDs(ctx, 0); !errors.Is(err, resources.ErrInvalid) {
		t.Fatalf("reserving 0: %v", err)
	}

	p := "persistent://public/default/t-partition-0"
	if _, err := r.KafkaLogStart(ctx, p); !errors.Is(err, resources.ErrNotFound) {
		t.Fatalf("no record yet: %v", err)
	}
	if err := r.PutKafkaLogStart(ctx, p, resources.KafkaLogStart{Offset: 42, LedgerID: 7}); err != nil {
		t.Fatal(err)
	}
	if s, err := r.KafkaLogStart(ctx, p); err != nil || s.Offset != 42 || s.LedgerID != 7 {
		t.Fatalf("log start %+v %v", s, err)
	}
	if err := r.DeleteKafkaLogStart(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteKafkaLogStart(ctx, p); err != nil {
		t.Fatalf("deleting a missing record: %v", err)
	}

	// Offsets of a group on a partition, group ids with "/" included.
	if _, err := r.KafkaOffset(ctx, "a/b", p); !errors.Is(err, resources.ErrNotFound) {
		t.Fatalf("no offset yet: %v", err)
	}
	if err := r.PutKafkaOffset(ctx, "a/b", p, resources.KafkaOffset{Offset: 7, Metadata: "m", CommitMs: 9}); err != nil {
		t.Fatal(err)
	}
	if o, err := r.KafkaOffset(ctx, "a/b", p); err != nil || o != (resources.KafkaOffset{Offset: 7, Metadata: "m", CommitMs: 9}) {
		t.Fatalf("offset %+v %v", o, err)
	}
	if err := r.DeleteKafkaOffset(ctx, "a/b", p); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteKafkaOffset(ctx, "a/b", p); err != nil {
		t.Fatalf("deleting a missing offset: %v", err)
	}
}

func TestKafkaScramUsers(t *testing.T) {
	ctx := context.Background()
	r := resources.New(newStore())
	cred := resources.KafkaScramCredential{Salt: []byte("salt"), Iterations: 4096, StoredKey: []byte{1}, ServerKey: []byte{2}}
	set := func(mech string, c *resources.KafkaScramCredential) func(*resources.KafkaScramUser) error {
		return func(u *resources.KafkaScramUser) error {
			if c == nil {
				delete(u.Credentials, mech)
			} else {
				u.Credentials[mech] = *c
			}
			return nil
		}
	}
	// User names are any string, like group ids.
	for _, u := range []string{"alice", "a/b"} {
		if err := r.UpdateKafkaScramUser(ctx, u, set("SCRAM-SHA-256", &cred)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.UpdateKafkaScramUser(ctx, "alice", set("SCRAM-SHA-512", &cred)); err != nil {
		t.Fatal(err)
	}
	if u, err := r.KafkaScramUser(ctx, "alice"); err != nil || len(u.Credentials) != 2 || u.Credentials["SCRAM-SHA-512"].Iterations != 4096 {
		t.Fatalf("alice: %+v %v", u, err)
	}
	if got, err := r.KafkaScramUsers(ctx); err != nil || !slices.Equal(got, []string{"a/b", "alice"}) {
		t.Fatalf("users %q %v", got, err)
	}
	// Removing the last credential removes the record.
	if err := r.UpdateKafkaScramUser(ctx, "a/b", set("SCRAM-SHA-256", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.KafkaScramUser(ctx, "a/b"); !errors.Is(err, resources.ErrNotFound) {
		t.Fatalf("a/b after its last credential went: %v", err)
	}
	if err := r.UpdateKafkaScramUser(ctx, "", set("SCRAM-SHA-256", &cred)); !errors.Is(err, resources.ErrInvalid) {
		t.Fatalf("empty user: %v", err)
	}
}
