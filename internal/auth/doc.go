// Package auth is Magnetar's security: who a client is (authentication), what it may do
// (authorization), and the TLS every role listens and dials with. Every front end (the
// Pulsar protocol, the admin REST API, the proxy, later Kafka and SQL) uses the same
// Service, Authorizer and TLS builders, so a rule is written once. Configuration keys are
// Pulsar's (internal/config/security.go).
//
// # Authentication
//
// Service holds the providers named by authenticationProviders (Pulsar class names or
// token, tls, basic, openid), several at once; a client picks one by auth_method_name on
// the binary protocol (CONNECT, AUTH_RESPONSE) or by the Authorization header's scheme (or
// X-Pulsar-Auth-Method-Name) over HTTP. Providers:
//
//   - token (token.go): JWTs signed with tokenSecretKey (HS256/384/512) or tokenPublicKey
//     (RS/PS/ES/EdDSA, DER or PEM, in data:, file:, env: or base64 form). The algorithms
//     accepted are fixed by the key kind at startup, so alg:none and HS/RS key confusion are
//     refused before any signature is computed. tokenAuthClaim names the role,
//     tokenAudienceClaim/tokenAudience the audience, tokenAllowedClockSkewSeconds the
//     leeway on exp/nbf. exp is enforced and becomes the identity's expiry.
//   - tls (tlsprovider.go): the common name of a client certificate the handshake verified.
//   - basic (basic.go, crypt.go): an htpasswd file (basicAuthConf or Pulsar's
//     -Dpulsar.auth.basic.conf in PULSAR_EXTRA_OPTS) with $apr1$ and DES crypt hashes, as
//     Pulsar accepts, plus $1$ and bcrypt.
//   - openid (oidc.go): tokens of openIDAllowedTokenIssuers, verified with the issuer's JWKS
//     (found by discovery, cached, refetched on rotation at most every 30 s per issuer);
//     exp, aud in openIDAllowedAudiences and an asymmetric algorithm that fits the key are
//     required.
//
// Clients sending no credentials get anonymousUserRole (or are refused when it is empty);
// clients naming an unknown method, or sending credentials that fail, are refused, never
// downgraded to anonymous. Each failure is logged once.
//
// Session (session.go) is a binary connection's authentication over its life: the proxy
// rules (only proxyRoles may name an original principal, authenticateOriginalAuthData
// checks the client's forwarded credentials), and refresh: every
// authenticationRefreshCheckSeconds the connection calls Tick; expired credentials get an
// AUTH_CHALLENGE, and a connection without a valid AUTH_RESPONSE by the next check is
// closed. No connection outlives its credentials by more than two check intervals.
//
// # Authorization
//
// Authorizer (authz.go) applies Pulsar's PulsarAuthorizationProvider rules to a Principal
// over Policies (tenants' adminRoles, namespaces' auth_policies, read through
// internal/resources): superusers do everything; tenant admins everything inside their
// tenant; produce/consume grants on the namespace or the (partitioned) topic allow
// producing, consuming and lookups; subscription_auth_roles and subscription_auth_mode
// Prefix limit subscriptions; topic and namespace administration, policies included, are
// tenant-admin business (CVE-2024-28098/29834). Through a proxy both the proxy's role and
// the original principal must be allowed. Front ends decide once per producer, consumer or
// request, never per message, and recheck live producers and consumers every
// authorizationRecheckIntervalSeconds so a revoked permission takes effect in bounded time.
//
// # TLS
//
// ServerTLS and NewClientTLS (tlsconfig.go) build every role's tls.Config: PEM files,
// tlsProtocols/tlsCiphers, the client-certificate policy of tlsRequireTrustedClientCertOnConnect
// and tlsAllowInsecureConnection, and reload of certificates and trust files when they
// change, checked every tlsCertRefreshCheckDurationSec. Clients always verify the peer's
// chain (unless told to be insecure) and optionally its host name; they authenticate only
// after the handshake (CVE-2022-33681/33683). CA (ca.go) is a throwaway certificate
// authority for `magnetar dev-cluster --tls` and tests.
//
// ClientAuth (client.go) is the client side: Pulsar's --auth-plugin/--auth-params forms for
// token, tls, basic and OAuth2 client credentials, used by the CLI and by our processes
// towards each other. tokens.go creates keys and tokens for `magnetar tokens`.
package auth
