package sql

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/server"
	gms "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
)

// Options are what a Server runs on.
type Options struct {
	Config config.SQLConfig
	Source Source
	// Auth authenticates users (nil or disabled: anyone, as the anonymous role); Authz
	// decides which topics they may read (nil or disabled: all).
	Auth  *auth.Service
	Authz *auth.Authorizer
	// TLS is the broker's TLS listener configuration (tlsCertificateFilePath, ...; its
	// files are re-read as the broker's are): with it, clients may switch to TLS in the
	// handshake (MySQL's SSL request; mysql --ssl). Nil: plain TCP only.
	TLS    *auth.ServerTLS
	Logger *slog.Logger
	// Registerer gets the SQL metrics (nil: not exported).
	Registerer prometheus.Registerer
}

// Server answers SQL over the MySQL protocol.
type Server struct {
	cfg     config.SQLConfig
	src     Source
	auth    *auth.Service
	authz   *auth.Authorizer
	tls     *auth.ServerTLS
	log     *slog.Logger
	engine  *sqle.Engine
	srv     *server.Server
	ln      net.Listener
	metrics *metrics
	slots   chan struct{}
	// scanSlots is sqlScanThreads: a scan worker holds one while it reads and decodes.
	scanSlots chan struct{}

	mu    sync.Mutex
	stats map[uint32]Stats // the last statement of each connection
	done  chan struct{}
}

// New builds a server; Serve starts answering on a listener.
func New(o Options) (*Server, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Source == nil {
		return nil, errors.New("sql: no source")
	}
	if o.Config.RequireSecureTransport && o.TLS == nil {
		return nil, &config.FieldError{Key: "sqlRequireSecureTransport", Value: true,
			Reason: "needs TLS: set tlsCertificateFilePath and tlsKeyFilePath"}
	}
	// The engine logs through logrus at info level (every connection); ours is slog.
	logrus.SetLevel(logrus.ErrorLevel)
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: o.Config, src: o.Source, auth: o.Auth, authz: o.Authz, tls: o.TLS, log: log.With("component", "sql"),
		metrics: newMetrics(o.Registerer), slots: make(chan struct{}, o.Config.MaxConcurrentQueries),
		scanSlots: make(chan struct{}, o.Config.ScanThreads),
		stats:     map[uint32]Stats{}, done: make(chan struct{})}
	s.engine = sqle.New(newAnalyzer(provider{srv: s}), &sqle.Config{IsReadOnly: true, VersionPostfix: "magnetar"})
	return s, nil
}

// Engine runs statements directly (tests, the embedded shell): ctx should come from
// Server.Context.
func (s *Server) Engine() *sqle.Engine { return s.engine }

// Serve answers MySQL connections on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	cfg := server.Config{
		Protocol:                 "tcp",
		Address:                  ln.Addr().String(),
		Listener:                 ln,
		ConnReadTimeout:          0,
		AllowClearTextWithoutTLS: s.cfg.AllowCleartextWithoutTLS,
		MaxConnections:           uint64(s.cfg.MaxConcurrentQueries) * 64,
		RequireSecureTransport:   s.cfg.RequireSecureTransport,
	}
	if s.tls != nil {
		// Each handshake picks up reloaded certificate files (GetConfigForClient).
		cfg.TLSConfig = s.tls.Config()
	}
	cfg.ProtocolListenerFactory = func(c server.Config, lc mysql.ListenerConfig, sel server.ServerEventListener) (server.ProtocolListener, error) {
		lc.AuthServer = s.authServer()
		return server.MySQLProtocolListenerFactory(c, lc, sel)
	}
	srv, err := server.NewServerWithHandler(cfg, s.engine, s.contextFactory, s.sessionBuilder, nil,
		func(h mysql.Handler) (mysql.Handler, error) { return &handler{Handler: h, s: s}, nil })
	if err != nil {
		return fmt.Errorf("sql: listen: %w", err)
	}
	s.mu.Lock()
	select {
	case <-s.done: // closed before it started serving
		s.mu.Unlock()
		return ln.Close()
	default:
	}
	s.srv, s.ln = srv, ln
	s.mu.Unlock()
	err = srv.Start()
	select {
	case <-s.done:
		return nil
	default:
	}
	return err
}

