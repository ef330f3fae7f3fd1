package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ClientAuth is how one of our clients (magnetar admin, magnetar client, the proxy and
// broker towards brokers) authenticates, configured like Pulsar's clients with an auth
// plugin and its parameters (--auth-plugin/--auth-params, authPlugin/authParams in
// client.conf, brokerClientAuthenticationPlugin/Parameters):
//
//	plugin                                                     params
//	org.apache.pulsar.client.impl.auth.AuthenticationToken     token:<jwt> | file:///path | <jwt> | {"token":"..."}
//	org.apache.pulsar.client.impl.auth.AuthenticationTls       tlsCertFile:/p,tlsKeyFile:/p | {"tlsCertFile":..,"tlsKeyFile":..}
//	org.apache.pulsar.client.impl.auth.AuthenticationBasic     {"userId":..,"password":..} | userId:u,password:p
//	org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2  {"type":"client_credentials","issuerUrl":..,"privateKey":"file:///key.json","audience":..,"scope":..}
//
// (or the short names token, tls, basic, oauth2). The zero value (no plugin) sends nothing.
type ClientAuth struct {
	// Method is the auth method name sent in CONNECT ("" when none).
	Method string
	// CertFile and KeyFile are the client certificate of the tls method.
	CertFile, KeyFile string
	// Token supplies the JWT of the token and oauth2 methods.
	Token func(ctx context.Context) (string, error)
	// User and Password are the basic method's credentials.
	User, Password string
	// Params keeps the parsed parameters for adapters (the Go client's constructors).
	Params map[string]string
	// Plugin is the kind: token, tls, basic, oauth2 or "".
	Plugin string
}

var clientPlugins = map[string]string{
	"org.apache.pulsar.client.impl.auth.AuthenticationToken":         "token",
	"org.apache.pulsar.client.impl.auth.AuthenticationTls":           "tls",
	"org.apache.pulsar.client.impl.auth.AuthenticationBasic":         "basic",
	"org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2": "oauth2",
	"org.apache.pulsar.client.impl.auth.AuthenticationDisabled":      "",
	"token": "token", "tls": "tls", "basic": "basic", "oauth2": "oauth2", "": "",
}

// ParseClientAuth reads an auth plugin and its parameters.
func ParseClientAuth(plugin, params string) (*ClientAuth, error) {
	kind, ok := clientPlugins[strings.TrimSpace(plugin)]
	if !ok {
		return nil, fmt.Errorf("%w: unknown auth plugin %q (want AuthenticationToken, AuthenticationTls, AuthenticationBasic, AuthenticationOAuth2 or token, tls, basic, oauth2)", ErrBadConfig, plugin)
	}
	a := &ClientAuth{Plugin: kind}
	p, raw := parseParams(params)
	a.Params = p
	switch kind {
	case "":
		return a, nil
	case "token":
		a.Method = MethodToken
		tok := raw
		if v, ok := p["token"]; ok {
			tok = v
		}
		tok = strings.TrimSpace(tok)
		switch {
		case tok == "":
			return nil, fmt.Errorf("%w: the token plugin needs token:<jwt> or file:///path in its parameters", ErrBadConfig)
		case strings.HasPrefix(tok, "token:"):
			t := strings.TrimPrefix(tok, "token:")
			a.Token = func(context.Context) (string, error) { return t, nil }
		case strings.HasPrefix(tok, "file:"):
			// Read on every use, so a rotated token file is picked up without a restart.
			a.Token = func(context.Context) (string, error) {
				b, err := ReadValue(tok, false)
				return strings.TrimSpace(string(b)), err
			}
		default:
			a.Token = func(context.Context) (string, error) { return tok, nil }
		}
		a.Params = map[string]string{"token": tok}
	case "tls":
		a.Method = MethodTLS
		a.CertFile, a.KeyFile = p["tlsCertFile"], p["tlsKeyFile"]
		if a.CertFile == "" || a.KeyFile == "" {
			return nil, fmt.Errorf("%w: the tls plugin needs tlsCertFile and tlsKeyFile", ErrBadConfig)
		}
	case "basic":
		a.Method = MethodBasic
		a.User, a.Password = p["userId"], p["password"]
		if a.User == "" {
			return nil, fmt.Errorf("%w: the basic plugin needs userId and password", ErrBadConfig)
		}
	case "oauth2":
		a.Method = MethodToken
		o, err := newOAuth2(p)
		if err != nil {
			return nil, err
		}
		a.Token = o.token
	}
	return a, nil
}

// parseParams reads JSON objects or "k1:v1,k2:v2" lists; raw is the text when it is
// neither (a bare token).
func parseParams(s string) (map[string]string, string) {
	s = strings.TrimSpace(s)
	out := map[string]string{}
	if strings.HasPrefix(s, "{") {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) == nil {
			for k, v := range m {
				out[k] = fmt.Sprint(v)
			}
			return out, ""
		}
	}
	if strings.HasPrefix(s, "token:") || strings.HasPrefix(s, "file:") || !strings.Contains(s, ":") {
		return out, s
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, ":")
		if !ok {
			return map[string]string{}, s
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, ""
}

// Data returns the CONNECT/AUTH_RESPONSE auth data.
func (a *ClientAuth) Data(ctx context.Context) ([]byte, error) {
	switch {
	case a == nil || a.Method == "" || a.Method == MethodTLS:
		return nil, nil
	case a.Method == MethodBasic:
		return []byte(a.User + ":" + a.Password), nil
	}
	t, err := a.Token(ctx)
	return []byte(t), err
}

// SetHTTP adds the Authorization header to an HTTP request (tls is the connection's
// certificate, nothing to add).
func (a *ClientAuth) SetHTTP(req *http.Request) error {
	if a == nil {
		return nil
	}
	switch a.Method {
	case MethodBasic:
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(a.User+":"+a.Password)))
	case MethodToken:
		t, err := a.Token(req.Context())
		if err != nil {
			return fmt.Errorf("auth token: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+t)
	}
	return nil
}

// oauth2 is the client-credentials flow of Pulsar's AuthenticationOAuth2: a key file with
// client_id and client_secret, exchanged at the issuer's token endpoint for a JWT that is
// then sent as a token.
type oauth2 struct {
	issuer, audience, scope string
	id, secret              string
	client                  *http.Client

	mu      sync.Mutex
	tok     string
	expires time.Time
}

func newOAuth2(p map[string]string) (*oauth2, error) {
	o := &oauth2{issuer: strings.TrimSuffix(p["issuerUrl"], "/"), audience: p["audience"], scope: p["scope"],
		client: &http.Client{Timeout: 30 * time.Second}}
	if t := p["type"]; t != "" && t != "client_credentials" {
		return nil, fmt.Errorf("%w: oauth2 type %q: only client_credentials is supported", ErrBadConfig, t)
	}
	if o.issuer == "" {
		return nil, fmt.Errorf("%w: the oauth2 plugin needs issuerUrl", ErrBadConfig)
	}
	key := p["privateKey"]
	if key == "" {
		return nil, fmt.Errorf("%w: the oauth2 plugin needs privateKey (a key file with client_id and client_secret)", ErrBadConfig)
	}
	if !strings.Contains(key, ":") {
		key = "file:" + key
	}
	b, err := ReadValue(key, true)
	if err != nil {
		return nil, fmt.Errorf("%w: oauth2 privateKey: %w", ErrBadConfig, err)
	}
	var kf struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if err := json.Unmarshal(b, &kf); err != nil || kf.ClientID == "" {
		return nil, fmt.Errorf("%w: oauth2 privateKey: want a JSON key file with client_id and client_secret", ErrBadConfig)
	}
	o.id, o.secret = kf.ClientID, kf.ClientSecret
	return o, nil
}

func (o *oauth2) token(ctx context.Context) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tok != "" && time.Now().Before(o.expires) {
		return o.tok, nil
	}
	var disc struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	if err := o.getJSON(ctx, http.MethodGet, o.issuer+"/.well-known/openid-configuration", nil, &disc); err != nil {
		return "", err
	}
	if disc.TokenEndpoint == "" {
		return "", fmt.Errorf("oauth2: %s has no token_endpoint", o.issuer)
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {o.id}, "client_secret": {o.secret}}
	if o.audience != "" {
		form.Set("audience", o.audience)
	}
	if o.scope != "" {
		form.Set("scope", o.scope)
	}
	var tr struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err := o.getJSON(ctx, http.MethodPost, disc.TokenEndpoint, strings.NewReader(form.Encode()), &tr); err != nil {
		return "", err
	}
	if tr.AccessToken == "" {
		return "", fmt.Errorf("oauth2: %s answered no access_token", disc.TokenEndpoint)
	}
	o.tok = tr.AccessToken
	// Refresh a little before expiry; without expires_in, fetch again after a minute.
	life := time.Minute
	if tr.ExpiresIn > 0 {
		life = time.Duration(tr.ExpiresIn)*time.Second - min(time.Duration(tr.ExpiresIn)*time.Second/10, time.Minute)
	}
	o.expires = time.Now().Add(life)
	return o.tok, nil
}

func (o *oauth2) getJSON(ctx context.Context, method, u string, body io.Reader, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return fmt.Errorf("oauth2: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := o.client.Do(req)
	if err != nil {
		return fmt.Errorf("oauth2: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxIssuerResponse))
	if err != nil {
		return fmt.Errorf("oauth2: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("oauth2: %s %s: %s", method, u, resp.Status)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("oauth2: %s: %w", u, err)
	}
	return nil
}
