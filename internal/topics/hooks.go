package topics

import (
	"context"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/txn"
)

// Authorization (issue 16). A front end authenticates its client and puts the resulting
// principal in the context of every call it makes for that client (WithPrincipal); the
// service asks Options.Authorizer before acting. The decision itself (roles, namespace
// permissions, superusers) belongs to the authorizer (internal/auth; NewAuthorizer adapts it).

// Action is what a principal asks to do to a topic (Pulsar's AuthAction and the topic
// operations it covers).
type Action int

// Actions.
const (
	// ActionProduce: attach a producer (Topic.AddProducer), register a schema.
	ActionProduce Action = iota + 1
	// ActionConsume: subscribe, read, and the subscription operations a consumer may do
	// (skip, expire, reset, unsubscribe, list subscriptions); Request.Subscription names it.
	ActionConsume
	// ActionLookup: find, load or describe the topic (Service.Topic, stats, lookups).
	ActionLookup
	// ActionAdmin: create, delete, terminate, unload (admin API).
	ActionAdmin
	// ActionListTopics: list a namespace's topics (Request.Topic names only the namespace).
	ActionListTopics
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
	case ActionListTopics:
		return "list-topics"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Request is one authorization question.
type Request struct {
	// Principal is who asks (the zero value: the anonymous principal of a broker without
	// authentication).
	Principal auth.Principal
	Action    Action
	Topic     Name
	// Subscription is the subscription an ActionConsume is about ("" if none).
	Subscription string
}

// Authorizer decides a Request. It returns nil to allow, or an error wrapping
// ErrAuthorization (or ErrAuthentication) to refuse.
type Authorizer interface {
	Authorize(ctx context.Context, r Request) error
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, r Request) error

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, r Request) error { return f(ctx, r) }

type principalKey struct{}

type internalKey struct{}

// Internal returns ctx for calls a front end makes on its own behalf after authorizing its
// client's request itself: the service does not ask the authorizer. The Kafka front end
// shares one producer and a few readers of a partition among its clients and decides each
// Produce, Fetch and commit with internal/auth before using them.
func Internal(ctx context.Context) context.Context {
	return context.WithValue(ctx, internalKey{}, true)
}

// WithPrincipal returns ctx carrying the authenticated principal of the client a call acts for.
func WithPrincipal(ctx context.Context, p auth.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom is the principal WithPrincipal put in ctx (the zero Principal if none).
func PrincipalFrom(ctx context.Context) auth.Principal {
	p, _ := ctx.Value(principalKey{}).(auth.Principal)
	return p
}

// authorize asks the authorizer, if there is one.
func (s *Service) authorize(ctx context.Context, action Action, topic Name) error {
	return s.authorizeSub(ctx, action, topic, "")
}

// authorizeSub is authorize for an operation on subscription sub.
func (s *Service) authorizeSub(ctx context.Context, action Action, topic Name, sub string) error {
	if s.authz == nil || ctx.Value(internalKey{}) != nil {
		return nil
	}
	return s.authz.Authorize(ctx, Request{Principal: PrincipalFrom(ctx), Action: action, Topic: topic, Subscription: sub})
}

// NewAuthorizer adapts internal/auth's Authorizer (Pulsar's rules) to the service: topic
// permissions are checked on the partitioned topic a partition belongs to.
func NewAuthorizer(a *auth.Authorizer) Authorizer {
	if !a.Enabled() {
		return nil
	}
	return AuthorizerFunc(func(ctx context.Context, r Request) error {
		t := r.Topic
		if r.Action == ActionLookup && t.Base().String() == txn.AssignTopic {
			// Every transactional client looks up the coordinators' assign topic: needing a
			// permission on pulsar/system for it would keep a tenant's clients from
			// transactions (Pulsar's issue 18716). The principal is authenticated; the
			// lookup names only the brokers serving coordinators.
			return nil
		}
		if r.Action == ActionListTopics {
			return a.Namespace(ctx, r.Principal, t.Tenant, t.Namespace, auth.NamespaceListTopics)
		}
		op := map[Action]auth.TopicOp{ActionProduce: auth.TopicProduce, ActionConsume: auth.TopicConsume,
			ActionLookup: auth.TopicLookup, ActionAdmin: auth.TopicAdmin}[r.Action]
		return a.Topic(ctx, r.Principal, auth.Topic{Tenant: t.Tenant, Namespace: t.Namespace, Name: t.Base().String()}, op, r.Subscription)
	})
}

// Authorize asks the authorizer about action on topic for the principal in ctx, for front
// ends that answer a question without calling the service otherwise (a standalone's
// LOOKUP).
func (s *Service) Authorize(ctx context.Context, action Action, topic Name) error {
	return s.authorize(ctx, action, topic)
}
