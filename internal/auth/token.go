package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/magnetar-io/magnetar/internal/config"
)

// maxTokenBytes bounds a token before it is parsed; real tokens are well under 8 KiB.
const maxTokenBytes = 64 << 10

// tokenProvider is AuthenticationProviderToken: JWTs signed with one configured key.
//
// Security: the accepted algorithms are fixed when the provider is built, from the key's
// kind: an HMAC secret accepts HS256/384/512 only, a public key only its own family (or
// tokenPublicAlg). So "alg": "none" and the HS/RS key-confusion attack (a token signed with
// HMAC using the public key's bytes as the secret) never reach a verifier that would accept
// them (CVE-2021-22160 was alg:none).
type tokenProvider struct {
	key      any // []byte for HMAC, crypto public key otherwise
	methods  []string
	claim    string
	audClaim string
	audience string
	skew     time.Duration
	now      func() time.Time
}

// hmacAlgs and publicAlgs are the algorithms each kind of key may verify.
var hmacAlgs = []string{"HS256", "HS384", "HS512"}

func publicAlgs(k any) []string {
	switch k := k.(type) {
	case *rsa.PublicKey:
		return []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return []string{"ES256"}
		case elliptic.P384():
			return []string{"ES384"}
		case elliptic.P521():
			return []string{"ES512"}
		}
	case ed25519.PublicKey:
		return []string{"EdDSA"}
	}
	return nil
}

func newTokenProvider(cfg config.TokenAuthConfig, now func() time.Time) (*tokenProvider, error) {
	p := &tokenProvider{claim: cfg.AuthClaim, audClaim: cfg.AudienceClaim, audience: cfg.Audience,
		skew: time.Duration(cfg.AllowedClockSkewSeconds) * time.Second, now: now}
	switch {
	case cfg.SecretKey != "":
		b, err := ReadValue(cfg.SecretKey, false)
		if err != nil {
			return nil, fmt.Errorf("%w: tokenSecretKey: %w", ErrBadConfig, err)
		}
		if len(b) < 32 {
			return nil, fmt.Errorf("%w: tokenSecretKey: %d bytes; HS256 needs at least 32", ErrBadConfig, len(b))
		}
		p.key, p.methods = b, hmacAlgs
	case cfg.PublicKey != "":
		b, err := ReadValue(cfg.PublicKey, false)
		if err != nil {
			return nil, fmt.Errorf("%w: tokenPublicKey: %w", ErrBadConfig, err)
		}
		k, err := ParsePublicKey(b)
		if err != nil {
			return nil, fmt.Errorf("%w: tokenPublicKey: %w", ErrBadConfig, err)
		}
		p.key, p.methods = k, publicAlgs(k)
		if cfg.PublicAlg != "" {
			if !slices.Contains(p.methods, cfg.PublicAlg) {
				return nil, fmt.Errorf("%w: tokenPublicAlg %s does not fit the %T in tokenPublicKey (it fits %v)", ErrBadConfig, cfg.PublicAlg, k, p.methods)
			}
			p.methods = []string{cfg.PublicAlg}
		}
	default:
		return nil, fmt.Errorf("%w: the token provider needs tokenSecretKey or tokenPublicKey", ErrBadConfig)
	}
	return p, nil
}

func (p *tokenProvider) Method() string { return MethodToken }

// tokenOf takes the token from CONNECT/AUTH_RESPONSE data or an HTTP Bearer header.
func tokenOf(c Credentials) (string, error) {
	var tok string
	if c.HTTP {
		t, ok := c.bearer()
		if !ok {
			return "", fmt.Errorf("%w: want an Authorization: Bearer <token> header", ErrAuthentication)
		}
		tok = t
	} else {
		tok = string(c.Data)
	}
	if tok == "" {
		return "", fmt.Errorf("%w: no token given", ErrAuthentication)
	}
	if len(tok) > maxTokenBytes {
		return "", fmt.Errorf("%w: token of %d bytes is larger than %d", ErrAuthentication, len(tok), maxTokenBytes)
	}
	return tok, nil
}

func (p *tokenProvider) Authenticate(_ context.Context, c Credentials) (Identity, error) {
	raw, err := tokenOf(c)
	if err != nil {
		return Identity{}, err
	}
	claims := jwt.MapClaims{}
	_, err = jwt.NewParser(jwt.WithValidMethods(p.methods), jwt.WithLeeway(p.skew), jwt.WithTimeFunc(p.now)).
		ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
			// WithValidMethods already refused other algorithms; check again here, next to
			// the key, so no change to the parser options can open key confusion.
			if !slices.Contains(p.methods, t.Method.Alg()) {
				return nil, fmt.Errorf("algorithm %s not accepted", t.Method.Alg())
			}
			return p.key, nil
		})
	if err != nil {
		return Identity{}, fmt.Errorf("%w: token: %s", ErrAuthentication, describeJWTError(err))
	}
	return p.identity(claims)
}

func (p *tokenProvider) identity(claims jwt.MapClaims) (Identity, error) {
	if p.audience != "" && !claimContains(claims[p.audClaim], p.audience) {
		return Identity{}, fmt.Errorf("%w: token: audience (claim %s) does not include %s", ErrAuthentication, p.audClaim, p.audience)
	}
	role, ok := claims[p.claim].(string)
	if !ok || role == "" {
		return Identity{}, fmt.Errorf("%w: token: no role in claim %s", ErrAuthentication, p.claim)
	}
	id := Identity{Role: role, Method: MethodToken}
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		id.Expires = exp.Add(p.skew)
	}
	return id, nil
}

// claimContains tells whether a string or string-array claim holds want.
func claimContains(v any, want string) bool {
	switch v := v.(type) {
	case string:
		return v == want
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok && s == want {
				return true
			}
		}
	}
	return false
}

// describeJWTError says why a token failed in words a user can act on.
func describeJWTError(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return "expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "not valid yet (nbf)"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "signature does not verify"
	case errors.Is(err, jwt.ErrTokenUnverifiable), errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "cannot be verified: " + err.Error()
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed"
	}
	return err.Error()
}
