package topics

import (
	"context"
	"fmt"
)

// Authorization (issue 16). A front end authenticates its client and puts the resulting
// principal in the context of every call it makes for that client (WithPrincipal); the
// service asks Options.Authorizer before acting. The decision itself (roles, namespace
// permissions, superusers) belongs to the authorizer.

// Action is what a principal asks to do to a topic (Pulsar's AuthAction and the topic
// operations it covers).
type Action int

// Actions.
const (
	// ActionProduce: attach a producer (Topic.AddProducer).
	ActionProduce Action = iota + 1
	// ActionConsume: subscribe, read, seek, acknowledge (Topic.Subscribe, Topic.NewReader).
	ActionConsume
	// ActionLookup: find, load or describe the topic (Service.Topic, stats, lookups).
	ActionLookup
	// ActionAdmin: create, delete, terminate, unload, change subscriptions (admin API).
	ActionAdmin
)

func (a Action) String() string {
	switch a {
	case ActionProduce:
		return "produce"
	case ActionConsume:
		return "consume"
	case ActionLookup:
		return "lookup"
	case ActionAdmin:
		return "admin"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Authorizer decides whether principal may do action on topic ("" is the anonymous
// principal of a broker without authentication). It returns nil to allow, or an error
// wrapping ErrAuthorization (or ErrAuthentication) to refuse.
type Authorizer interface {
	Authorize(ctx context.Context, principal string, action Action, topic Name) error
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, principal string, action Action, topic Name) error

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, principal string, action Action, topic Name) error {
	return f(ctx, principal, action, topic)
}

type principalKey struct{}

// WithPrincipal returns ctx carrying the authenticated principal of the client a call acts for.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

// PrincipalFrom is the principal WithPrincipal put in ctx ("" if none).
func PrincipalFrom(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// authorize asks the authorizer, if there is one.
func (s *Service) authorize(ctx context.Context, action Action, topic Name) error {
	if s.authz == nil {
		return nil
	}
	return s.authz.Authorize(ctx, PrincipalFrom(ctx), action, topic)
}
