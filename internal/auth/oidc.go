package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/magnetar-io/magnetar/internal/config"
)

// openIDProvider is AuthenticationProviderOpenID: tokens ("token" method) issued by one of
// openIDAllowedTokenIssuers, verified with the issuer's keys from its JWKS. The JWKS is
// found through the issuer's /.well-known/openid-configuration and cached per issuer.
//
// Only asymmetric algorithms are accepted, each only with a key of its own type, so a token
// can never make the provider verify an HMAC with public key bytes; exp and aud are
// required; iss must be allowed before anything is fetched, so a token cannot make the
// broker fetch from an address it chose.
type openIDProvider struct {
	issuers   []string
	audiences []string
	roleClaim string
	leeway    time.Duration
	refresh   time.Duration // refetch an issuer's keys this long after fetching them
	expire    time.Duration // forget them this long after fetching them
	maxCached int
	client    *http.Client
	now       func() time.Time

	mu    sync.Mutex
	cache map[string]*issuerKeys
}

// issuerKeys is one issuer's JWKS and when it was fetched.
type issuerKeys struct {
	mu      sync.Mutex // serializes fetches of this issuer
	keys    map[string]any
	fetched time.Time
	// lastMiss rate-limits refetches for unknown key ids (key rotation).
	lastMiss time.Time
}

// maxIssuerResponse bounds a discovery or JWKS document.
const maxIssuerResponse = 1 << 20

// keyMissRefetch is the least time between JWKS refetches caused by an unknown "kid".
const keyMissRefetch = 30 * time.Second

func newOpenIDProvider(cfg config.OpenIDAuthConfig, now func() time.Time) (*openIDProvider, error) {
	if len(cfg.AllowedTokenIssuers) == 0 {
		return nil, fmt.Errorf("%w: the openid provider needs openIDAllowedTokenIssuers", ErrBadConfig)
	}
	if len(cfg.AllowedAudiences) == 0 {
		return nil, fmt.Errorf("%w: the openid provider needs openIDAllowedAudiences", ErrBadConfig)
	}
	for _, iss := range cfg.AllowedTokenIssuers {
		if cfg.RequireIssuersUseHTTPS && !strings.HasPrefix(iss, "https://") {
			return nil, fmt.Errorf("%w: openIDAllowedTokenIssuers: %s is not https:// (openIDRequireIssuersUseHttps)", ErrBadConfig, iss)
		}
	}
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: time.Duration(cfg.HTTPConnectionTimeoutMillis) * time.Millisecond}).DialContext,
		TLSHandshakeTimeout:   time.Duration(cfg.HTTPConnectionTimeoutMillis) * time.Millisecond,
		ResponseHeaderTimeout: time.Duration(cfg.HTTPReadTimeoutMillis) * time.Millisecond,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
	}
	if cfg.TokenIssuerTrustCertsFilePath != "" {
		pool, err := loadCertPool(cfg.TokenIssuerTrustCertsFilePath)
		if err != nil {
			return nil, fmt.Errorf("%w: openIDTokenIssuerTrustCertsFilePath: %w", ErrBadConfig, err)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	return &openIDProvider{
		issuers: cfg.AllowedTokenIssuers, audiences: cfg.AllowedAudiences, roleClaim: cfg.RoleClaim,
		leeway:  time.Duration(cfg.AcceptedTimeLeewaySeconds) * time.Second,
		refresh: time.Duration(cfg.CacheRefreshAfterWriteSeconds) * time.Second,
		expire:  time.Duration(cfg.CacheExpirationSeconds) * time.Second, maxCached: cfg.CacheSize,
		// Redirects are not followed: the issuer's documents must be where it says.
		client: &http.Client{Transport: tr, Timeout: time.Duration(cfg.HTTPConnectionTimeoutMillis+cfg.HTTPReadTimeoutMillis) * time.Millisecond,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		now: now, cache: map[string]*issuerKeys{},
	}, nil
}

func (p *openIDProvider) Method() string { return MethodToken }

// asymmetricAlgs are the only algorithms an issuer's token may use.
var asymmetricAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

func (p *openIDProvider) Authenticate(ctx context.Context, c Credentials) (Identity, error) {
	raw, err := tokenOf(c)
	if err != nil {
		return Identity{}, err
	}
	// Read iss and kid without trusting them, to pick the issuer and key.
	unverified, _, err := jwt.NewParser().ParseUnverified(raw, jwt.MapClaims{})
	if err != nil {
		return Identity{}, fmt.Errorf("%w: openid: malformed token", ErrAuthentication)
	}
	iss, _ := unverified.Claims.(jwt.MapClaims)["iss"].(string)
	if !slices.Contains(p.issuers, iss) {
		return Identity{}, fmt.Errorf("%w: openid: issuer %q is not allowed", ErrAuthentication, iss)
	}
	kid, _ := unverified.Header["kid"].(string)
	key, err := p.key(ctx, iss, kid)
	if err != nil {
		return Identity{}, err
	}
	claims := jwt.MapClaims{}
	_, err = jwt.NewParser(jwt.WithValidMethods(asymmetricAlgs), jwt.WithLeeway(p.leeway), jwt.WithTimeFunc(p.now),
		jwt.WithIssuer(iss), jwt.WithExpirationRequired()).
		ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
			if !slices.Contains(publicAlgs(key), t.Method.Alg()) {
				return nil, fmt.Errorf("algorithm %s does not fit the issuer's key", t.Method.Alg())
			}
			return key, nil
		})
	if err != nil {
		return Identity{}, fmt.Errorf("%w: openid: token %s", ErrAuthentication, describeJWTError(err))
	}
	aud := false
	for _, a := range p.audiences {
		aud = aud || claimContains(claims["aud"], a)
	}
	if !aud {
		return Identity{}, fmt.Errorf("%w: openid: audience is not one of openIDAllowedAudiences", ErrAuthentication)
	}
	role, ok := claims[p.roleClaim].(string)
	if !ok || role == "" {
		return Identity{}, fmt.Errorf("%w: openid: no role in claim %s", ErrAuthentication, p.roleClaim)
	}
	id := Identity{Role: role, Method: MethodToken}
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		id.Expires = exp.Add(p.leeway)
	}
	return id, nil
}

