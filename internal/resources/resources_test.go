package resources_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/magnetar-io/magnetar/internal/resources"
)

func TestTenantsNamespacesPartitionedTopics(t *testing.T) {
	ctx := context.Background()
	r := resources.New(newStore())
	if err := r.CreateCluster(ctx, "standalone", resources.ClusterData{ServiceURL: "http://127.0.0.1:8080"}); err != nil {
		t.Fatal(err)
	}
	if err := r.CreateCluster(ctx, "standalone", resources.ClusterData{}); !errors.Is(err, resources.ErrAlreadyExists) {
		t.Fatalf("duplicate cluster: %v", err)
	}
	if cs, _ := r.Clusters(ctx); len(cs) != 1 || cs[0] != "standalone" {
		t.Fatalf("clusters %v", cs)
	}
	if err := r.CreateNamespace(ctx, "public", "default", resources.Policies{}); !errors.Is(err, resources.ErrNotFound) {
		t.Fatalf("namespace without tenant: %v", err)
	}
	if err := r.CreateTenant(ctx, "public", resources.TenantInfo{AllowedClusters: []string{"standalone"}}); err != nil {
		t.Fatal(err)
	}
	if err := r.CreateTenant(ctx, "bad/name", resources.TenantInfo{}); !errors.Is(err, resources.ErrInvalid) {
		t.Fatalf("bad name: %v", err)
	}
	for _, ns := range []string{"default", "other"} {
		if err := r.CreateNamespace(ctx, "public", ns, resources.Policies{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.CreatePartitionedTopic(ctx, "persistent", "public", "default", "p", resources.PartitionedTopicMetadata{Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	if m, err := r.PartitionedTopic(ctx, "persistent", "public", "default", "p"); err != nil || m.Partitions != 3 {
		t.Fatalf("partitioned %v %v", m, err)
	}
	if ts, _ := r.PartitionedTopics(ctx, "public", "default"); len(ts) != 1 || ts[0] != "persistent://public/default/p" {
		t.Fatalf("partitioned list %v", ts)
	}
	ns, err := r.Namespaces(ctx, "public")
	if err != nil || len(ns) != 2 || ns[0] != "public/default" {
		t.Fatalf("namespaces %v %v", ns, err)
	}
	if tn, _ := r.Tenants(ctx); len(tn) != 1 {
		t.Fatalf("tenants must not list namespaces as tenants: %v", tn)
	}
	if err := r.DeleteTenant(ctx, "public"); !errors.Is(err, resources.ErrNotEmpty) {
		t.Fatalf("delete non-empty tenant: %v", err)
	}
}

func TestConcurrentPolicyUpdatesAreNotLost(t *testing.T) {
	ctx := context.Background()
	r := resources.New(newStore())
	if err := r.CreateTenant(ctx, "t", resources.TenantInfo{}); err != nil {
		t.Fatal(err)
	}
	if err := r.CreateNamespace(ctx, "t", "n", resources.Policies{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := r.UpdateNamespace(ctx, "t", "n", func(p *resources.Policies) error {
				if p.Properties == nil {
					p.Properties = map[string]string{}
				}
				p.Properties[string(rune('a'+i))] = "x"
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	p, err := r.Namespace(ctx, "t", "n")
	if err != nil || len(p.Properties) != 20 {
		t.Fatalf("lost updates: %d properties, %v", len(p.Properties), err)
	}
}

func TestEnsureDefaultsIsIdempotent(t *testing.T) {
	ctx := context.Background()
	r := resources.New(newStore())
	for i := 0; i < 2; i++ {
		if err := r.EnsureDefaults(ctx, "standalone"); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if p, err := r.Namespace(ctx, "public", "default"); err != nil || len(p.ReplicationClusters) != 1 {
		t.Fatalf("public/default: %+v %v", p, err)
	}
}
