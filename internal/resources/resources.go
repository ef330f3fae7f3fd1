package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// Errors of this package; the admin API maps them to HTTP statuses.
var (
	ErrNotFound      = errors.New("resources: not found")
	ErrAlreadyExists = errors.New("resources: already exists")
	ErrNotEmpty      = errors.New("resources: not empty")
	ErrInvalid       = errors.New("resources: invalid name or value")
)

// ClusterData describes a cluster (Pulsar's ClusterData JSON).
type ClusterData struct {
	ServiceURL          string   `json:"serviceUrl,omitempty"`
	ServiceURLTLS       string   `json:"serviceUrlTls,omitempty"`
	BrokerServiceURL    string   `json:"brokerServiceUrl,omitempty"`
	BrokerServiceURLTLS string   `json:"brokerServiceUrlTls,omitempty"`
	PeerClusterNames    []string `json:"peerClusterNames,omitempty"`
}

// TenantInfo is a tenant's admin roles and allowed clusters (Pulsar's TenantInfo JSON).
type TenantInfo struct {
	AdminRoles      []string `json:"adminRoles"`
	AllowedClusters []string `json:"allowedClusters"`
}

// PartitionedTopicMetadata records that a topic is partitioned and into how many partitions.
type PartitionedTopicMetadata struct {
	Partitions int               `json:"partitions"`
	Properties map[string]string `json:"properties,omitempty"`
	// CreationTimestamp is when the partitioned topic was recorded (Unix ms, set by
	// CreatePartitionedTopic; 0 in records written before it existed). Not part of
	// Pulsar's JSON: the admin API leaves it out of what it answers.
	CreationTimestamp int64 `json:"creationTimestamp,omitempty"`
}

// Resources reads and writes the cluster configuration in a metadata store.
type Resources struct {
	store      metadata.Store
	numBundles int // bundles of a new namespace that names none (0: DefaultNumBundles); see bundles.go
}

// New returns Resources over store.
func New(store metadata.Store) *Resources { return &Resources{store: store} }

// Store is the underlying metadata store.
func (r *Resources) Store() metadata.Store { return r.store }

// validName accepts Pulsar's characters for tenant, namespace and cluster names.
func validName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '_', c == '.', c == '=', c == ':':
		default:
			return false
		}
	}
	return s != "." && s != ".."
}

func checkNames(names ...string) error {
	for _, n := range names {
		if !validName(n) {
			return fmt.Errorf("%w: %q", ErrInvalid, n)
		}
	}
	return nil
}

func (r *Resources) get(ctx context.Context, key string, v any) (metadata.Version, error) {
	kv, err := r.store.Get(ctx, key)
	if errors.Is(err, metadata.ErrNotFound) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(kv.Value, v); err != nil {
		return 0, fmt.Errorf("resources: corrupt value at %s: %w", key, err)
	}
	return kv.Version, nil
}

func (r *Resources) create(ctx context.Context, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = r.store.Put(ctx, key, b, metadata.NotExists)
	if errors.Is(err, metadata.ErrBadVersion) {
		return ErrAlreadyExists
	}
	return err
}

// update runs a read-modify-CAS loop on the JSON value at key.
func update[T any](ctx context.Context, r *Resources, key string, modify func(*T) error) error {
	for {
		var v T
		ver, err := r.get(ctx, key, &v)
		if err != nil {
			return err
		}
		if err := modify(&v); err != nil {
			return err
		}
		b, err := json.Marshal(&v)
		if err != nil {
			return err
		}
		_, err = r.store.Put(ctx, key, b, ver)
		if errors.Is(err, metadata.ErrBadVersion) {
			continue
		}
		return err
	}
}