// key finds the issuer's key with id kid (any key when the issuer has one and kid is empty),
// fetching the JWKS when it is missing, stale, or lacks kid.
func (p *openIDProvider) key(ctx context.Context, iss, kid string) (any, error) {
	p.mu.Lock()
	ik := p.cache[iss]
	if ik == nil {
		if len(p.cache) >= p.maxCached {
			clear(p.cache)
		}
		ik = &issuerKeys{}
		p.cache[iss] = ik
	}
	p.mu.Unlock()
	ik.mu.Lock()
	defer ik.mu.Unlock()
	now := p.now()
	pick := func() any {
		if kid == "" && len(ik.keys) == 1 {
			for _, k := range ik.keys {
				return k
			}
		}
		return ik.keys[kid]
	}
	stale := ik.keys == nil || now.Sub(ik.fetched) >= p.refresh
	if k := pick(); k == nil && !stale && now.Sub(ik.lastMiss) >= keyMissRefetch {
		ik.lastMiss, stale = now, true
	}
	if stale {
		keys, err := p.fetch(ctx, iss)
		switch {
		case err == nil:
			ik.keys, ik.fetched = keys, now
		case ik.keys == nil || now.Sub(ik.fetched) >= p.expire:
			ik.keys = nil
			return nil, fmt.Errorf("%w: openid: cannot get the keys of %s: %w", ErrAuthentication, iss, err)
		}
		// Otherwise keep serving the keys we have until they expire.
	}
	if k := pick(); k != nil {
		return k, nil
	}
	return nil, fmt.Errorf("%w: openid: issuer %s has no key %q", ErrAuthentication, iss, kid)
}

