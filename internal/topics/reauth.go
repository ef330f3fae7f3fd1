package topics

import (
	"context"
	"errors"
	"time"
)

// Revocation: a producer's or consumer's permission is decided when it attaches and cached
// with it (never per message). So that a revoked permission takes effect on live ones too,
// the service rechecks every attached producer and consumer every
// authorizationRecheckIntervalSeconds and disconnects those no longer allowed; their
// clients reconnect, and are refused then. A revocation thus bites within one interval
// (plus the authorizer's policy cache).

// recheckAuthorization runs until ctx ends.
func (s *Service) recheckAuthorization(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, tp := range s.LoadedTopics() {
			s.recheckTopic(ctx, tp)
		}
	}
}

func (s *Service) recheckTopic(ctx context.Context, t *Topic) {
	t.mu.Lock()
	producers, subs := t.attachedLocked()
	t.mu.Unlock()
	check := func(p Request) bool {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err := s.authz.Authorize(cctx, p)
		// Only a refusal disconnects; a metadata hiccup leaves clients alone until the next
		// round (the check itself logged it).
		return err == nil || !isAuthError(err)
	}
	for _, p := range producers {
		if !check(Request{Principal: p.principal, Action: ActionProduce, Topic: t.name}) {
			s.log.Info("disconnecting producer: permission revoked", "topic", t.full, "producer", p.name, "role", p.principal.String())
			t.removeProducer(p)
			p.client.Disconnect()
		}
	}
	for _, sub := range subs {
		for _, cs := range sub.consumersSnapshot() {
			if !check(Request{Principal: cs.principal, Action: ActionConsume, Topic: t.name, Subscription: sub.name}) {
				s.log.Info("disconnecting consumer: permission revoked", "topic", t.full, "subscription", sub.name, "role", cs.principal.String())
				sub.disconnect(cs)
			}
		}
	}
}

func isAuthError(err error) bool {
	return errors.Is(err, ErrAuthorization) || errors.Is(err, ErrAuthentication)
}

// attachedLocked lists the topic's producers and subscriptions (t.mu held).
func (t *Topic) attachedLocked() ([]*Producer, []*Subscription) {
	producers := make([]*Producer, 0, len(t.producers))
	for _, p := range t.producers {
		producers = append(producers, p)
	}
	subs := make([]*Subscription, 0, len(t.subs))
	for _, sub := range t.subs {
		subs = append(subs, sub)
	}
	return producers, subs
}
