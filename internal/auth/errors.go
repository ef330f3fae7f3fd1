package auth

import (
	"errors"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// Error classes. They are wire's, so the binary protocol's one table already maps them
// (AuthenticationError, AuthorizationError); the admin error table maps them to 401 and 403.
var (
	// ErrAuthentication: the credentials are missing, malformed, expired, forged or unknown.
	ErrAuthentication = wire.ErrAuthentication
	// ErrAuthorization: the role is known but not allowed the operation.
	ErrAuthorization = wire.ErrAuthorization
	// ErrBadConfig: a security setting cannot be used (unreadable key, unknown provider).
	ErrBadConfig = errors.New("auth: bad security configuration")
)
