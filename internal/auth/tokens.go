package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/magnetar-io/magnetar/internal/config"
)

// Token tools, as `pulsar tokens` has them: keys in Pulsar's formats (a raw HMAC secret;
// DER X.509 public and PKCS#8 private keys) and tokens with a "sub" claim, an optional
// "exp", and a header that holds only "alg" (plus any extra headers asked for).

// NewSecretKey returns a random HMAC secret for alg (HS256: 32 bytes, HS384: 48, HS512: 64).
func NewSecretKey(alg string) ([]byte, error) {
	n := map[string]int{"HS256": 32, "HS384": 48, "HS512": 64}[alg]
	if n == 0 {
		return nil, fmt.Errorf("secret keys are for HS256, HS384 or HS512, not %q", alg)
	}
	b := make([]byte, n)
	_, err := rand.Read(b)
	return b, err
}

// NewKeyPair returns a DER public key (X.509 SubjectPublicKeyInfo) and a DER private key
// (PKCS#8) for alg: RS256/384/512 (RSA 2048) or ES256/384/512.
func NewKeyPair(alg string) (public, private []byte, err error) {
	var priv any
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ES384":
		priv, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ES512":
		priv, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	default:
		return nil, nil, fmt.Errorf("key pairs are for RS256/384/512, PS256/384/512 or ES256/384/512, not %q", alg)
	}
	if err != nil {
		return nil, nil, err
	}
	private, err = x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, err
	}
	pub := priv.(crypto.Signer).Public()
	public, err = x509.MarshalPKIXPublicKey(pub)
	return public, private, err
}

// TokenSpec is a token to create.
type TokenSpec struct {
	Subject string
	// Expiry is the lifetime from now; 0 means the token never expires.
	Expiry time.Duration
	// Headers are extra header fields (pulsar tokens create --headers k=v).
	Headers map[string]any
	// Claims are extra claims (audience and the like).
	Claims map[string]any
	Now    func() time.Time
}

// CreateToken signs spec with a secret (HS*) or a private key (RS*, PS*, ES*); alg "" picks
// HS256 for a secret and the key's usual algorithm otherwise.
func CreateToken(key any, alg string, spec TokenSpec) (string, error) {
	if spec.Subject == "" {
		return "", errors.New("a token needs a subject")
	}
	now := time.Now
	if spec.Now != nil {
		now = spec.Now
	}
	if alg == "" {
		switch k := key.(type) {
		case []byte:
			alg = "HS256"
		case *rsa.PrivateKey:
			alg = "RS256"
		case *ecdsa.PrivateKey:
			alg = map[int]string{256: "ES256", 384: "ES384", 521: "ES512"}[k.Curve.Params().BitSize]
		}
	}
	m := jwt.GetSigningMethod(alg)
	if m == nil || alg == "none" {
		return "", fmt.Errorf("unknown signing algorithm %q", alg)
	}
	claims := jwt.MapClaims{"sub": spec.Subject}
	for k, v := range spec.Claims {
		claims[k] = v
	}
	if spec.Expiry > 0 {
		claims["exp"] = now().Add(spec.Expiry).Unix()
	}
	t := jwt.NewWithClaims(m, claims)
	delete(t.Header, "typ") // Pulsar's tokens carry only "alg"
	for k, v := range spec.Headers {
		if k != "alg" {
			t.Header[k] = v
		}
	}
	return t.SignedString(key)
}

// ShowToken decodes a token without verifying it: its header and claims as JSON.
func ShowToken(tok string) (header, claims string, err error) {
	parts := strings.Split(strings.TrimSpace(tok), ".")
	if len(parts) != 3 {
		return "", "", errors.New("a token has three dot-separated parts")
	}
	dec := func(s string) (string, error) {
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
		if err != nil {
			return "", fmt.Errorf("not base64url: %w", err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return "", fmt.Errorf("not JSON: %w", err)
		}
		return string(b), nil
	}
	if header, err = dec(parts[0]); err != nil {
		return "", "", fmt.Errorf("header: %w", err)
	}
	if claims, err = dec(parts[1]); err != nil {
		return "", "", fmt.Errorf("claims: %w", err)
	}
	return header, claims, nil
}

// ValidateToken checks a token with a secret or public key setting (the forms of
// tokenSecretKey/tokenPublicKey) the way the broker would, and returns its role and expiry.
func ValidateToken(tok, secretKey, publicKey string, now func() time.Time) (Identity, error) {
	if now == nil {
		now = time.Now
	}
	p, err := newTokenProvider(tokenConfig(secretKey, publicKey), now)
	if err != nil {
		return Identity{}, err
	}
	return p.Authenticate(context.Background(), Credentials{Method: MethodToken, Data: []byte(strings.TrimSpace(tok))})
}

func tokenConfig(secretKey, publicKey string) config.TokenAuthConfig {
	c := config.DefaultAuthenticationConfig().Token
	c.SecretKey, c.PublicKey = secretKey, publicKey
	return c
}
