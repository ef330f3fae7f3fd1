package config

import (
	"strings"
	"testing"
)

func TestSecurityValidate(t *testing.T) {
	ok := DefaultSecurityConfig()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		mod func(*SecurityConfig)
		key string
	}{
		"tls port without cert": {func(c *SecurityConfig) { c.ServicePortTLS = 6651 }, "tlsCertificateFilePath"},
		"cert without key":      {func(c *SecurityConfig) { c.TLS.CertificateFilePath = "/c.pem" }, "tlsKeyFilePath"},
		"old protocol":          {func(c *SecurityConfig) { c.TLS.Protocols = []string{"TLSv1"} }, "tlsProtocols"},
		"authz without authn":   {func(c *SecurityConfig) { c.Authz.Enabled = true }, "authorizationEnabled"},
		"authn no providers":    {func(c *SecurityConfig) { c.Authn.Enabled = true }, "authenticationProviders"},
		"both token keys":       {func(c *SecurityConfig) { c.Authn.Token.SecretKey, c.Authn.Token.PublicKey = "a", "b" }, "tokenPublicKey"},
		"bad refresh":           {func(c *SecurityConfig) { c.Authn.RefreshCheckSeconds = 0 }, "authenticationRefreshCheckSeconds"},
		"other authz provider":  {func(c *SecurityConfig) { c.Authz.Provider = "com.example.Authz" }, "authorizationProvider"},
		"require without CA":    {func(c *SecurityConfig) { c.TLS.RequireTrustedClientCert = true }, "tlsTrustCertsFilePath"},
		"bad port":              {func(c *SecurityConfig) { c.WebServicePortTLS = 70000 }, "webServicePortTls"},
	} {
		c2 := DefaultSecurityConfig()
		c.mod(&c2)
		err := c2.Validate()
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: %v (want a %s error)", name, err, c.key)
		}
	}
	b := BookieTLSConfig{ProviderFactoryClass: "org.apache.bookkeeper.tls.TLSContextFactory", KeyStoreType: "JKS"}
	if err := b.Validate(); err == nil || !strings.Contains(err.Error(), "tlsKeyStoreType") {
		t.Errorf("JKS: %v", err)
	}
	bc := BookieClientTLSConfig{ClientAuthentication: true}
	if err := bc.Validate(); err == nil {
		t.Error("bookkeeperTLSClientAuthentication without files accepted")
	}
	m := MetadataServerTLSConfig{ClientCertAuth: true, CertFile: "/c"}
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "metadataTrustedCaFile") {
		t.Errorf("metadata tls: %v", err)
	}
}
