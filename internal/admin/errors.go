package admin

import (
	"encoding/json"
	"errors"
	"net/http"

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
	switch {
	case errors.Is(err, resources.ErrNotFound), errors.Is(err, schema.ErrNotFound),
		errors.Is(err, topics.ErrTopicNotFound), errors.Is(err, topics.ErrSubscriptionNotFound),
		errors.Is(err, topics.ErrMessageNotFound), errors.Is(err, txn.ErrNotFound), errors.Is(err, txn.ErrCoordinatorNotFound):
		return http.StatusNotFound
	case errors.Is(err, schema.ErrIncompatible):
		return http.StatusConflict // Pulsar's IncompatibleSchemaException
	case errors.Is(err, schema.ErrInvalid):
		return http.StatusUnprocessableEntity // Pulsar's InvalidSchemaDataException
	case errors.Is(err, resources.ErrAlreadyExists), errors.Is(err, resources.ErrNotEmpty),
		errors.Is(err, topics.ErrSubscriptionExists), errors.Is(err, topics.ErrOffloadRunning):
		// Pulsar answers "still has active namespaces" / "non empty namespace" with 409.
		return http.StatusConflict
	case errors.Is(err, ErrNotAllowed), errors.Is(err, topics.ErrNotAllowed), errors.Is(err, topics.ErrTopicTerminated),
		errors.Is(err, topics.ErrNotDynamic):
		// 412, as Pulsar answers a key that is not dynamic too.
		return http.StatusPreconditionFailed
	case errors.Is(err, resources.ErrInvalid), errors.Is(err, ErrBadRequest), errors.Is(err, topics.ErrInvalidTopicName),
		errors.Is(err, topics.ErrInvalidPosition), errors.Is(err, topics.ErrBadDynamicValue):
		return http.StatusBadRequest
	case errors.Is(err, ErrNotSupported):
		return http.StatusNotImplemented
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeError sends err as Pulsar's {"reason": "..."} body.
func writeError(w http.ResponseWriter, err error) {
	writeJSON(w, statusFor(err), map[string]string{"reason": err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