// fetch reads the issuer's discovery document and its JWKS.
func (p *openIDProvider) fetch(ctx context.Context, iss string) (map[string]any, error) {
	var disc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := p.getJSON(ctx, strings.TrimSuffix(iss, "/")+"/.well-known/openid-configuration", &disc); err != nil {
		return nil, err
	}
	if disc.Issuer != iss {
		return nil, fmt.Errorf("discovery document names issuer %q, not %q", disc.Issuer, iss)
	}
	if disc.JWKSURI == "" || (strings.HasPrefix(iss, "https://") && !strings.HasPrefix(disc.JWKSURI, "https://")) {
		return nil, fmt.Errorf("discovery document has no usable jwks_uri (%q)", disc.JWKSURI)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := p.getJSON(ctx, disc.JWKSURI, &set); err != nil {
		return nil, err
	}
	keys := map[string]any{}
	for _, raw := range set.Keys {
		kid, k, err := ParseJWK(raw)
		if err != nil {
			continue // keys of other uses or types are not ours to use
		}
		keys[kid] = k
	}
	if len(keys) == 0 {
		return nil, errors.New("the JWKS has no usable signing key")
	}
	return keys, nil
}

func (p *openIDProvider) getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxIssuerResponse+1))
	if err != nil {
		return err
	}
	if len(b) > maxIssuerResponse {
		return fmt.Errorf("GET %s: answer larger than %d bytes", url, maxIssuerResponse)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// ParseJWK decodes one JSON Web Key (RFC 7517/7518/8037) used for signatures: RSA, EC
// (P-256/384/521) or OKP Ed25519. It returns the key id and the public key.
func ParseJWK(raw []byte) (string, any, error) {
	var j struct {
		Kty, Kid, Use, Crv, N, E, X, Y string
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		return "", nil, err
	}
	if j.Use != "" && j.Use != "sig" {
		return "", nil, fmt.Errorf("key %s is for %q, not signatures", j.Kid, j.Use)
	}
	num := func(s string) (*big.Int, error) {
		b, err := decodeBase64(s)
		if err != nil || len(b) == 0 {
			return nil, fmt.Errorf("bad key parameter")
		}
		return new(big.Int).SetBytes(b), nil
	}
	switch j.Kty {
	case "RSA":
		n, err := num(j.N)
		if err != nil {
			return "", nil, err
		}
		e, err := num(j.E)
		if err != nil || !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 {
			return "", nil, fmt.Errorf("bad RSA exponent")
		}
		k, err := checkPublicKey(&rsa.PublicKey{N: n, E: int(e.Int64())})
		return j.Kid, k, err
	case "EC":
		curves := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}
		curve, ok := curves[j.Crv]
		if !ok {
			return "", nil, fmt.Errorf("unsupported curve %q", j.Crv)
		}
		x, err := num(j.X)
		if err != nil {
			return "", nil, err
		}
		y, err := num(j.Y)
		if err != nil {
			return "", nil, err
		}
		size := (curve.Params().BitSize + 7) / 8
		buf := make([]byte, 1+2*size)
		buf[0] = 4
		if len(x.Bytes()) > size || len(y.Bytes()) > size {
			return "", nil, fmt.Errorf("EC point does not fit %s", j.Crv)
		}
		x.FillBytes(buf[1 : 1+size])
		y.FillBytes(buf[1+size:])
		// ParseUncompressedPublicKey checks the point is on the curve.
		k, err := ecdsa.ParseUncompressedPublicKey(curve, buf)
		if err != nil {
			return "", nil, err
		}
		return j.Kid, k, nil
	case "OKP":
		if j.Crv != "Ed25519" {
			return "", nil, fmt.Errorf("unsupported curve %q", j.Crv)
		}
		b, err := decodeBase64(j.X)
		if err != nil || len(b) != ed25519.PublicKeySize {
			return "", nil, fmt.Errorf("bad Ed25519 key")
		}
		return j.Kid, ed25519.PublicKey(b), nil
	}
	return "", nil, fmt.Errorf("unsupported key type %q", j.Kty)
}

// loadCertPool reads PEM CA certificates.
func loadCertPool(path string) (*x509.CertPool, error) {
	b, err := readFileLimited(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return pool, nil
}
