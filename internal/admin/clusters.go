package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// Cluster records beyond list and get (pulsaradmin Clusters().Create/Update/Delete and peer
// clusters; pulsarctl clusters create). A cluster is only a name and its URLs here: no
// replication between clusters runs, so peers are recorded and answered, nothing more.
func (s *server) registerClusters(mux *http.ServeMux) {
	const c = "/admin/v2/clusters/{cluster}"
	mux.HandleFunc("PUT "+c, s.handle(s.createCluster))
	mux.HandleFunc("POST "+c, s.handle(s.updateCluster))
	mux.HandleFunc("DELETE "+c, s.handle(s.deleteCluster))
	mux.HandleFunc("GET "+c+"/peers", s.handle(s.peerClusters))
	mux.HandleFunc("POST "+c+"/peers", s.handle(s.setPeerClusters))
	const ns = "/admin/v2/namespaces/{tenant}/{namespace}/replication"
	mux.HandleFunc("GET "+ns, s.handle(s.replicationClusters))
	mux.HandleFunc("POST "+ns, s.handle(s.setReplicationClusters))
}

// replicationClusters is the namespace's replication_clusters (pulsar-admin namespaces
// get-clusters); an empty list means the local cluster.
func (s *server) replicationClusters(ctx context.Context, r *http.Request) (any, error) {
	p, err := s.namespacePolicies(ctx, r)
	if err != nil {
		return nil, err
	}
	if len(p.ReplicationClusters) == 0 && s.cluster != "" {
		return []string{s.cluster}, nil
	}
	return p.ReplicationClusters, nil
}

// setReplicationClusters records the namespace's clusters; each must exist and be allowed
// by the tenant (412 otherwise). Only the list is kept: nothing replicates between clusters.
func (s *server) setReplicationClusters(ctx context.Context, r *http.Request) (any, error) {
	var list []string
	if err := decodeBody(r, &list); err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%w: give at least one cluster", ErrBadRequest)
	}
	tenant := r.PathValue("tenant")
	ti, err := s.res.Tenant(ctx, tenant)
	if err != nil {
		return nil, fmt.Errorf("tenant %s: %w", tenant, err)
	}
	for _, c := range list {
		if _, err := s.res.Cluster(ctx, c); errors.Is(err, resources.ErrNotFound) {
			return nil, fmt.Errorf("%w: cluster %s does not exist", ErrNotAllowed, c)
		} else if err != nil {
			return nil, err
		}
		if len(ti.AllowedClusters) > 0 && !slices.Contains(ti.AllowedClusters, c) {
			return nil, fmt.Errorf("%w: cluster %s is not in tenant %s's allowed clusters", ErrNotAllowed, c, tenant)
		}
	}
	return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error {
		p.ReplicationClusters = list
		return nil
	})
}

func (s *server) createCluster(ctx context.Context, r *http.Request) (any, error) {
	var c resources.ClusterData
	if err := decodeBody(r, &c); err != nil {
		return nil, err
	}
	err := s.res.CreateCluster(ctx, r.PathValue("cluster"), c)
	if errors.Is(err, resources.ErrAlreadyExists) {
		return nil, fmt.Errorf("cluster %s already exists: %w", r.PathValue("cluster"), err)
	}
	return nil, err
}

func (s *server) updateCluster(ctx context.Context, r *http.Request) (any, error) {
	var c resources.ClusterData
	if err := decodeBody(r, &c); err != nil {
		return nil, err
	}
	return nil, s.clusterErr(r, s.res.UpdateCluster(ctx, r.PathValue("cluster"), func(old *resources.ClusterData) error {
		*old = c
		return nil
	}))
}

