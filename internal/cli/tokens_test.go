package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTokensRoundTrip(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.key")
	if code, _, e := run(t, nil, "tokens", "create-secret-key", "--output", secret); code != 0 {
		t.Fatal(e)
	}
	code, tok, e := run(t, nil, "tokens", "create", "--secret-key", "file://"+secret, "--subject", "alice", "--expiry-time", "1d", "--headers", "kid=k1")
	if code != 0 {
		t.Fatal(e)
	}
	tok = strings.TrimSpace(tok)
	code, out, _ := run(t, nil, "tokens", "show", tok)
	if code != 0 || !strings.Contains(out, `"sub":"alice"`) || !strings.Contains(out, `"kid":"k1"`) || !strings.Contains(out, `"alg":"HS256"`) {
		t.Fatalf("show: %d %s", code, out)
	}
	code, out, _ = run(t, nil, "tokens", "validate", "--secret-key", secret, tok)
	if code != 0 || !strings.Contains(out, "role alice") || strings.Contains(out, "never") {
		t.Fatalf("validate: %d %s", code, out)
	}
	priv, pub := filepath.Join(dir, "priv.key"), filepath.Join(dir, "pub.key")
	if code, _, e := run(t, nil, "tokens", "create-key-pair", "--output-private-key", priv, "--output-public-key", pub); code != 0 {
		t.Fatal(e)
	}
	code, rs, e := run(t, nil, "tokens", "create", "--private-key", priv, "-s", "bob")
	if code != 0 {
		t.Fatal(e)
	}
	rs = strings.TrimSpace(rs)
	if code, out, _ := run(t, nil, "tokens", "validate", "--public-key", "file://"+pub, rs); code != 0 || !strings.Contains(out, "role bob, expires never") {
		t.Fatalf("RS256 validate: %d %s", code, out)
	}
	// The wrong key, a tampered token and bad flags fail.
	if code, _, _ := run(t, nil, "tokens", "validate", "--secret-key", secret, rs); code == 0 {
		t.Fatal("RS256 token validated with the HMAC secret")
	}
	if code, _, _ := run(t, nil, "tokens", "validate", "--secret-key", secret, tok[:len(tok)-2]+"xx"); code == 0 {
		t.Fatal("tampered token validated")
	}
	for _, args := range [][]string{
		{"tokens", "create", "--subject", "x"},
		{"tokens", "create", "--secret-key", secret},
		{"tokens", "create", "--secret-key", secret, "-s", "x", "-e", "soon"},
		{"tokens", "create-secret-key", "-a", "RS256"},
		{"tokens", "show", "nonsense"},
		{"tokens", "create-key-pair", "--output-private-key", priv},
	} {
		if code, _, _ := run(t, nil, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestParseRelativeTime(t *testing.T) {
	for in, want := range map[string]time.Duration{"30s": 30 * time.Second, "10m": 10 * time.Minute, "2d": 48 * time.Hour,
		"1w": 7 * 24 * time.Hour, "1y": 365 * 24 * time.Hour, "1h30m": 90 * time.Minute} {
		if got, err := parseRelativeTime(in); err != nil || got != want {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	for _, in := range []string{"", "d", "-1d", "1x", "99999999999999999y"} {
		if _, err := parseRelativeTime(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
