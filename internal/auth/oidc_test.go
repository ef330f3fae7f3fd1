package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
)

// issuer is an OpenID provider: discovery and a JWKS over HTTPS, with keys that can rotate.
type issuer struct {
	srv     *httptest.Server
	fetches atomic.Int32
	mu      sync.Mutex
	keys    []map[string]string
}

func newIssuer(t *testing.T) *issuer {
	is := &issuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		is.fetches.Add(1)
		is.mu.Lock()
		defer is.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": is.keys})
	})
	is.srv = httptest.NewTLSServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func b64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func (is *issuer) setRSA(kid string, k *rsa.PublicKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys = []map[string]string{{"kty": "RSA", "kid": kid, "use": "sig", "n": b64u(k.N.Bytes()), "e": b64u(big.NewInt(int64(k.E)).Bytes())}}
}

func (is *issuer) addEC(kid string, k *ecdsa.PublicKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	b, _ := k.Bytes()
	n := (len(b) - 1) / 2
	is.keys = append(is.keys, map[string]string{"kty": "EC", "kid": kid, "crv": "P-256", "x": b64u(b[1 : 1+n]), "y": b64u(b[1+n:])})
}

func openIDService(t *testing.T, is *issuer, now func() time.Time) *Service {
	t.Helper()
	ca := writeFile(t, "issuer.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: is.srv.Certificate().Raw}))
	cfg := config.DefaultAuthenticationConfig()
	cfg.Enabled = true
	cfg.Providers = []string{"org.apache.pulsar.broker.authentication.oidc.AuthenticationProviderOpenID", "token"}
	cfg.Token.SecretKey = secretSetting()
	cfg.OpenID.AllowedTokenIssuers = []string{is.srv.URL}
	cfg.OpenID.AllowedAudiences = []string{"pulsar"}
	cfg.OpenID.TokenIssuerTrustCertsFilePath = ca
	s, err := NewService(cfg, ServiceOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func signed(t *testing.T, key any, alg, kid string, claims map[string]any) string {
	t.Helper()
	h := map[string]any{}
	if kid != "" {
		h["kid"] = kid
	}
	return mustToken(t, key, alg, TokenSpec{Subject: claims["sub"].(string), Claims: claims, Headers: h})
}

func TestOpenID(t *testing.T) {
	is := newIssuer(t)
	clk := &clock{t: time.Now()}
	s := openIDService(t, is, clk.now)
	k1, _ := rsaKey(t)
	is.setRSA("k1", &k1.PublicKey)
	claims := func(extra map[string]any) map[string]any {
		c := map[string]any{"sub": "svc-a", "iss": is.srv.URL, "aud": "pulsar", "exp": clk.t.Add(time.Hour).Unix()}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	id, err := authToken(t, s, signed(t, k1, "RS256", "k1", claims(nil)))
	if err != nil || id.Role != "svc-a" {
		t.Fatalf("openid token: %+v %v", id, err)
	}
	// The static-key token provider still answers to "token" beside it.
	if id, err := authToken(t, s, mustToken(t, testSecret, "", TokenSpec{Subject: "static"})); err != nil || id.Role != "static" {
		t.Fatalf("static token next to openid: %+v %v", id, err)
	}
	before := is.fetches.Load()
	for name, tok := range map[string]string{
		"wrong audience": signed(t, k1, "RS256", "k1", claims(map[string]any{"aud": "other"})),
		"no exp":         signed(t, k1, "RS256", "k1", map[string]any{"sub": "x", "iss": is.srv.URL, "aud": "pulsar"}),
		"expired":        signed(t, k1, "RS256", "k1", claims(map[string]any{"exp": clk.t.Add(-time.Hour).Unix()})),
		"unknown issuer": signed(t, k1, "RS256", "k1", claims(map[string]any{"iss": "https://evil.example"})),
		"HS256 with n":   signed(t, k1.N.Bytes(), "HS256", "k1", claims(nil)),
		"other key":      signed(t, mustRSA(t), "RS256", "k1", claims(nil)),
	} {
		if _, err := authToken(t, s, tok); !errors.Is(err, ErrAuthentication) {
			t.Errorf("%s accepted: %v", name, err)
		}
	}
	if is.fetches.Load() != before {
		t.Errorf("bad tokens made the broker fetch keys %d times", is.fetches.Load()-before)
	}
	// Key rotation: a token with a new kid makes the provider fetch again once.
	k2, _ := rsaKey(t)
	is.setRSA("k2", &k2.PublicKey)
	ec, _ := ecKey(t)
	is.addEC("e1", &ec.PublicKey)
	if id, err := authToken(t, s, signed(t, k2, "RS256", "k2", claims(nil))); err != nil || id.Role != "svc-a" {
		t.Fatalf("rotated key: %+v %v", id, err)
	}
	if id, err := authToken(t, s, signed(t, ec, "ES256", "e1", claims(nil))); err != nil || id.Role != "svc-a" {
		t.Fatalf("EC key: %+v %v", id, err)
	}
	// An EC key cannot verify an RS256 token (alg/key type confusion).
	if _, err := authToken(t, s, signed(t, k2, "RS256", "e1", claims(nil))); err == nil {
		t.Fatal("RS256 token verified against an EC key")
	}
	// Unknown kids do not make it refetch on every token.
	n := is.fetches.Load()
	for i := 0; i < 5; i++ {
		_, _ = authToken(t, s, signed(t, k2, "RS256", "nope", claims(nil)))
	}
	if got := is.fetches.Load() - n; got > 1 {
		t.Fatalf("unknown kid refetched %d times", got)
	}
	_ = context.Background()
}

func mustRSA(t *testing.T) *rsa.PrivateKey {
	k, _ := rsaKey(t)
	return k
}

func TestParseJWKErrors(t *testing.T) {
	for _, j := range []string{
		`{"kty":"RSA","n":"AQAB","e":"AQAB"}`, // too small
		`{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}`,
		`{"kty":"oct","k":"c2VjcmV0"}`,
		`{"kty":"RSA","use":"enc","n":"AQAB","e":"AQAB"}`,
		`{"kty":"OKP","crv":"X25519","x":"AA"}`,
		`not json`,
	} {
		if _, _, err := ParseJWK([]byte(j)); err == nil {
			t.Errorf("%s accepted", j)
		}
	}
}
