package admin

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// ErrBadRequest marks malformed input (bad JSON, bad path) that is the caller's fault.
var ErrBadRequest = errors.New("bad request")

// statusFor is the one table from Go errors to HTTP statuses.
func statusFor(err error) int {
	switch {
	case errors.Is(err, resources.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, resources.ErrAlreadyExists):
		return http.StatusConflict
	case errors.Is(err, resources.ErrNotEmpty):
		return http.StatusPreconditionFailed
	case errors.Is(err, resources.ErrInvalid), errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
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
