package auth

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

// The short API for front ends other than the Pulsar protocol and the admin REST API (the
// Kafka listener's SASL, the SQL server): authenticate one credential, then ask whether the
// role may produce to or consume from a topic. Decisions are Pulsar's rules (Authorizer);
// a caller caches them per connection (or per producer and consumer), never per message.

// AuthenticateData authenticates one credential: method is a Pulsar auth method name
// ("token", "basic", ...), data its bytes (a JWT, "user:password"). It returns the role;
// an empty method with anonymousUserRole set gives that role. With authentication off it
// returns "" and no error.
func (s *Service) AuthenticateData(ctx context.Context, method string, data []byte) (string, error) {
	if !s.Enabled() {
		return "", nil
	}
	id, err := s.Authenticate(ctx, Credentials{Method: method, Data: data})
	if err != nil {
		return "", err
	}
	return id.Role, nil
}

// CanProduce says whether role may publish to topic (a full topic name such as
// persistent://tenant/ns/name, a partition of it, or tenant/ns/name): nil when it may, an
// error wrapping ErrAuthorization (logged once) when it may not.
func (a *Authorizer) CanProduce(ctx context.Context, role, topic string) error {
	return a.topicString(ctx, role, topic, TopicProduce, "")
}

// CanConsume says whether role may read topic on subscription ("" when the front end has
// no subscription, such as SQL): as CanProduce.
func (a *Authorizer) CanConsume(ctx context.Context, role, topic, subscription string) error {
	return a.topicString(ctx, role, topic, TopicConsume, subscription)
}

func (a *Authorizer) topicString(ctx context.Context, role, topic string, op TopicOp, sub string) error {
	if !a.Enabled() {
		return nil
	}
	t, err := ParseTopic(topic)
	if err != nil {
		return a.deny(Principal{Role: role}, op.String(), "topic "+topic, err)
	}
	return a.Topic(ctx, Principal{Role: role}, t, op, sub)
}

// partitionSuffix is Pulsar's "-partition-N" naming of a partition.
var partitionSuffix = regexp.MustCompile(`-partition-[0-9]+$`)

// ParseTopic names topic for authorization: the partitioned topic a partition belongs to,
// in full form (domain://tenant/namespace/name; persistent when the domain is left out).
func ParseTopic(topic string) (Topic, error) {
	domain, rest, ok := strings.Cut(topic, "://")
	if !ok {
		domain, rest = "persistent", topic
	}
	parts := strings.Split(rest, "/")
	if (domain != "persistent" && domain != "non-persistent") || len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Topic{}, fmt.Errorf("%w: %q is not a topic name (domain://tenant/namespace/topic)", ErrAuthorization, topic)
	}
	local := partitionSuffix.ReplaceAllString(parts[2], "")
	return Topic{Tenant: parts[0], Namespace: parts[1], Name: domain + "://" + parts[0] + "/" + parts[1] + "/" + local}, nil
}