// Close stops accepting connections and ends the server.
func (s *Server) Close() error {
	s.mu.Lock()
	srv := s.srv
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.mu.Unlock()
	var err error
	if srv != nil {
		err = srv.Close()
	}
	// The engine's Close reports the cancellation of its own background context.
	if eerr := s.engine.Close(); !errors.Is(eerr, context.Canceled) {
		err = errors.Join(err, eerr)
	}
	return err
}

// LastStats is what the last statement of connection id scanned.
func (s *Server) LastStats(connID uint32) (Stats, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.stats[connID]
	return st, ok
}

// contextFactory builds each statement's context: the engine's caches for it report to the
// statement's memory accounting.
func (s *Server) contextFactory(ctx context.Context, opts ...gms.ContextOption) *gms.Context {
	if q, ok := ctx.Value(queryKey{}).(*query); ok {
		opts = append(opts, gms.WithMemoryManager(gms.NewMemoryManager(memoryReporter{q})))
	}
	return gms.NewContext(ctx, opts...)
}

// session carries the connection's authenticated principal.
type session struct {
	*gms.BaseSession
	principal auth.Principal
}

func (s *Server) sessionBuilder(_ context.Context, conn *mysql.Conn, addr string) (gms.Session, error) {
	p := auth.Principal{}
	user := conn.User
	if u, ok := conn.UserData.(userData); ok {
		p = u.principal
	}
	client := gms.Client{Address: conn.RemoteAddr().String(), User: user, Capabilities: conn.Capabilities}
	return &session{BaseSession: gms.NewBaseSessionWithClientServer(addr, client, conn.ConnectionID), principal: p}, nil
}

func principalOf(ctx *gms.Context) auth.Principal {
	if se, ok := ctx.Session.(*session); ok {
		return se.principal
	}
	return auth.Principal{}
}

// handler wraps the engine's MySQL handler: admission (sqlMaxConcurrentQueries), the
// statement's deadline and limits, metrics, and errors with the limit that stopped a query.
type handler struct {
	mysql.Handler
	s *Server
}

func (h *handler) run(ctx context.Context, c *mysql.Conn, fn func(context.Context) error) error {
	s := h.s
	select {
	case s.slots <- struct{}{}:
	default:
		s.metrics.queries.WithLabelValues("refused").Inc()
		return mysql.NewSQLError(mysql.ERConCount, mysql.SSUnknownSQLState, "%v: sqlMaxConcurrentQueries is %d", ErrTooManyQueries, s.cfg.MaxConcurrentQueries)
	}
	defer func() { <-s.slots }()
	s.metrics.running.Inc()
	defer s.metrics.running.Dec()
	q := newQuery(s.cfg)
	ctx, cancel := context.WithTimeout(withQuery(ctx, q), time.Duration(s.cfg.QueryTimeoutSeconds)*time.Second)
	defer cancel()
	err := fn(ctx)
	// The engine turns errors into text on their way out, so what stopped the statement is
	// read from its state (query.fail) to pick the MySQL error code.
	qerr := q.failure()
	switch {
	case err == nil:
	case qerr != nil && errors.Is(qerr, ErrPermission):
		err = mysql.NewSQLError(erTableAccessDenied, "42000", "%v", qerr)
	case qerr != nil:
		err = mysql.NewSQLError(mysql.ERQueryInterrupted, "70100", "%v", qerr)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		err = mysql.NewSQLError(mysql.ERQueryInterrupted, "70100", "%v: sqlQueryTimeoutSeconds is %d", ErrTimeout, s.cfg.QueryTimeoutSeconds)
	}
	err = mysqlText(err)
	st := q.stats()
	s.mu.Lock()
	s.stats[c.ConnectionID] = st
	s.mu.Unlock()
	s.metrics.observe(st, time.Since(q.start), err)
	return err
}

