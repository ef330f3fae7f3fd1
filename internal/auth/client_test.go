package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParseClientAuth(t *testing.T) {
	ctx := context.Background()
	tokFile := writeFile(t, "token.txt", []byte("eyJ.file.token\n"))
	for _, c := range []struct {
		plugin, params string
		method, data   string
	}{
		{"org.apache.pulsar.client.impl.auth.AuthenticationToken", "token:eyJ.a.b", "token", "eyJ.a.b"},
		{"token", "file://" + tokFile, "token", "eyJ.file.token"},
		{"token", "eyJ.raw.token", "token", "eyJ.raw.token"},
		{"token", `{"token":"eyJ.json.token"}`, "token", "eyJ.json.token"},
		{"org.apache.pulsar.client.impl.auth.AuthenticationBasic", `{"userId":"admin","password":"123456"}`, "basic", "admin:123456"},
		{"basic", "userId:admin,password:123456", "basic", "admin:123456"},
		{"org.apache.pulsar.client.impl.auth.AuthenticationTls", "tlsCertFile:/c.pem,tlsKeyFile:/k.pem", "tls", ""},
		{"tls", `{"tlsCertFile":"/c.pem","tlsKeyFile":"/k.pem"}`, "tls", ""},
		{"", "", "", ""},
	} {
		a, err := ParseClientAuth(c.plugin, c.params)
		if err != nil {
			t.Errorf("%s %s: %v", c.plugin, c.params, err)
			continue
		}
		d, err := a.Data(ctx)
		if err != nil || a.Method != c.method || string(d) != c.data {
			t.Errorf("%s %s: method %q data %q, %v", c.plugin, c.params, a.Method, d, err)
		}
		if c.method == "tls" && (a.CertFile != "/c.pem" || a.KeyFile != "/k.pem") {
			t.Errorf("tls files: %+v", a)
		}
	}
	for _, c := range [][2]string{
		{"com.example.Auth", ""}, {"token", ""}, {"tls", "tlsCertFile:/c.pem"}, {"basic", "{}"},
		{"oauth2", `{"issuerUrl":"https://x"}`}, {"oauth2", `{"type":"device","issuerUrl":"https://x","privateKey":"/k"}`},
	} {
		if _, err := ParseClientAuth(c[0], c[1]); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%v: %v", c, err)
		}
	}
}

func TestClientAuthOAuth2(t *testing.T) {
	var srv *httptest.Server
	calls := 0
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			fmt.Fprintf(w, `{"issuer":%q,"token_endpoint":"%s/oauth/token"}`, srv.URL, srv.URL)
		case "/oauth/token":
			calls++
			_ = r.ParseForm()
			if r.Form.Get("client_id") != "id" || r.Form.Get("client_secret") != "sec" || r.Form.Get("grant_type") != "client_credentials" {
				http.Error(w, "bad client", http.StatusUnauthorized)
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "jwt-for-" + r.Form.Get("audience"), "expires_in": 3600})
		}
	}))
	defer srv.Close()
	key := writeFile(t, "key.json", []byte(`{"type":"resource","client_id":"id","client_secret":"sec","issuer_url":"x"}`))
	a, err := ParseClientAuth("org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2",
		fmt.Sprintf(`{"type":"client_credentials","issuerUrl":%q,"privateKey":"file://%s","audience":"pulsar"}`, srv.URL, key))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		d, err := a.Data(context.Background())
		if err != nil || string(d) != "jwt-for-pulsar" {
			t.Fatalf("%q %v", d, err)
		}
	}
	if calls != 1 {
		t.Fatalf("token fetched %d times, want once while valid", calls)
	}
	req := httptest.NewRequest("GET", "/", nil)
	if err := a.SetHTTP(req); err != nil || !strings.HasPrefix(req.Header.Get("Authorization"), "Bearer jwt-for") {
		t.Fatal(req.Header, err)
	}
}
