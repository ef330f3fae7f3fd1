package cli

import (
	"context"
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
	fs.StringVar(&s.trustCerts, "tls-trust-cert-path", "", "PEM CA certificates the server's certificate must chain to")
	fs.BoolVar(&s.allowInsecure, "tls-allow-insecure", false, "accept any server certificate (no verification at all)")
	fs.BoolVar(&s.hostnameVerification, "tls-enable-hostname-verification", false, "check that the server's certificate names its host")
	fs.StringVar(&s.certFile, "tls-cert-file", "", "PEM client certificate for TLS (mutual TLS)")
	fs.StringVar(&s.keyFile, "tls-key-file", "", "PEM key of --tls-cert-file")
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
	tc, err := auth.NewClientTLS(auth.ClientTLSOptions{TrustCertsFile: s.trustCerts, CertFile: cert, KeyFile: key,
		Insecure: s.allowInsecure, VerifyHostname: s.hostnameVerification})
	if err != nil {
		return nil, nil, usageError(err)
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