// children lists the names directly below prefix (one path segment), sorted.
func (r *Resources) children(ctx context.Context, prefix string) ([]string, error) {
	kvs, err := r.store.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := []string{}
	for _, kv := range kvs {
		name, _, _ := strings.Cut(strings.TrimPrefix(kv.Key, prefix), "/")
		if name != "" && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// EnsureDefaults creates the cluster, tenant "public" and namespace "public/default" when
// they do not exist yet, as Pulsar's standalone does on first start; a restart finds them and
// moves on.
func (r *Resources) EnsureDefaults(ctx context.Context, cluster string) error {
	steps := []func() error{
		func() error { return r.CreateCluster(ctx, cluster, ClusterData{}) },
		func() error { return r.CreateTenant(ctx, "public", TenantInfo{AllowedClusters: []string{cluster}}) },
		func() error {
			return r.CreateNamespace(ctx, "public", "default", Policies{ReplicationClusters: []string{cluster}})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil && !errors.Is(err, ErrAlreadyExists) {
			return err
		}
	}
	return nil
}

// Clusters lists cluster names.
func (r *Resources) Clusters(ctx context.Context) ([]string, error) {
	return r.children(ctx, ClustersPrefix)
}

// Cluster returns one cluster.
func (r *Resources) Cluster(ctx context.Context, name string) (ClusterData, error) {
	var c ClusterData
	if err := checkNames(name); err != nil {
		return c, err
	}
	_, err := r.get(ctx, ClustersPrefix+name, &c)
	return c, err
}

// CreateCluster creates a cluster; ErrAlreadyExists if it exists.
func (r *Resources) CreateCluster(ctx context.Context, name string, c ClusterData) error {
	if err := checkNames(name); err != nil {
		return err
	}
	return r.create(ctx, ClustersPrefix+name, c)
}

// Tenants lists tenant names.
func (r *Resources) Tenants(ctx context.Context) ([]string, error) {
	return r.children(ctx, PoliciesPrefix)
}

// Tenant returns one tenant.
func (r *Resources) Tenant(ctx context.Context, name string) (TenantInfo, error) {
	var t TenantInfo
	if err := checkNames(name); err != nil {
		return t, err
	}
	_, err := r.get(ctx, PoliciesPrefix+name, &t)
	return t, err
}

// CreateTenant creates a tenant; ErrAlreadyExists if it exists.
func (r *Resources) CreateTenant(ctx context.Context, name string, t TenantInfo) error {
	if err := checkNames(name); err != nil {
		return err
	}
	normalizeTenant(&t)
	return r.create(ctx, PoliciesPrefix+name, t)
}

// UpdateTenant replaces a tenant's info.
func (r *Resources) UpdateTenant(ctx context.Context, name string, t TenantInfo) error {
	if err := checkNames(name); err != nil {
		return err
	}
	normalizeTenant(&t)
	return update(ctx, r, PoliciesPrefix+name, func(old *TenantInfo) error { *old = t; return nil })
}

// DeleteTenant deletes a tenant that has no namespaces.
func (r *Resources) DeleteTenant(ctx context.Context, name string) error {
	if err := checkNames(name); err != nil {
		return err
	}
	ns, err := r.Namespaces(ctx, name)
	if err != nil {
		return err
	}
	if len(ns) > 0 {
		return fmt.Errorf("%w: tenant %s has namespaces %v", ErrNotEmpty, name, ns)
	}
	return r.del(ctx, PoliciesPrefix+name)
}

func normalizeTenant(t *TenantInfo) {
	if t.AdminRoles == nil {
		t.AdminRoles = []string{}
	}
	if t.AllowedClusters == nil {
		t.AllowedClusters = []string{}
	}
}

func (r *Resources) del(ctx context.Context, key string) error {
	err := r.store.Delete(ctx, key, metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNotFound) {
		return ErrNotFound
	}
	return err
}

// Namespaces lists "tenant/namespace" names of a tenant; ErrNotFound if the tenant is missing.
func (r *Resources) Namespaces(ctx context.Context, tenant string) ([]string, error) {
	if _, err := r.Tenant(ctx, tenant); err != nil {
		return nil, err
	}
	names, err := r.children(ctx, PoliciesPrefix+tenant+"/")
	if err != nil {
		return nil, err
	}
	for i, n := range names {
		names[i] = tenant + "/" + n
	}
	return names, nil
}

// Namespace returns a namespace's policies.
func (r *Resources) Namespace(ctx context.Context, tenant, ns string) (Policies, error) {
	var p Policies
	if err := checkNames(tenant, ns); err != nil {
		return p, err
	}
	_, err := r.get(ctx, PoliciesPrefix+tenant+"/"+ns, &p)
	return p, err
}

// CreateNamespace creates a namespace under an existing tenant.
func (r *Resources) CreateNamespace(ctx context.Context, tenant, ns string, p Policies) error {
	if err := checkNames(tenant, ns); err != nil {
		return err
	}
	if _, err := r.Tenant(ctx, tenant); err != nil {
		return fmt.Errorf("tenant %s: %w", tenant, err)
	}
	b, err := r.bundlesFor(p.Bundles)
	if err != nil {
		return err
	}
	p.Bundles = b
	return r.create(ctx, PoliciesPrefix+tenant+"/"+ns, p)
}

// UpdateNamespace changes a namespace's policies by read-modify-CAS.
func (r *Resources) UpdateNamespace(ctx context.Context, tenant, ns string, modify func(*Policies) error) error {
	if err := checkNames(tenant, ns); err != nil {
		return err
	}
	return update(ctx, r, PoliciesPrefix+tenant+"/"+ns, modify)
}

// DeleteNamespace deletes a namespace's policies; ErrNotEmpty while it has topics.
func (r *Resources) DeleteNamespace(ctx context.Context, tenant, ns string) error {
	if err := checkNames(tenant, ns); err != nil {
		return err
	}
	for _, prefix := range []string{PartitionedTopicsPrefix, TopicsPrefix} {
		kvs, err := r.store.List(ctx, prefix+tenant+"/"+ns+"/")
		if err != nil {
			return err
		}
		if len(kvs) > 0 {
			return fmt.Errorf("%w: namespace %s/%s still has topics", ErrNotEmpty, tenant, ns)
		}
	}
	return r.del(ctx, PoliciesPrefix+tenant+"/"+ns)
}

func partitionedKey(domain, tenant, ns, topic string) string {
	return PartitionedTopicsPrefix + tenant + "/" + ns + "/" + domain + "/" + topic
}

// PartitionedTopic returns a partitioned topic's metadata; ErrNotFound if it is not partitioned.
func (r *Resources) PartitionedTopic(ctx context.Context, domain, tenant, ns, topic string) (PartitionedTopicMetadata, error) {
	var m PartitionedTopicMetadata
	_, err := r.get(ctx, partitionedKey(domain, tenant, ns, topic), &m)
	return m, err
}

// CreatePartitionedTopic records a partitioned topic; ErrAlreadyExists if it exists.
func (r *Resources) CreatePartitionedTopic(ctx context.Context, domain, tenant, ns, topic string, m PartitionedTopicMetadata) error {
	if m.Partitions < 1 {
		return fmt.Errorf("%w: partitions must be at least 1, got %d", ErrInvalid, m.Partitions)
	}
	if m.CreationTimestamp == 0 {
		m.CreationTimestamp = time.Now().UnixMilli()
	}
	return r.create(ctx, partitionedKey(domain, tenant, ns, topic), m)
}

// UpdatePartitionedTopic changes a partitioned topic's metadata by read-modify-CAS.
func (r *Resources) UpdatePartitionedTopic(ctx context.Context, domain, tenant, ns, topic string, modify func(*PartitionedTopicMetadata) error) error {
	return update(ctx, r, partitionedKey(domain, tenant, ns, topic), modify)
}

// DeletePartitionedTopic removes a partitioned topic's metadata.
func (r *Resources) DeletePartitionedTopic(ctx context.Context, domain, tenant, ns, topic string) error {
	return r.del(ctx, partitionedKey(domain, tenant, ns, topic))
}

// PartitionedTopics lists the partitioned topic names ("domain://tenant/ns/topic") of a namespace.
func (r *Resources) PartitionedTopics(ctx context.Context, tenant, ns string) ([]string, error) {
	prefix := PartitionedTopicsPrefix + tenant + "/" + ns + "/"
	kvs, err := r.store.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		domain, topic, ok := strings.Cut(strings.TrimPrefix(kv.Key, prefix), "/")
		if ok {
			out = append(out, domain+"://"+tenant+"/"+ns+"/"+topic)
		}
	}
	return out, nil
}
