package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpHandler serves the proxy's own /metrics and forwards everything else (admin REST
// /admin/v2, HTTP lookups /lookup/v2, /status.html, ...) to a broker.
func (p *Proxy) httpHandler(g prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	if g != nil {
		var h http.Handler = promhttp.HandlerFor(g, promhttp.HandlerOpts{})
		if p.cfg.AuthenticateMetricsEndpoint {
			h = p.authenticateHTTP(h, false)
		}
		mux.Handle("/metrics", h)
	}
	scheme := "http"
	if p.sec.withTLS {
		scheme = "https"
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			target := r.In.Context().Value(targetKey{}).(string)
			r.SetURL(&url.URL{Scheme: scheme, Host: target})
			r.SetXForwarded()
		},
		Transport:    &redirectFollower{p: p, base: p.brokerTransport()},
		ErrorHandler: p.httpError,
	}
	mux.Handle("/", p.authenticateHTTP(p.forwardHTTP(rp), true))
	return mux
}

// authenticateHTTP authenticates a request (with authentication on) and, forwarding,
// rewrites its credentials for the broker (security.go): with credentials of its own the
// proxy presents them and names the client in X-Original-Principal; without, the client's
// own Authorization goes through. A client's own X-Original-Principal never does: from the
// proxy's connection a broker would believe it.
func (p *Proxy) authenticateHTTP(next http.Handler, forwarding bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(originalPrincipalHeader)
		if !p.sec.authn.Enabled() || r.URL.Path == "/status.html" {
			next.ServeHTTP(w, r)
			return
		}
		id, err := p.sec.authn.AuthenticateHTTP(r)
		if err != nil {
			writeReason(w, http.StatusUnauthorized, err.Error())
			return
		}
		if forwarding && p.sec.speaksForClients() {
			r.Header.Del("Authorization")
			r.Header.Del("X-Pulsar-Auth-Method-Name")
			if err := p.sec.self.SetHTTP(r); err != nil {
				writeReason(w, http.StatusBadGateway, "proxy credentials: "+err.Error())
				return
			}
			r.Header.Set(originalPrincipalHeader, id.Role)
		}
		next.ServeHTTP(w, r)
	})
}

// originalPrincipalHeader is Pulsar's header naming the client a proxy forwards.
const originalPrincipalHeader = "X-Original-Principal"

type targetKey struct{}

// bodyKey carries the buffered request body to the transport, which replays it on each
// redirect hop.
type bodyKey struct{}

// forwardHTTP buffers the request body (bounded by httpMaxRequestSize) and picks the broker
// to forward to.
func (p *Proxy) forwardHTTP(rp *httputil.ReverseProxy) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := ""
		for _, b := range p.brokers.candidates() {
			addr := b.WebAddr
			if p.sec.withTLS {
				addr = b.WebAddrTLS
			}
			if addr != "" {
				target = addr
				break
			}
		}
		if target == "" {
			writeReason(w, http.StatusServiceUnavailable, ErrNoBroker.Error()+": no broker web service URL registered or configured")
			return
		}
		var body []byte
		if r.Body != nil && r.Body != http.NoBody {
			var err error
			body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, p.cfg.HTTPMaxRequestSize))
			if err != nil {
				var tooBig *http.MaxBytesError
				if errors.As(err, &tooBig) {
					writeReason(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("proxy: request body larger than httpMaxRequestSize=%d", p.cfg.HTTPMaxRequestSize))
					return
				}
				writeReason(w, http.StatusBadRequest, "proxy: reading request body: "+err.Error())
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		ctx := context.WithValue(r.Context(), targetKey{}, target)
		ctx = context.WithValue(ctx, bodyKey{}, body)
		rp.ServeHTTP(w, r.WithContext(ctx))
	})
}

// redirectFollower follows 307/308 redirects between brokers on the server side: in a
// cluster a broker that does not own a topic redirects admin calls to the owner's web
// address, which a client outside the cluster network cannot reach. Only redirects to
// known brokers are followed; any other Location is an error, so a broker answer can never
// make the proxy fetch an arbitrary URL.
type redirectFollower struct {
	p    *Proxy
	base http.RoundTripper
}

func (t *redirectFollower) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := req.Context().Value(bodyKey{}).([]byte)
	for hop := 0; ; hop++ {
		resp, err := t.base.RoundTrip(req)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBrokerUnavailable, req.URL.Host, err)
		}
		if resp.StatusCode != http.StatusTemporaryRedirect && resp.StatusCode != http.StatusPermanentRedirect {
			return resp, nil
		}
		loc, err := resp.Location()
		_ = resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: broker %s redirected without a usable Location: %v", ErrBrokerUnavailable, req.URL.Host, err)
		}
		if hop >= t.p.cfg.HTTPMaxRedirects {
			return nil, fmt.Errorf("%w: more than %d (proxyHttpMaxRedirects) for %s", ErrTooManyRedirects, t.p.cfg.HTTPMaxRedirects, req.URL.Path)
		}
		hp, err := HostPort(loc.Scheme+"://"+loc.Host, "http")
		if err != nil || (loc.Scheme != "http" && loc.Scheme != "https") || !t.p.brokers.allowedWeb(hp) {
			return nil, fmt.Errorf("%w: broker %s redirected to %s", ErrNotABroker, req.URL.Host, loc.Redacted())
		}
		next := req.Clone(req.Context())
		next.URL = loc
		next.Host = loc.Host
		next.Body, next.ContentLength = http.NoBody, 0
		if len(body) > 0 {
			next.Body, next.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		req = next
	}
}

// httpError answers a forwarding failure in the {"reason": ...} shape pulsaradmin reads.
func (p *Proxy) httpError(w http.ResponseWriter, r *http.Request, err error) {
	p.logger.Info("HTTP forwarding failed", "path", r.URL.Path, "err", err)
	writeReason(w, http.StatusBadGateway, err.Error())
}

func writeReason(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"reason": reason})
}

// brokerTransport is the HTTP client side towards brokers: dial and header timeouts from
// the broker proxy timeouts, a bounded idle pool.
func (p *Proxy) brokerTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // brokers are reached directly, never through an environment proxy
	t.DialContext = (&net.Dialer{Timeout: p.cfg.ConnectTimeout(), KeepAlive: 30 * time.Second}).DialContext
	t.ResponseHeaderTimeout = p.cfg.ReadTimeout()
	t.MaxIdleConnsPerHost = 16
	t.TLSClientConfig = p.sec.brokerTLS // the proxy's trust and certificate towards brokers
	return t
}
