package auth

import (
	"context"
	"errors"
	"testing"
)

func TestFrontendAPI(t *testing.T) {
	ctx := context.Background()
	s := fullService(t, "anonymous", nil)
	role, err := s.AuthenticateData(ctx, "token", []byte(mustToken(t, testSecret, "", TokenSpec{Subject: "alice"})))
	if err != nil || role != "alice" {
		t.Fatalf("token: %q %v", role, err)
	}
	if role, err = s.AuthenticateData(ctx, "", nil); err != nil || role != "anonymous" {
		t.Fatalf("anonymous: %q %v", role, err)
	}
	for _, bad := range []struct{ method, data string }{{"token", "not-a-jwt"}, {"nope", "x"}, {"basic", "admin:wrong"}} {
		if role, err := s.AuthenticateData(ctx, bad.method, []byte(bad.data)); !errors.Is(err, ErrAuthentication) || role != "" {
			t.Errorf("%s %q: %q %v, want an authentication error", bad.method, bad.data, role, err)
		}
	}
	var off *Service
	if role, err := off.AuthenticateData(ctx, "token", []byte("x")); err != nil || role != "" {
		t.Errorf("authentication off: %q %v", role, err)
	}

	a := testAuthorizer(t, false)
	for _, c := range []struct {
		role, topic string
		produce     bool
		consume     bool
	}{
		{"producer", "persistent://acme/app/x", true, false},
		{"producer", "acme/app/x-partition-3", true, false},
		{"consumer", "persistent://acme/app/x-partition-0", false, true},
		{"orders-writer", "persistent://acme/app/orders-partition-1", true, false},
		{"acme-admin", "non-persistent://acme/app/x", true, true},
		{"root", "persistent://other/ns/x", true, true},
		{"producer", "persistent://other/ns/x", true, false},
		{"consumer", "persistent://other/ns/x", false, false},
		{"stranger", "persistent://acme/app/x", false, false},
		{"root", "persistent://acme/app", false, false}, // not a topic name
		{"root", "kafka://acme/app/x", false, false},
	} {
		if got := a.CanProduce(ctx, c.role, c.topic) == nil; got != c.produce {
			t.Errorf("CanProduce(%s, %s) = %v, want %v", c.role, c.topic, got, c.produce)
		}
		err := a.CanConsume(ctx, c.role, c.topic, "sub")
		if got := err == nil; got != c.consume {
			t.Errorf("CanConsume(%s, %s) = %v, want %v", c.role, c.topic, got, c.consume)
		}
		if err != nil && !errors.Is(err, ErrAuthorization) {
			t.Errorf("CanConsume(%s, %s): %v does not wrap ErrAuthorization", c.role, c.topic, err)
		}
	}
}
