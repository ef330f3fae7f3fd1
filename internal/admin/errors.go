package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/schema"
	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/txn"
)

// errNotFound is a 404 for things that are not metadata records (a cluster name in a path).
var errNotFound = resources.ErrNotFound

// ErrUnavailable marks a process that cannot serve yet (503).
var ErrUnavailable = errors.New("admin: unavailable")

// ErrBadRequest marks malformed input (bad JSON, bad path) that is the caller's fault.
var ErrBadRequest = errors.New("bad request")

// statusFor is the one table from Go errors to HTTP statuses.
func statusFor(err error) int {
	var owner *ownerError
	switch {
	case errors.As(err, &owner):
		return owner.status // another broker's answer for a partition it serves (partitions.go)
	case errors.Is(err, resources.ErrNotFound), errors.Is(err, schema.ErrNotFound),
		errors.Is(err, topics.ErrTopicNotFound), errors.Is(err, topics.ErrSubscriptionNotFound),
		errors.Is(err, topics.ErrMessageNotFound), errors.Is(err, txn.ErrNotFound), errors.Is(err, txn.ErrCoordinatorNotFound):
		return http.StatusNotFound
	case errors.Is(err, schema.ErrIncompatible):
		return http.StatusConflict // Pulsar's IncompatibleSchemaException
	case errors.Is(err, schema.ErrInvalid):
		return http.StatusUnprocessableEntity // Pulsar's InvalidSchemaDataException
	case errors.Is(err, resources.ErrAlreadyExists), errors.Is(err, resources.ErrNotEmpty),
		errors.Is(err, topics.ErrSubscriptionExists), errors.Is(err, topics.ErrOffloadRunning),
		errors.Is(err, topics.ErrCompactionRunning):
		// Pulsar answers "still has active namespaces" / "non empty namespace" with 409.
		return http.StatusConflict
	case errors.Is(err, ErrNotAllowed), errors.Is(err, topics.ErrNotAllowed), errors.Is(err, topics.ErrTopicTerminated),
		errors.Is(err, topics.ErrNotDynamic):
		// 412, as Pulsar answers a key that is not dynamic too.
		return http.StatusPreconditionFailed
	case errors.Is(err, resources.ErrInvalid), errors.Is(err, ErrBadRequest), errors.Is(err, topics.ErrInvalidTopicName),
		errors.Is(err, topics.ErrInvalidPosition), errors.Is(err, topics.ErrBadDynamicValue):
		return http.StatusBadRequest
	case errors.Is(err, errForceDeleteOff), errors.Is(err, errPartitioned), errors.Is(err, errNotPartitioned):
		// Pulsar's answer when forceDeleteNamespaceAllowed is off, to a skip or peek of a
		// partitioned topic, and to partitioned-terminate of one that is not.
		return http.StatusMethodNotAllowed
	case errors.Is(err, errPackageTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrNotSupported):
		return http.StatusNotImplemented
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Pulsar's reasons for what is missing, exists already or is not empty, word for word:
// clients compare them (pulsaradmin's namespace tests expect "Namespace does not exist" and
// "Tenant does not exist"). Facts from Pulsar's admin implementation (AdminResource,
// NamespacesBase, TenantsBase, PersistentTopicsBase); docs/compatibility.md lists them.
const (
	reasonTenantMissing      = "Tenant does not exist"
	reasonTenantsNamespaces  = "Tenant not found" // listing the namespaces of a missing tenant
	reasonNamespaceMissing   = "Namespace does not exist"
	reasonClusterMissing     = "Cluster does not exist"
	reasonTenantExists       = "Tenant already exists"
	reasonNamespaceExists    = "Namespace already exists"
	reasonTopicExists        = "This topic already exists"
	reasonTenantNotEmpty     = "The tenant still has active namespaces"
	reasonNamespaceNotEmpty  = "Cannot delete non empty namespace"
	reasonTopicMissingFmt    = "Topic %s not found"
	reasonPartitionedMissing = "Partitioned Topic %s not found"
	reasonSubMissingFmt      = "Subscription %s not found for topic %s"
)

// reasoned gives err Pulsar's exact reason text; err's own text, which names what is
// missing, goes into the body's "detail" (Pulsar's clients read only "reason").
type reasoned struct {
	reason string
	err    error
}

func (e reasoned) Error() string { return e.err.Error() }
func (e reasoned) Unwrap() error { return e.err }

// withReason attaches Pulsar's reason to err (nil stays nil).
func withReason(reason string, err error) error {
	if err == nil {
		return nil
	}
	return reasoned{reason: reason, err: err}
}

// tenantMissing is a not-found error about tenant, worded as Pulsar's.
func tenantMissing(tenant string, err error) error {
	return withReason(reasonTenantMissing, fmt.Errorf("tenant %s does not exist: %w", tenant, err))
}

// namespaceMissing is a not-found error about tenant/ns, worded as Pulsar's.
func namespaceMissing(tenant, ns string, err error) error {
	return withReason(reasonNamespaceMissing, fmt.Errorf("namespace %s/%s does not exist: %w", tenant, ns, err))
}

// clusterMissing is a not-found error about a cluster, worded as Pulsar's.
func clusterMissing(cluster string, err error) error {
	return withReason(reasonClusterMissing, fmt.Errorf("cluster %s does not exist: %w", cluster, err))
}

// reasonFor is the {"reason"} text of err: Pulsar's own where it has one (reasonError,
// reasoned), else, on a topic route, Pulsar's "not found" wording for the topic,
// partitioned topic or subscription in the path, else err's text.
func reasonFor(r *http.Request, err error) string {
	var re reasonError
	var rs reasoned
	var owner *ownerError
	switch {
	case errors.As(err, &owner):
		return owner.reason
	case errors.As(err, &re):
		return string(re)
	case errors.As(err, &rs):
		return rs.reason
	case r == nil || r.PathValue("topic") == "" || !strings.HasPrefix(r.URL.Path, "/admin/v2/"):
		return err.Error()
	}
	topic := domainOf(r) + "://" + r.PathValue("tenant") + "/" + r.PathValue("namespace") + "/" + r.PathValue("topic")
	switch {
	case errors.Is(err, topics.ErrSubscriptionNotFound) && r.PathValue("sub") != "":
		return fmt.Sprintf(reasonSubMissingFmt, r.PathValue("sub"), topic)
	case errors.Is(err, topics.ErrTopicNotFound), errors.Is(err, resources.ErrNotFound):
		if strings.Contains(r.URL.Path, "/"+r.PathValue("topic")+"/partition") { // partitions, partitioned-stats
			return fmt.Sprintf(reasonPartitionedMissing, topic)
		}
		return fmt.Sprintf(reasonTopicMissingFmt, topic)
	}
	return err.Error()
}

// writeError sends err as Pulsar's {"reason": "..."} body, with err's own text in "detail"
// when the reason is Pulsar's fixed wording.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	body := map[string]string{"reason": reasonFor(r, err)}
	if d := err.Error(); d != body["reason"] {
		body["detail"] = d
	}
	writeJSON(w, statusFor(err), body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
