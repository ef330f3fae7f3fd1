package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
)

// secret is a 32-byte HS256 key in the tokenSecretKey "data:" form.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

func secretSetting() string {
	return "data:;base64," + base64.StdEncoding.EncodeToString(testSecret)
}

func mustToken(t testing.TB, key any, alg string, spec TokenSpec) string {
	t.Helper()
	tok, err := CreateToken(key, alg, spec)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func rsaKey(t testing.TB) (*rsa.PrivateKey, string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return k, base64.StdEncoding.EncodeToString(der)
}

func ecKey(t testing.TB) (*ecdsa.PrivateKey, string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return k, base64.StdEncoding.EncodeToString(der)
}

// clock is a settable time for expiry tests (no sleeping).
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func tokenService(t testing.TB, mod func(*config.AuthenticationConfig), now func() time.Time) *Service {
	t.Helper()
	cfg := config.DefaultAuthenticationConfig()
	cfg.Enabled = true
	cfg.Providers = []string{"org.apache.pulsar.broker.authentication.AuthenticationProviderToken"}
	cfg.Token.SecretKey = secretSetting()
	if mod != nil {
		mod(&cfg)
	}
	s, err := NewService(cfg, ServiceOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writeFile(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func authToken(t testing.TB, s *Service, tok string) (Identity, error) {
	t.Helper()
	return s.Authenticate(context.Background(), Credentials{Method: MethodToken, Data: []byte(tok)})
}
