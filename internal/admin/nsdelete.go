package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// errForceDeleteOff is Pulsar's 405 for a forced namespace or tenant delete the broker does
// not allow.
var errForceDeleteOff = errors.New("admin: forced deletion is off")

// forceDeleteAllowed reports forceDeleteNamespaceAllowed and forceDeleteTenantAllowed: the
// broker's dynamic configuration when it has one (brokers update-dynamic-config changes
// them at run time, as in Pulsar), else the start values.
func (s *server) forceDeleteAllowed() (namespaces, tenants bool) {
	if s.dynamic != nil {
		return s.dynamic.ForceDeleteNamespaceAllowed(), s.dynamic.ForceDeleteTenantAllowed()
	}
	return s.forceDeleteNamespace, s.forceDeleteTenant
}

// deleteTenant is DELETE /admin/v2/tenants/{t}[?force=true] (pulsar-admin tenants delete
// [-f]). Without force a tenant with namespaces is refused (409). With force, and only when
// forceDeleteTenantAllowed (else 405, as Pulsar), every namespace is deleted first as a
// forced namespace delete, which forceDeleteNamespaceAllowed must allow too (Pulsar's
// broker calls its own namespace delete with force for each); then the tenant.
func (s *server) deleteTenant(ctx context.Context, r *http.Request) (any, error) {
	tenant := r.PathValue("tenant")
	if boolParam(r, "force") {
		if _, allowed := s.forceDeleteAllowed(); !allowed {
			return nil, withReason("Broker doesn't allow forced deletion of tenants", fmt.Errorf("%w (forceDeleteTenantAllowed)", errForceDeleteOff))
		}
		namespaces, err := s.res.Namespaces(ctx, tenant)
		if err != nil {
			return nil, tenantErr(r, err)
		}
		for _, full := range namespaces {
			_, ns, _ := strings.Cut(full, "/")
			if err := s.forceDeleteNamespaceNamed(ctx, tenant, ns); err != nil && !errors.Is(err, resources.ErrNotFound) {
				return nil, err
			}
		}
	}
	return nil, tenantErr(r, s.res.DeleteTenant(ctx, tenant))
}

// deleteNamespace is DELETE /admin/v2/namespaces/{t}/{ns}[?force=true] (pulsar-admin
// namespaces delete [-f]). Without force a namespace with topics is refused (409). With
// force, and only when forceDeleteNamespaceAllowed (else 405, as Pulsar), every topic is
// deleted first, clients disconnected: each where it is served (deleteWhereServed), every
// partition of a partitioned topic and then its record; then the namespace.
func (s *server) deleteNamespace(ctx context.Context, r *http.Request) (any, error) {
	tenant, ns := r.PathValue("tenant"), r.PathValue("namespace")
	if !boolParam(r, "force") {
		return nil, s.deleteNamespaceErr(ctx, tenant, ns, s.res.DeleteNamespace(ctx, tenant, ns))
	}
	return nil, s.forceDeleteNamespaceNamed(ctx, tenant, ns)
}

// forceDeleteNamespaceNamed is the forced delete of tenant/ns (deleteNamespace).
func (s *server) forceDeleteNamespaceNamed(ctx context.Context, tenant, ns string) error {
	if allowed, _ := s.forceDeleteAllowed(); !allowed {
		return withReason("Broker doesn't allow forced deletion of namespaces", fmt.Errorf("%w (forceDeleteNamespaceAllowed)", errForceDeleteOff))
	}
	// Marked deleted first (Pulsar's policies.deleted): auto-creation stops for it, so the
	// clients its topic deletes disconnect do not create them again on reconnecting.
	err := s.res.UpdateNamespace(ctx, tenant, ns, func(p *resources.Policies) error {
		p.Deleted = true
		return nil
	})
	if err != nil {
		return s.deleteNamespaceErr(ctx, tenant, ns, err)
	}
	// A topic created explicitly meanwhile makes the namespace non-empty again: another
	// round, a few times, as Pulsar retries.
	for round := 1; ; round++ {
		if err := s.deleteNamespaceTopics(ctx, tenant, ns); err != nil {
			return s.deleteNamespaceErr(ctx, tenant, ns, err)
		}
		err := s.res.DeleteNamespace(ctx, tenant, ns)
		if !errors.Is(err, resources.ErrNotEmpty) || round == forceDeleteRounds {
			return s.deleteNamespaceErr(ctx, tenant, ns, err)
		}
	}
}