// deleteCluster refuses (412, as Pulsar's "Cluster not empty") the cluster this broker
// serves and a cluster some tenant still allows.
func (s *server) deleteCluster(ctx context.Context, r *http.Request) (any, error) {
	name := r.PathValue("cluster")
	if _, err := s.res.Cluster(ctx, name); err != nil {
		return nil, s.clusterErr(r, err)
	}
	if name == s.cluster {
		return nil, fmt.Errorf("%w: cluster %s is this broker's cluster", ErrNotAllowed, name)
	}
	tenants, err := s.res.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range tenants {
		ti, err := s.res.Tenant(ctx, t)
		if err != nil && !errors.Is(err, resources.ErrNotFound) {
			return nil, err
		}
		if slices.Contains(ti.AllowedClusters, name) {
			return nil, fmt.Errorf("%w: cluster %s not empty: tenant %s allows it", ErrNotAllowed, name, t)
		}
	}
	return nil, s.clusterErr(r, s.res.DeleteCluster(ctx, name))
}

func (s *server) peerClusters(ctx context.Context, r *http.Request) (any, error) {
	c, err := s.res.Cluster(ctx, r.PathValue("cluster"))
	if err != nil {
		return nil, s.clusterErr(r, err)
	}
	if c.PeerClusterNames == nil {
		return []string{}, nil
	}
	return c.PeerClusterNames, nil
}

// setPeerClusters records peers; each must be another existing cluster (412 otherwise,
// as in Pulsar).
func (s *server) setPeerClusters(ctx context.Context, r *http.Request) (any, error) {
	name := r.PathValue("cluster")
	var peers []string
	if err := decodeBody(r, &peers); err != nil {
		return nil, err
	}
	if _, err := s.res.Cluster(ctx, name); err != nil {
		return nil, s.clusterErr(r, err)
	}
	for _, p := range peers {
		if p == name {
			return nil, fmt.Errorf("%w: cluster %s cannot be its own peer", ErrNotAllowed, name)
		}
		if _, err := s.res.Cluster(ctx, p); err != nil {
			if errors.Is(err, resources.ErrNotFound) {
				return nil, fmt.Errorf("%w: peer cluster %s does not exist", ErrNotAllowed, p)
			}
			return nil, err
		}
	}
	return nil, s.clusterErr(r, s.res.UpdateCluster(ctx, name, func(c *resources.ClusterData) error {
		c.PeerClusterNames = peers
		return nil
	}))
}

// clusterErr names the cluster of the path in a not-found error.
func (s *server) clusterErr(r *http.Request, err error) error {
	if errors.Is(err, resources.ErrNotFound) {
		return clusterMissing(r.PathValue("cluster"), err)
	}
	return err
}

// withOwnURLs fills the URLs a standalone's own cluster record was created without (the
// record is written before the listeners exist), as Pulsar's standalone shows them.
func (s *server) withOwnURLs(name string, c resources.ClusterData) resources.ClusterData {
	if name != s.cluster || s.cluster == "" {
		return c
	}
	if c.ServiceURL == "" {
		c.ServiceURL = "http://" + s.webAddr()
	}
	if c.BrokerServiceURL == "" && s.broker != nil {
		c.BrokerServiceURL = s.broker.ServiceURL()
	}
	return c
}

// checkClusters refuses (412, Pulsar's "Clusters do not exist") a tenant's allowed cluster
// that has no cluster record.
func (s *server) checkClusters(ctx context.Context, names []string) error {
	for _, c := range names {
		if _, err := s.res.Cluster(ctx, c); errors.Is(err, resources.ErrNotFound) {
			return fmt.Errorf("%w: cluster %s does not exist", ErrNotAllowed, c)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// tenantErr words a tenant call's missing tenant, or its namespaces left, as Pulsar does.
func tenantErr(r *http.Request, err error) error {
	switch {
	case errors.Is(err, resources.ErrNotFound):
		return tenantMissing(r.PathValue("tenant"), err)
	case errors.Is(err, resources.ErrNotEmpty):
		return withReason(reasonTenantNotEmpty, err)
	}
	return err
}

// namespaceMissingErr words a missing namespace: Pulsar says "Tenant does not exist" when
// the tenant is missing too, "Namespace does not exist" otherwise.
func (s *server) namespaceMissingErr(ctx context.Context, tenant, ns string, err error) error {
	if _, terr := s.res.Tenant(ctx, tenant); errors.Is(terr, resources.ErrNotFound) {
		return tenantMissing(tenant, terr)
	}
	return namespaceMissing(tenant, ns, err)
}
