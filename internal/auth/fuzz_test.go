package auth

import (
	"context"
	"crypto/x509"
	"net/http/httptest"
	"testing"

	"github.com/magnetar-io/magnetar/internal/config"
)

// FuzzTokenAuthentication feeds arbitrary auth data to the token provider: it must never
// panic and never accept anything but a token signed with the secret.
func FuzzTokenAuthentication(f *testing.F) {
	good := mustToken(f, testSecret, "", TokenSpec{Subject: "alice"})
	f.Add([]byte(good))
	f.Add([]byte(b64(`{"alg":"none"}`) + "." + b64(`{"sub":"admin"}`) + "."))
	f.Add([]byte("a.b.c"))
	f.Add([]byte("...."))
	s := tokenService(f, nil, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := authToken(t, s, string(data))
		if err == nil && string(data) != good && id.Role != "alice" {
			// Only tokens signed with the secret authenticate; alice's is the only one seeded.
			t.Fatalf("accepted %q as %+v", data, id)
		}
	})
}

// FuzzAuthData feeds arbitrary CONNECT method/data and HTTP Authorization headers to a
// service with every provider.
func FuzzAuthData(f *testing.F) {
	f.Add("basic", []byte("admin:123456"), "Basic YWRtaW46MTIzNDU2")
	f.Add("token", []byte("x.y.z"), "Bearer x.y.z")
	f.Add("tls", []byte{}, "")
	f.Add("", []byte{0xff}, "Basic ====")
	f.Add("none", []byte(":"), "Bearer ")
	conf := writeFile(f, ".htpasswd", []byte(htpasswd))
	s := tokenService(f, func(c *config.AuthenticationConfig) {
		c.Providers = []string{"tls", "token", "basic"}
		c.Basic.Conf = conf
		c.AnonymousUserRole = "anonymous"
	}, nil)
	f.Fuzz(func(t *testing.T, method string, data []byte, header string) {
		id, err := s.Authenticate(context.Background(), Credentials{Method: method, Data: data, PeerCertificates: []*x509.Certificate{}})
		if err == nil && id.Role == "admin" && !(method == "basic" && string(data) == "admin:123456") {
			t.Fatalf("admin from %q %q", method, data)
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", header)
		_, _ = s.AuthenticateHTTP(r)
	})
}

func FuzzParseJWK(f *testing.F) {
	f.Add([]byte(`{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}`))
	f.Add([]byte(`{"kty":"RSA","n":"AQAB","e":"AQAB"}`))
	f.Add([]byte(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`))
	f.Fuzz(func(t *testing.T, b []byte) { _, _, _ = ParseJWK(b) })
}

func FuzzHtpasswd(f *testing.F) {
	f.Add([]byte(htpasswd), "123456")
	f.Add([]byte("u:$apr1$$"), "")
	f.Add([]byte("u:$2y$05$......................................................"), "x")
	f.Fuzz(func(t *testing.T, b []byte, pass string) {
		users, err := parseHtpasswd(b)
		if err != nil {
			return
		}
		for _, h := range users {
			_ = checkPassword(pass, h)
		}
	})
}

func FuzzClientParams(f *testing.F) {
	f.Add("token", "token:abc")
	f.Add("tls", "tlsCertFile:/a,tlsKeyFile:/b")
	f.Add("basic", `{"userId":"u","password":"p"}`)
	f.Add("oauth2", `{"issuerUrl":"https://x","privateKey":"data:,{}"}`)
	f.Fuzz(func(t *testing.T, plugin, params string) { _, _ = ParseClientAuth(plugin, params) })
}

func FuzzReadValue(f *testing.F) {
	f.Add("data:;base64,AAAA")
	f.Add("data:,%zz")
	f.Add("QUJD")
	f.Fuzz(func(t *testing.T, v string) {
		if len(v) > 0 && (v[0] == 'f' || v[0] == 'e') {
			return // file: and env: read the machine, not the input
		}
		_, _ = ReadValue(v, false)
		_, _, _ = ShowToken(v)
	})
}
