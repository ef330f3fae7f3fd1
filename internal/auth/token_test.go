package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
)

func TestTokenHS256(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	s := tokenService(t, nil, clk.now)
	tok := mustToken(t, testSecret, "", TokenSpec{Subject: "alice", Expiry: time.Hour, Now: clk.now})
	if h, _, _ := ShowToken(tok); h != `{"alg":"HS256"}` {
		t.Fatalf("header %s, want Pulsar's {\"alg\":\"HS256\"}", h)
	}
	id, err := authToken(t, s, tok)
	if err != nil || id.Role != "alice" || !id.Expires.Equal(clk.t.Add(time.Hour)) {
		t.Fatalf("got %+v, %v", id, err)
	}
	clk.t = clk.t.Add(time.Hour + time.Second)
	if _, err := authToken(t, s, tok); !errors.Is(err, ErrAuthentication) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired token: %v", err)
	}
	// A token without exp never expires (Pulsar's admin tokens).
	forever := mustToken(t, testSecret, "", TokenSpec{Subject: "admin"})
	if id, err := authToken(t, s, forever); err != nil || !id.Expires.IsZero() {
		t.Fatalf("no-exp token: %+v %v", id, err)
	}
}

func TestTokenClockSkew(t *testing.T) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	s := tokenService(t, func(c *config.AuthenticationConfig) { c.Token.AllowedClockSkewSeconds = 30 }, clk.now)
	tok := mustToken(t, testSecret, "", TokenSpec{Subject: "bob", Expiry: time.Minute, Now: clk.now})
	clk.t = clk.t.Add(time.Minute + 20*time.Second)
	if _, err := authToken(t, s, tok); err != nil {
		t.Fatalf("within skew: %v", err)
	}
	clk.t = clk.t.Add(20 * time.Second)
	if _, err := authToken(t, s, tok); err == nil {
		t.Fatal("beyond skew accepted")
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// TestTokenForgeries: tampered payloads, alg none (CVE-2021-22160), HS256 signed with the
// RSA public key as secret (key confusion), other secrets, garbage.
func TestTokenForgeries(t *testing.T) {
	s := tokenService(t, nil, nil)
	good := mustToken(t, testSecret, "", TokenSpec{Subject: "alice"})
	parts := strings.Split(good, ".")
	hmacWith := func(key []byte, signing string) string {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(signing))
		return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	priv, pubB64 := rsaKey(t)
	pubDER, _ := base64.StdEncoding.DecodeString(pubB64)
	rsTok := mustToken(t, priv, "RS256", TokenSpec{Subject: "admin"})
	confused := b64(`{"alg":"HS256"}`) + "." + b64(`{"sub":"admin"}`)
	confused += "." + hmacWith(pubDER, confused)

	rsService := tokenService(t, func(c *config.AuthenticationConfig) {
		c.Token.SecretKey, c.Token.PublicKey = "", pubB64
	}, nil)
	if id, err := authToken(t, rsService, rsTok); err != nil || id.Role != "admin" {
		t.Fatalf("RS256 with public key: %+v %v", id, err)
	}

	for name, c := range map[string]struct {
		s   *Service
		tok string
	}{
		"tampered payload":      {s, parts[0] + "." + b64(`{"sub":"admin"}`) + "." + parts[2]},
		"alg none":              {s, b64(`{"alg":"none"}`) + "." + b64(`{"sub":"admin"}`) + "."},
		"alg none upper":        {s, b64(`{"alg":"NONE"}`) + "." + b64(`{"sub":"admin"}`) + "."},
		"alg none with sig":     {s, b64(`{"alg":"none"}`) + "." + b64(`{"sub":"admin"}`) + "." + parts[2]},
		"other secret":          {s, mustToken(t, []byte("another-secret-another-secret-32"), "", TokenSpec{Subject: "admin"})},
		"RS256 to HS service":   {s, rsTok},
		"HS with RSA pub bytes": {rsService, confused},
		"HS to RS service":      {rsService, good},
		"garbage":               {s, "not.a.token"},
		"two parts":             {s, parts[0] + "." + parts[1]},
		"empty":                 {s, ""},
		"no role":               {s, mustToken(t, testSecret, "", TokenSpec{Subject: "x", Claims: map[string]any{"sub": 7}})},
		"huge":                  {s, strings.Repeat("a", maxTokenBytes+1)},
	} {
		if id, err := authToken(t, c.s, c.tok); !errors.Is(err, ErrAuthentication) {
			t.Errorf("%s: accepted as %+v (err %v)", name, id, err)
		}
	}
}

func TestTokenPublicKeyForms(t *testing.T) {
	priv, pubB64 := rsaKey(t)
	der, _ := base64.StdEncoding.DecodeString(pubB64)
	tok := mustToken(t, priv, "", TokenSpec{Subject: "carol"})
	pemText := "-----BEGIN PUBLIC KEY-----\n" + pubB64 + "\n-----END PUBLIC KEY-----\n"
	for _, setting := range []string{
		pubB64,
		"data:;base64," + pubB64,
		"file://" + writeFile(t, "pub.der", der),
		"file:" + writeFile(t, "pub.pem", []byte(pemText)),
	} {
		s := tokenService(t, func(c *config.AuthenticationConfig) { c.Token.SecretKey, c.Token.PublicKey = "", setting }, nil)
		if id, err := authToken(t, s, tok); err != nil || id.Role != "carol" {
			t.Errorf("public key %.30s...: %+v %v", setting, id, err)
		}
	}
	// ES256 with tokenPublicAlg RS256 does not fit: a startup error, not a silent accept.
	_, ecPub := ecKey(t)
	cfg := config.DefaultAuthenticationConfig()
	cfg.Enabled, cfg.Providers = true, []string{"token"}
	cfg.Token.PublicKey, cfg.Token.PublicAlg = ecPub, "RS256"
	if _, err := NewService(cfg, ServiceOptions{}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("mismatched tokenPublicAlg: %v", err)
	}
	cfg.Token.PublicAlg = ""
	cfg.Token.PublicKey = "file:///does/not/exist"
	if _, err := NewService(cfg, ServiceOptions{}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("missing key file: %v", err)
	}
}

func TestTokenClaimAndAudience(t *testing.T) {
	s := tokenService(t, func(c *config.AuthenticationConfig) {
		c.Token.AuthClaim, c.Token.AudienceClaim, c.Token.Audience = "role", "aud", "broker-a"
	}, nil)
	ok := mustToken(t, testSecret, "", TokenSpec{Subject: "ignored", Claims: map[string]any{"role": "dave", "aud": []string{"x", "broker-a"}}})
	if id, err := authToken(t, s, ok); err != nil || id.Role != "dave" {
		t.Fatalf("claim/audience: %+v %v", id, err)
	}
	wrongAud := mustToken(t, testSecret, "", TokenSpec{Subject: "x", Claims: map[string]any{"role": "dave", "aud": "broker-b"}})
	if _, err := authToken(t, s, wrongAud); err == nil {
		t.Fatal("wrong audience accepted")
	}
	noAud := mustToken(t, testSecret, "", TokenSpec{Subject: "x", Claims: map[string]any{"role": "dave"}})
	if _, err := authToken(t, s, noAud); err == nil {
		t.Fatal("missing audience accepted")
	}
}

func TestTokenSecretTooShort(t *testing.T) {
	cfg := config.DefaultAuthenticationConfig()
	cfg.Enabled, cfg.Providers = true, []string{"token"}
	cfg.Token.SecretKey = base64.StdEncoding.EncodeToString([]byte("short"))
	if _, err := NewService(cfg, ServiceOptions{}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("short secret: %v", err)
	}
}

func TestValidateAndCreateKeyPairs(t *testing.T) {
	for _, alg := range []string{"RS256", "ES256", "ES384", "ES512", "PS256"} {
		pub, priv, err := NewKeyPair(alg)
		if err != nil {
			t.Fatal(alg, err)
		}
		key, err := ParsePrivateKey(priv)
		if err != nil {
			t.Fatal(alg, err)
		}
		tok := mustToken(t, key, alg, TokenSpec{Subject: "svc", Expiry: time.Hour})
		id, err := ValidateToken(tok, "", "data:;base64,"+base64.StdEncoding.EncodeToString(pub), nil)
		if err != nil || id.Role != "svc" {
			t.Fatalf("%s: %+v %v", alg, id, err)
		}
	}
	sec, err := NewSecretKey("HS512")
	if err != nil || len(sec) != 64 {
		t.Fatal(len(sec), err)
	}
	tok := mustToken(t, sec, "HS512", TokenSpec{Subject: "x"})
	if _, err := ValidateToken(tok, base64.StdEncoding.EncodeToString(sec), "", nil); err != nil {
		t.Fatal(err)
	}
}
