package auth

import (
	"context"
	"errors"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// ResourcePolicies reads tenants and namespace permissions from the metadata store through
// internal/resources, the one owner of their layout.
type ResourcePolicies struct{ R *resources.Resources }

var _ Policies = ResourcePolicies{}

// Tenant implements Policies.
func (p ResourcePolicies) Tenant(ctx context.Context, tenant string) (TenantPolicy, error) {
	t, err := p.R.Tenant(ctx, tenant)
	if err != nil {
		return TenantPolicy{}, mapNotFound(err)
	}
	return TenantPolicy{AdminRoles: t.AdminRoles, AllowedClusters: t.AllowedClusters}, nil
}

// Namespace implements Policies.
func (p ResourcePolicies) Namespace(ctx context.Context, tenant, ns string) (NamespacePolicy, error) {
	pol, err := p.R.Namespace(ctx, tenant, ns)
	if err != nil {
		return NamespacePolicy{}, mapNotFound(err)
	}
	a := pol.AuthPolicies
	return NamespacePolicy{NamespaceAuth: a.NamespaceAuth, DestinationAuth: a.DestinationAuth,
		SubscriptionAuthRoles: a.SubscriptionAuthRoles, SubscriptionAuthMode: subscriptionAuthMode(pol)}, nil
}

func mapNotFound(err error) error {
	if errors.Is(err, resources.ErrNotFound) {
		return fmt.Errorf("%w: %w", ErrPolicyNotFound, err)
	}
	return err
}
