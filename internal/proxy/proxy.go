package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

// Errors of the proxy. Each failure wraps one of them.
var (
	ErrClosed            = errors.New("proxy: closed")
	ErrBrokerUnavailable = errors.New("proxy: broker unavailable")
	ErrNoBroker          = errors.New("proxy: no broker known")
	ErrNotABroker        = errors.New("proxy: target is not a known broker")
	ErrBadRegistration   = errors.New("proxy: bad broker registration")
	ErrTooManyRequests   = errors.New("proxy: too many requests")
	ErrUnsupported       = errors.New("proxy: command not served before a broker is chosen")
	ErrTooManyRedirects  = errors.New("proxy: too many redirects")
)

// Options are what Start needs besides the config.
type Options struct {
	Config config.ProxyConfig
	// Store is where brokers register; nil means only the configured broker URLs are used.
	Store metadata.Store
	// Logger (nil: discard) and Registerer for the proxy's metrics (nil: not registered).
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Gatherer, if set, is served at /metrics on the HTTP listener.
	Gatherer prometheus.Gatherer
}

// Proxy is a running proxy: a binary listener, an HTTP listener and what they share.
type Proxy struct {
	cfg     config.ProxyConfig
	logger  *slog.Logger
	brokers *brokerSet
	pool    *pool
	metrics *metrics
	sec     *security // security.go

	// Listeners; nil when their port is -1.
	ln, tlsLn       net.Listener
	httpLn, httpsLn net.Listener
	httpSrv         *http.Server

	ctx    context.Context // ends at Close: stops the watch and every connection
	cancel context.CancelFunc
	slots  chan struct{} // one per client connection (maxConcurrentInboundConnections)

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
	closed bool
}

// Start listens on the configured binary and HTTP ports and serves until Close.
func Start(ctx context.Context, opts Options) (*Proxy, error) {
	cfg := opts.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "proxy")
	var configured Broker
	if cfg.BrokerServiceURL != "" {
		hp, err := HostPort(cfg.BrokerServiceURL, "pulsar")
		if err != nil {
			return nil, &config.FieldError{Key: "brokerServiceURL", Value: cfg.BrokerServiceURL, Reason: err.Error()}
		}
		configured.ServiceAddr = hp
	}
	for _, u := range []struct {
		key, raw, scheme string
		dst              *string
	}{
		{"brokerWebServiceURL", cfg.BrokerWebServiceURL, "http", &configured.WebAddr},
		{"brokerServiceURLTLS", cfg.BrokerServiceURLTLS, "pulsar", &configured.ServiceAddrTLS},
		{"brokerWebServiceURLTLS", cfg.BrokerWebServiceURLTLS, "http", &configured.WebAddrTLS},
	} {
		if u.raw == "" {
			continue
		}
		hp, err := HostPort(u.raw, u.scheme)
		if err != nil {
			return nil, &config.FieldError{Key: u.key, Value: u.raw, Reason: err.Error()}
		}
		*u.dst = hp
	}
	sec, err := newSecurity(cfg, logger)
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		cfg: cfg, logger: logger, brokers: newBrokerSet(configured), metrics: m, sec: sec,
		slots: make(chan struct{}, cfg.MaxConcurrentInboundConnections),
		conns: map[net.Conn]struct{}{},
	}
	p.pool = newPool(cfg.ConnectTimeout(), cfg.MaxFrameSizeBytes, make(chan struct{}, cfg.MaxConcurrentLookupRequests), logger, p.upstreamDialer(nil, nil))
	p.ctx, p.cancel = context.WithCancel(context.Background())
	var lc net.ListenConfig
	listen := func(key string, port int) (net.Listener, error) {
		if port < 0 {
			return nil, nil
		}
		ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(cfg.BindAddress, strconv.Itoa(port)))
		if err != nil {
			return nil, fmt.Errorf("proxy: listen (%s): %w", key, err)
		}
		return ln, nil
	}
	for _, l := range []struct {
		key  string
		port int
		dst  *net.Listener
	}{{"servicePort", cfg.ServicePort, &p.ln}, {"servicePortTls", cfg.ServicePortTLS, &p.tlsLn},
		{"webServicePort", cfg.WebServicePort, &p.httpLn}, {"webServicePortTls", cfg.WebServicePortTLS, &p.httpsLn}} {
		if *l.dst, err = listen(l.key, l.port); err != nil {
			p.closeListeners()
			p.cancel()
			return nil, err
		}
	}
	if opts.Store != nil {
		if err := p.brokers.watchOnceList(ctx, opts.Store, cfg.BrokerRegistrationPrefix, logger); err != nil {
			logger.Warn("listing broker registrations failed; the watch keeps retrying", "err", err)
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.brokers.watch(p.ctx, opts.Store, cfg.BrokerRegistrationPrefix, logger)
		}()
	}
	p.httpSrv = &http.Server{Handler: p.httpHandler(opts.Gatherer), ReadHeaderTimeout: 30 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug), TLSConfig: sec.listenTLS}
	serveHTTP := func(ln net.Listener, tls bool) {
		defer p.wg.Done()
		var err error
		if tls {
			err = p.httpSrv.ServeTLS(ln, "", "")
		} else {
			err = p.httpSrv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("HTTP server stopped", "err", err)
		}
	}
	for _, l := range []struct {
		ln  net.Listener
		tls bool
	}{{p.httpLn, false}, {p.httpsLn, true}} {
		if l.ln != nil {
			p.wg.Add(1)
			go serveHTTP(l.ln, l.tls)
		}
	}
	for _, ln := range []net.Listener{p.ln, p.tlsLn} {
		if ln == nil {
			continue
		}
		if ln == p.tlsLn {
			ln = tls.NewListener(ln, sec.listenTLS)
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.acceptLoop(ln)
		}()
	}
	logger.Info("proxy serving", "binary", p.Addr(), "binaryTls", p.AddrTLS(), "http", p.HTTPAddr(), "https", p.HTTPSAddr(),
		"brokerServiceURL", cfg.BrokerServiceURL, "metadata", opts.Store != nil, "authentication", sec.authn.Enabled())
	return p, nil
}

