package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/spf13/pflag"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
)

// clientSecurity is the authentication and TLS of `magnetar admin` and `magnetar client`:
// pulsar-admin's and pulsar-client's flags, or a client.conf given with --config (Pulsar's
// keys authPlugin, authParams, tlsTrustCertsFilePath, tlsAllowInsecureConnection,
// tlsEnableHostnameVerification, tlsCertificateFilePath, tlsKeyFilePath; config.ClientConfig).
// A flag beats the file.
type clientSecurity struct {
	fs                   *pflag.FlagSet
	authPlugin           string
	authParams           string
	trustCerts           string
	allowInsecure        bool
	hostnameVerification bool
	certFile, keyFile    string
}

func (s *clientSecurity) bind(fs *pflag.FlagSet) {
	s.fs = fs
	fs.StringVar(&s.authPlugin, "auth-plugin", "", "authentication plugin: org.apache.pulsar.client.impl.auth.AuthenticationToken, ...Tls, ...Basic, ...oauth2.AuthenticationOAuth2 (or token, tls, basic, oauth2)")
	fs.StringVar(&s.authParams, "auth-params", "", "parameters of the plugin, e.g. token:<jwt>, file:///path, tlsCertFile:/c.pem,tlsKeyFile:/k.pem, {\"userId\":..,\"password\":..}")
	s.bindTLS(fs)
}

// bindTLS binds the TLS flags alone (`magnetar sql`, whose credentials are a password).
func (s *clientSecurity) bindTLS(fs *pflag.FlagSet) {
	s.fs = fs
	fs.StringVar(&s.trustCerts, "tls-trust-cert-path", "", "PEM CA certificates the server's certificate must chain to")
	fs.BoolVar(&s.allowInsecure, "tls-allow-insecure", false, "accept any server certificate (no verification at all)")
	fs.BoolVar(&s.hostnameVerification, "tls-enable-hostname-verification", false, "check that the server's certificate names its host")
	fs.StringVar(&s.certFile, "tls-cert-file", "", "PEM client certificate for TLS (mutual TLS)")
	fs.StringVar(&s.keyFile, "tls-key-file", "", "PEM key of --tls-cert-file")
}

// clientTLS is the TLS configuration these flags describe.
func (s *clientSecurity) clientTLS(certFile, keyFile string) (*tls.Config, error) {
	tc, err := auth.NewClientTLS(auth.ClientTLSOptions{TrustCertsFile: s.trustCerts, CertFile: certFile, KeyFile: keyFile,
		Insecure: s.allowInsecure, VerifyHostname: s.hostnameVerification})
	if err != nil {
		return nil, usageError(err)
	}
	return tc, nil
}

// tlsFlagSet says whether any TLS flag was given.
func (s *clientSecurity) tlsFlagSet() bool {
	for _, f := range []string{"tls-trust-cert-path", "tls-allow-insecure", "tls-enable-hostname-verification", "tls-cert-file", "tls-key-file"} {
		if fl := s.fs.Lookup(f); fl != nil && fl.Changed {
			return true
		}
	}
	return false
}

// load takes the client.conf values (--config) of the settings whose flags were not given.
func (s *clientSecurity) load(c config.ClientConfig) {
	str := func(flag string, dst *string, v string) {
		if f := s.fs.Lookup(flag); (f == nil || !f.Changed) && v != "" {
			*dst = v
		}
	}
	boolean := func(flag string, dst *bool, v bool) {
		if f := s.fs.Lookup(flag); f == nil || !f.Changed {
			*dst = v
		}
	}
	str("auth-plugin", &s.authPlugin, c.AuthPlugin)
	str("auth-params", &s.authParams, c.AuthParams)
	str("tls-trust-cert-path", &s.trustCerts, c.TLSTrustCertsFilePath)
	str("tls-cert-file", &s.certFile, c.TLSCertificateFilePath)
	str("tls-key-file", &s.keyFile, c.TLSKeyFilePath)
	boolean("tls-allow-insecure", &s.allowInsecure, c.TLSAllowInsecureConnection)
	boolean("tls-enable-hostname-verification", &s.hostnameVerification, c.TLSEnableHostnameVerification)
}

// clientAuth parses the plugin and its parameters.
func (s *clientSecurity) clientAuth() (*auth.ClientAuth, error) {
	a, err := auth.ParseClientAuth(s.authPlugin, s.authParams)
	if err != nil {
		return nil, usageError(err)
	}
	return a, nil
}

// tlsFiles is the client certificate to present: --tls-cert-file, or the tls plugin's.
func (s *clientSecurity) tlsFiles(a *auth.ClientAuth) (string, string) {
	if s.certFile != "" {
		return s.certFile, s.keyFile
	}
	return a.CertFile, a.KeyFile
}

// httpClient is the admin REST client: TLS as configured, credentials on every request
// (redirects to the owner broker included).
func (s *clientSecurity) httpClient() (*http.Client, *auth.ClientAuth, error) {
	a, err := s.clientAuth()
	if err != nil {
		return nil, nil, err
	}
	cert, key := s.tlsFiles(a)
	tc, err := s.clientTLS(cert, key)
	if err != nil {
		return nil, nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	c := &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		// Go drops Authorization on a redirect to another host; the owner broker needs it.
		return a.SetHTTP(req)
	}}
	return c, a, nil
}

// pulsarOptions applies authentication and TLS to the Go client's options.
func (s *clientSecurity) pulsarOptions(o *pulsar.ClientOptions) error {
	a, err := s.clientAuth()
	if err != nil {
		return err
	}
	o.TLSTrustCertsFilePath = s.trustCerts
	o.TLSAllowInsecureConnection = s.allowInsecure
	o.TLSValidateHostname = s.hostnameVerification
	if s.certFile != "" {
		o.TLSCertificateFile, o.TLSKeyFilePath = s.certFile, s.keyFile
	}
	switch a.Plugin {
	case "token", "oauth2":
		o.Authentication = pulsar.NewAuthenticationTokenFromSupplier(func() (string, error) { return a.Token(context.Background()) })
	case "tls":
		o.Authentication = pulsar.NewAuthenticationTLS(a.CertFile, a.KeyFile)
	case "basic":
		ba, err := pulsar.NewAuthenticationBasic(a.User, a.Password)
		if err != nil {
			return usageError(err)
		}
		o.Authentication = ba
	}
	return nil
}
