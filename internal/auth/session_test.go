package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
)

func TestSessionRefresh(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	s := tokenService(t, nil, clk.now)
	ctx := context.Background()
	tok := func(sub string, life time.Duration) []byte {
		return []byte(mustToken(t, testSecret, "", TokenSpec{Subject: sub, Expiry: life, Now: clk.now}))
	}
	se, err := s.Connect(ctx, Connect{Method: "token", Data: tok("alice", time.Minute), SupportsRefresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if act, _, _ := se.Tick(clk.t); act != RefreshNone {
		t.Fatalf("fresh token: %v", act)
	}
	clk.t = clk.t.Add(2 * time.Minute)
	act, method, _ := se.Tick(clk.t)
	if act != RefreshChallenge || method != "token" {
		t.Fatalf("expired: %v %q", act, method)
	}
	// A refreshed token of another role is refused; the right one clears the challenge.
	if err := se.Respond(ctx, "token", tok("mallory", time.Hour)); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("role switch: %v", err)
	}
	stale := mustToken(t, testSecret, "", TokenSpec{Subject: "alice", Expiry: time.Second,
		Now: func() time.Time { return clk.t.Add(-time.Minute) }})
	if err := se.Respond(ctx, "token", []byte(stale)); err == nil {
		t.Fatal("expired refresh accepted")
	}
	if err := se.Respond(ctx, "token", tok("alice", time.Hour)); err != nil {
		t.Fatal(err)
	}
	if act, _, _ := se.Tick(clk.t); act != RefreshNone {
		t.Fatalf("after refresh: %v", act)
	}
	// Expire again and do not answer: the next check closes.
	clk.t = clk.t.Add(2 * time.Hour)
	if act, _, _ := se.Tick(clk.t); act != RefreshChallenge {
		t.Fatalf("second expiry: %v", act)
	}
	if act, _, reason := se.Tick(clk.t.Add(time.Minute)); act != RefreshClose || reason == "" {
		t.Fatalf("unanswered challenge: %v", act)
	}
	// A client that cannot refresh is closed at expiry.
	old, err := s.Connect(ctx, Connect{Method: "token", Data: tok("alice", time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if act, _, _ := old.Tick(clk.t.Add(time.Hour)); act != RefreshClose {
		t.Fatalf("no refresh support: %v", act)
	}
}

func TestSessionProxy(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	ctx := context.Background()
	for _, checkOrig := range []bool{false, true} {
		s := tokenService(t, func(c *config.AuthenticationConfig) {
			c.ProxyRoles, c.AuthenticateOriginalAuthData = []string{"proxy"}, checkOrig
		}, clk.now)
		proxyTok := []byte(mustToken(t, testSecret, "", TokenSpec{Subject: "proxy"}))
		userTok := []byte(mustToken(t, testSecret, "", TokenSpec{Subject: "alice", Expiry: time.Minute, Now: clk.now}))
		se, err := s.Connect(ctx, Connect{Method: "token", Data: proxyTok, OriginalPrincipal: "alice",
			OriginalAuthMethod: "token", OriginalAuthData: userTok, SupportsRefresh: true})
		if err != nil {
			t.Fatal(checkOrig, err)
		}
		if p := se.Principal(); p.Role != "proxy" || p.Original != "alice" {
			t.Fatalf("principal %+v", p)
		}
		// A non-proxy may not speak for someone else.
		if _, err := s.Connect(ctx, Connect{Method: "token", Data: userTok, OriginalPrincipal: "admin"}); !errors.Is(err, ErrAuthentication) {
			t.Fatalf("non-proxy forwarding: %v", err)
		}
		// The original principal may not be a proxy role.
		if _, err := s.Connect(ctx, Connect{Method: "token", Data: proxyTok, OriginalPrincipal: "proxy"}); err == nil {
			t.Fatal("proxy as original principal accepted")
		}
		_, err = s.Connect(ctx, Connect{Method: "token", Data: proxyTok, OriginalPrincipal: "admin",
			OriginalAuthMethod: "token", OriginalAuthData: userTok})
		if checkOrig != (err != nil) {
			t.Fatalf("authenticateOriginalAuthData=%v: claimed admin with alice's token: %v", checkOrig, err)
		}
		if checkOrig {
			// The original credentials are what expires; the client refreshes them through the
			// spliced connection.
			clk.t = clk.t.Add(2 * time.Minute)
			if act, _, _ := se.Tick(clk.t); act != RefreshChallenge {
				t.Fatalf("original expiry: %v", act)
			}
			fresh := []byte(mustToken(t, testSecret, "", TokenSpec{Subject: "alice", Expiry: time.Hour, Now: clk.now}))
			if err := se.Respond(ctx, "token", fresh); err != nil {
				t.Fatal(err)
			}
			clk.t = time.Unix(1_700_000_000, 0)
		}
	}
}