func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// Addr is the binary listener's address ("" without one).
func (p *Proxy) Addr() string { return addrOf(p.ln) }

// AddrTLS is the TLS binary listener's address ("" without one).
func (p *Proxy) AddrTLS() string { return addrOf(p.tlsLn) }

// HTTPAddr is the HTTP listener's address ("" without one).
func (p *Proxy) HTTPAddr() string { return addrOf(p.httpLn) }

// HTTPSAddr is the HTTPS listener's address ("" without one).
func (p *Proxy) HTTPSAddr() string { return addrOf(p.httpsLn) }

func (p *Proxy) closeListeners() {
	for _, ln := range []net.Listener{p.ln, p.tlsLn, p.httpLn, p.httpsLn} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// Brokers returns the brokers the proxy would ask now, in the order it would ask them.
func (p *Proxy) Brokers() []Broker { return p.brokers.candidates() }

// acceptLoop accepts client connections, refusing those beyond the limit.
func (p *Proxy) acceptLoop(ln net.Listener) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if p.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				p.logger.Error("accept failed; the binary listener stops", "err", err)
			}
			return
		}
		select {
		case p.slots <- struct{}{}:
		default:
			p.metrics.rejected.Inc()
			p.logger.Warn("refusing connection: maxConcurrentInboundConnections reached", "remote", nc.RemoteAddr().String())
			_ = nc.Close()
			continue
		}
		if !p.track(nc) {
			<-p.slots
			_ = nc.Close()
			return
		}
		p.metrics.newConns.Inc()
		p.metrics.active.Inc()
		go func() {
			defer func() {
				p.untrack(nc)
				p.metrics.active.Dec()
				<-p.slots
			}()
			p.serveConn(nc)
		}()
	}
}

func (p *Proxy) track(nc net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[nc] = struct{}{}
	p.wg.Add(1)
	return true
}

func (p *Proxy) untrack(nc net.Conn) {
	_ = nc.Close()
	p.mu.Lock()
	delete(p.conns, nc)
	p.mu.Unlock()
	p.wg.Done()
}

// Close stops listening, closes every client connection (and its broker side) and waits
// for every goroutine of the proxy to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	conns := make([]net.Conn, 0, len(p.conns))
	for nc := range p.conns {
		conns = append(conns, nc)
	}
	p.mu.Unlock()
	p.cancel()
	p.closeListeners()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.httpSrv.Shutdown(ctx)
	for _, nc := range conns {
		_ = nc.Close()
	}
	p.pool.close()
	p.wg.Wait()
	return nil
}

// metrics are the proxy's own Prometheus series, named like Pulsar's proxy metrics.
type metrics struct {
	active      prometheus.Gauge
	newConns    prometheus.Counter
	rejected    prometheus.Counter
	lookups     prometheus.Counter
	lookupFails prometheus.Counter
	spliced     prometheus.Counter
	bytesIn     prometheus.Counter
	bytesOut    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		active:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "pulsar_proxy_active_connections", Help: "client connections open now"}),
		newConns:    prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_proxy_new_connections", Help: "client connections accepted"}),
		rejected:    prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_proxy_rejected_connections", Help: "client connections refused at the limit"}),
		lookups:     prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_proxy_lookup_requests", Help: "lookups answered"}),
		lookupFails: prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_proxy_lookup_failures", Help: "lookups that failed"}),
		spliced:     prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_proxy_spliced_connections", Help: "client connections spliced to a broker"}),
		bytesIn:     prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_proxy_binary_bytes_in", Help: "bytes relayed from clients to brokers (counted when a spliced connection ends)"}),
		bytesOut:    prometheus.NewCounter(prometheus.CounterOpts{Name: "pulsar_proxy_binary_bytes_out", Help: "bytes relayed from brokers to clients (counted when a spliced connection ends)"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.active, m.newConns, m.rejected, m.lookups, m.lookupFails, m.spliced, m.bytesIn, m.bytesOut} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("proxy: metrics: %w", err)
			}
		}
	}
	return m, nil
}
