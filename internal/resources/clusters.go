package resources

import "context"

// UpdateCluster changes a cluster's data with modify (compare-and-set, retried on a
// concurrent change); ErrNotFound if it does not exist.
func (r *Resources) UpdateCluster(ctx context.Context, name string, modify func(*ClusterData) error) error {
	if err := checkNames(name); err != nil {
		return err
	}
	return update(ctx, r, ClustersPrefix+name, modify)
}

// DeleteCluster deletes a cluster record; ErrNotFound if it does not exist. Whether the
// cluster is still in use is the caller's check.
func (r *Resources) DeleteCluster(ctx context.Context, name string) error {
	if err := checkNames(name); err != nil {
		return err
	}
	return r.del(ctx, ClustersPrefix+name)
}
