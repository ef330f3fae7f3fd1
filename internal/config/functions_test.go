package config

import (
	"strings"
	"testing"
)

// TestFunctionsWorkerRoleSecurity: the functions-worker role takes the broker's security
// keys (functions_worker.yml's names) and checks them as a broker does, workerPortTls in
// place of the broker's TLS ports.
func TestFunctionsWorkerRoleSecurity(t *testing.T) {
	base := func() FunctionsWorkerRoleConfig {
		c := DefaultFunctionsWorkerRoleConfig()
		c.MetadataStoreURL, c.Functions.PulsarServiceURL = "etcd://127.0.0.1:1", "pulsar://127.0.0.1:1"
		return c
	}
	ok := base()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if s := ok.Security(); s.ServicePortTLS != -1 || s.WebServicePortTLS != -1 || s.Validate() != nil {
		t.Fatalf("default security %+v: %v", s, s.Validate())
	}
	for name, c := range map[string]struct {
		mod func(*FunctionsWorkerRoleConfig)
		key string
	}{
		"https without cert":  {func(c *FunctionsWorkerRoleConfig) { c.WorkerPortTLS, c.TLS.TLSEnabled = 0, true }, "workerPortTls"},
		"bad https port":      {func(c *FunctionsWorkerRoleConfig) { c.WorkerPortTLS = 70000 }, "workerPortTls"},
		"authz without authn": {func(c *FunctionsWorkerRoleConfig) { c.Authz.Enabled = true }, "authorizationEnabled"},
		"authn no providers":  {func(c *FunctionsWorkerRoleConfig) { c.Authn.Enabled = true }, "authenticationProviders"},
		"client cert no key":  {func(c *FunctionsWorkerRoleConfig) { c.Client.CertificateFilePath = "/c.pem" }, "brokerClientKeyFilePath"},
	} {
		c2 := base()
		c.mod(&c2)
		err := c2.Validate()
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: %v (want a %s error)", name, err, c.key)
		}
	}
	// Pulsar's functions_worker.yml: workerPortTls set, tlsEnabled false, no certificate.
	// Pulsar's worker does not serve that port, and neither does ours.
	pf := base()
	pf.WorkerPortTLS = 6751
	if s := pf.Security(); pf.Validate() != nil || pf.ServesTLS() || s.WebServicePortTLS != -1 || s.Validate() != nil {
		t.Fatalf("workerPortTls without tlsEnabled or a certificate: %v, serves %v, security %+v", pf.Validate(), pf.ServesTLS(), s)
	}
	c := base()
	c.WorkerPortTLS, c.TLS.CertificateFilePath, c.TLS.KeyFilePath = 6751, "/c.pem", "/k.pem"
	c.Authn.Enabled, c.Authn.Providers, c.Authz.Enabled, c.Authz.SuperUserRoles = true, []string{"token"}, true, []string{"admin"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if s := c.Security(); s.WebServicePortTLS != 6751 || !s.Authn.Enabled || s.Authz.SuperUserRoles[0] != "admin" || s.Validate() != nil {
		t.Fatalf("security %+v: %v", s, s.Validate())
	}
}