// forceDeleteRounds bounds the rounds of a forced namespace delete (Pulsar tries 5 times).
const forceDeleteRounds = 5

func (s *server) deleteNamespaceErr(ctx context.Context, tenant, ns string, err error) error {
	switch {
	case errors.Is(err, resources.ErrNotFound):
		// Pulsar's delete names the namespace in its reason, unlike its other calls.
		return withReason("Namespace "+tenant+"/"+ns+" does not exist.", s.namespaceMissingErr(ctx, tenant, ns, err))
	case errors.Is(err, resources.ErrNotEmpty):
		return withReason(reasonNamespaceNotEmpty, err)
	}
	return err
}

// deleteNamespaceTopics force-deletes every topic of a namespace that exists.
func (s *server) deleteNamespaceTopics(ctx context.Context, tenant, ns string) error {
	if _, err := s.res.Namespace(ctx, tenant, ns); err != nil {
		return err
	}
	if s.broker == nil {
		return fmt.Errorf("%w: no broker in this process", ErrNotSupported)
	}
	for _, domain := range []string{topics.DomainPersistent, topics.DomainNonPersistent} {
		// Partitions of partitioned topics are in the list too.
		list, err := s.broker.ListTopics(ctx, tenant+"/"+ns, domain)
		if err != nil {
			return err
		}
		for _, t := range list {
			if err := s.deleteWhereServed(ctx, t, true); err != nil {
				return err
			}
		}
	}
	partitioned, err := s.res.PartitionedTopics(ctx, tenant, ns)
	if err != nil {
		return err
	}
	for _, p := range partitioned {
		n, err := topics.ParseName(p)
		if err != nil {
			return err
		}
		if err := s.res.DeletePartitionedTopic(ctx, n.Domain, tenant, ns, n.Local); err != nil && !errors.Is(err, resources.ErrNotFound) {
			return err
		}
	}
	return nil
}

// deleteWhereServed deletes a topic on the broker that serves it (partitions.go), so no
// broker destroys a log another one is writing. A topic already gone is no error.
func (s *server) deleteWhereServed(ctx context.Context, topic string, force bool) error {
	err := s.whereServed(ctx, topic, func() error { return s.broker.DeleteTopic(ctx, topic, force) },
		ownerCall{method: http.MethodDelete, query: url.Values{"force": {strconv.FormatBool(force)}}})
	if err != nil && statusFor(err) != http.StatusNotFound {
		return err
	}
	return nil
}

// deleteBundle is DELETE /admin/v2/namespaces/{t}/{ns}/{bundle}[?force=true] (pulsar-admin
// namespaces delete-bundle). As Pulsar's, it deletes no topic and no boundary: the bundle's
// loaded topics are unloaded (their clients reconnect) and, in a cluster, the owner then
// gives the bundle up (ownership/nsverbs.go:deleteBundleRoute). Without force a bundle
// that has topics is refused (409, Pulsar's "Cannot delete non empty bundle"). Tenant
// admins may, as for any namespace change.
func (s *server) deleteBundle(ctx context.Context, r *http.Request) (any, error) {
	in, err := s.bundleFilter(ctx, r)
	if err != nil {
		return nil, err
	}
	if s.broker == nil {
		return nil, fmt.Errorf("%w: no broker in this process", ErrNotSupported)
	}
	ns := r.PathValue("tenant") + "/" + r.PathValue("namespace")
	var inBundle []string
	for _, domain := range []string{topics.DomainPersistent, topics.DomainNonPersistent} {
		list, err := s.broker.ListTopics(ctx, ns, domain)
		if err != nil {
			return nil, err
		}
		for _, t := range list {
			if in(t) {
				inBundle = append(inBundle, t)
			}
		}
	}
	if len(inBundle) > 0 && !boolParam(r, "force") {
		return nil, withReason("Cannot delete non empty bundle",
			fmt.Errorf("%w: bundle %s of %s has %d topics", resources.ErrNotEmpty, r.PathValue("bundle"), ns, len(inBundle)))
	}
	for _, t := range inBundle {
		if err := s.broker.Unload(ctx, t); err != nil && statusFor(err) != http.StatusNotFound {
			return nil, err
		}
	}
	return nil, nil
}