func (h *handler) ComQuery(ctx context.Context, c *mysql.Conn, query string, cb mysql.ResultSpoolFn) error {
	return h.run(ctx, c, func(ctx context.Context) error { return h.Handler.ComQuery(ctx, c, query, cb) })
}

func (h *handler) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, cb mysql.ResultSpoolFn) (string, error) {
	var rest string
	err := h.run(ctx, c, func(ctx context.Context) error {
		var err error
		rest, err = h.Handler.ComMultiQuery(ctx, c, query, cb)
		return err
	})
	return rest, err
}

func (h *handler) ComStmtExecute(ctx context.Context, c *mysql.Conn, p *mysql.PrepareData, cb func(*sqltypes.Result) error) error {
	return h.run(ctx, c, func(ctx context.Context) error { return h.Handler.ComStmtExecute(ctx, c, p, cb) })
}

// ComInitDB is USE and the database of the handshake.
func (h *handler) ComInitDB(c *mysql.Conn, schemaName string) error {
	return mysqlText(h.Handler.ComInitDB(c, schemaName))
}

// mysqlText gives an unknown database MySQL's own text, "Unknown database 'x'" (the engine
// says "database not found: x"), which clients and people recognise.
func mysqlText(err error) error {
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.Num != mysql.ERBadDb {
		return err
	}
	name, ok := strings.CutPrefix(se.Message, "database not found: ")
	if !ok {
		return err
	}
	return mysql.NewSQLError(mysql.ERBadDb, "42000", "Unknown database '%s'", name)
}

func (h *handler) ConnectionClosed(c *mysql.Conn) {
	h.s.mu.Lock()
	delete(h.s.stats, c.ConnectionID)
	h.s.mu.Unlock()
	h.Handler.ConnectionClosed(c)
}

// userData is what authentication leaves on a connection.
type userData struct {
	user      string
	principal auth.Principal
}

func (u userData) Get() *querypb.VTGateCallerID { return &querypb.VTGateCallerID{Username: u.user} }

// authServer authenticates MySQL logins. With authentication off anyone may log in as any
// user (the principal is then the user name, or anonymousUserRole). With it on, the
// password is checked by internal/auth: a Pulsar token ("token:<jwt>" or a bare JWT), or a
// basic-auth password for the user; it must arrive in clear text (mysql_clear_password:
// --enable-cleartext-plugin), as the server must see it to verify it. Over TLS, an empty
// password and a trusted client certificate log in as the certificate (certLogin).
func (s *Server) authServer() mysql.AuthServer {
	if !s.auth.Enabled() {
		return &openAuth{s: s}
	}
	a := &tokenAuth{s: s}
	return a
}

type openAuth struct{ s *Server }

func (a *openAuth) AuthMethods() []mysql.AuthMethod {
	return []mysql.AuthMethod{a.s.secure(mysql.NewMysqlNativeAuthMethod(a, a))}
}

func (a *openAuth) DefaultAuthMethodDescription() mysql.AuthMethodDescription {
	return mysql.MysqlNativePassword
}

func (a *openAuth) HandleUser(string, net.Addr) bool { return true }

func (a *openAuth) UserEntryWithHash(_ []*x509.Certificate, _ []byte, user string, _ []byte, _ net.Addr) (mysql.Getter, error) {
	return userData{user: user, principal: auth.Principal{Role: user}}, nil
}

type tokenAuth struct{ s *Server }

func (a *tokenAuth) AuthMethods() []mysql.AuthMethod {
	return []mysql.AuthMethod{a.s.secure(certLogin{AuthMethod: mysql.NewMysqlClearAuthMethod(a, a), s: a.s})}
}

func (a *tokenAuth) DefaultAuthMethodDescription() mysql.AuthMethodDescription {
	return mysql.MysqlNativePassword
}

func (a *tokenAuth) HandleUser(string, net.Addr) bool { return true }

// UserEntryWithPassword ignores the certificates it is given: they are the handshake's,
// verified or not (tlsAllowInsecureConnection); certLogin reads the verified ones.
func (a *tokenAuth) UserEntryWithPassword(_ []*x509.Certificate, user, password string, remote net.Addr) (mysql.Getter, error) {
	creds := credentialsOf(user, password)
	creds.Remote = remote.String()
	return a.s.login(user, creds)
}

