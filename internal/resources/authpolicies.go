package resources

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/auth"
)

// PermissionSource gives internal/auth's authorizer the tenants and namespace permissions it
// judges by, read through this package, the one owner of their layout. It lives here, not
// in auth, so that auth (which the bookie and every role import for TLS) does not pull in
// the metadata layout and what that imports.
type PermissionSource struct{ R *Resources }

var _ auth.Policies = PermissionSource{}

// Tenant implements auth.Policies.
func (p PermissionSource) Tenant(ctx context.Context, tenant string) (auth.TenantPolicy, error) {
	t, err := p.R.Tenant(ctx, tenant)
	if err != nil {
		return auth.TenantPolicy{}, authNotFound(err)
	}
	return auth.TenantPolicy{AdminRoles: t.AdminRoles, AllowedClusters: t.AllowedClusters}, nil
}

// Namespace implements auth.Policies.
func (p PermissionSource) Namespace(ctx context.Context, tenant, ns string) (auth.NamespacePolicy, error) {
	pol, err := p.R.Namespace(ctx, tenant, ns)
	if err != nil {
		return auth.NamespacePolicy{}, authNotFound(err)
	}
	a := pol.AuthPolicies
	return auth.NamespacePolicy{NamespaceAuth: a.NamespaceAuth, DestinationAuth: a.DestinationAuth,
		SubscriptionAuthRoles: a.SubscriptionAuthRoles, SubscriptionAuthMode: pol.SubscriptionAuthMode}, nil
}

func authNotFound(err error) error {
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: %w", auth.ErrPolicyNotFound, err)
	}
	return err
}