func (s *Server) login(user string, creds auth.Credentials) (mysql.Getter, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := s.auth.Authenticate(ctx, creds)
	if err != nil {
		s.metrics.authFailures.Inc()
		return nil, mysql.NewSQLError(mysql.ERAccessDeniedError, mysql.SSAccessDeniedError, "Access denied for user '%v': %v", user, err)
	}
	return userData{user: user, principal: auth.Principal{Role: id.Role}}, nil
}

// certLogin logs a TLS connection in as its client certificate, as Pulsar's
// AuthenticationProviderTls does (the role is the certificate's common name), when the tls
// provider is among authenticationProviders, the certificate was verified against
// tlsTrustCertsFilePath, and the password is empty. A password, when given, is the login's
// credential (a token over mutual TLS), as a Pulsar client names one auth method.
type certLogin struct {
	mysql.AuthMethod
	s *Server
}

func (m certLogin) HandleAuthPluginData(c *mysql.Conn, user string, serverData, clientResp []byte, remote net.Addr) (mysql.Getter, error) {
	// mysql_clear_password's response is the password and a NUL.
	if len(bytes.TrimSuffix(clientResp, []byte{0})) == 0 && slices.Contains(m.s.auth.Methods(), auth.MethodTLS) {
		if certs := m.s.clientCerts(c); len(certs) > 0 {
			return m.s.login(user, auth.Credentials{Method: auth.MethodTLS, PeerCertificates: certs, Remote: remote.String()})
		}
	}
	return m.AuthMethod.HandleAuthPluginData(c, user, serverData, clientResp, remote)
}

// clientCerts is the connection's client certificate chain if it verified, else nil.
func (s *Server) clientCerts(c *mysql.Conn) []*x509.Certificate {
	tc, ok := c.Conn.(*tls.Conn)
	if !ok || s.tls == nil {
		return nil
	}
	cs := tc.ConnectionState()
	return s.tls.PeerCertificates(&cs)
}

// secure makes m refuse logins over plain TCP when sqlRequireSecureTransport is set. The
// listener's own RequireSecureTransport only writes an error packet and carries on with the
// handshake, so the refusal that counts is here, before any credential is looked at.
func (s *Server) secure(m mysql.AuthMethod) mysql.AuthMethod {
	if !s.cfg.RequireSecureTransport {
		return m
	}
	return requireTLS{AuthMethod: m, s: s}
}

type requireTLS struct {
	mysql.AuthMethod
	s *Server
}

func (m requireTLS) HandleAuthPluginData(c *mysql.Conn, user string, serverData, clientResp []byte, remote net.Addr) (mysql.Getter, error) {
	if !c.TLSEnabled() {
		m.s.metrics.authFailures.Inc()
		return nil, mysql.NewSQLError(mysql.ERAccessDeniedError, mysql.SSAccessDeniedError,
			"Access denied for user '%v': the server requires TLS (sqlRequireSecureTransport): connect with --ssl", user)
	}
	return m.AuthMethod.HandleAuthPluginData(c, user, serverData, clientResp, remote)
}

// credentialsOf reads a login the way the Kafka front end reads SASL PLAIN: a token
// ("token:<jwt>" or a JWT), else user and password for basic authentication.
func credentialsOf(user, password string) auth.Credentials {
	if tok, ok := strings.CutPrefix(password, "token:"); ok {
		return auth.Credentials{Method: auth.MethodToken, Data: []byte(tok)}
	}
	if strings.Count(password, ".") == 2 && strings.HasPrefix(password, "eyJ") {
		return auth.Credentials{Method: auth.MethodToken, Data: []byte(password)}
	}
	if password == "" {
		return auth.Credentials{}
	}
	return auth.Credentials{Method: auth.MethodBasic, Data: []byte(user + ":" + password)}
}

// erTableAccessDenied is MySQL's ER_TABLEACCESS_DENIED_ERROR.
const erTableAccessDenied = 1142
