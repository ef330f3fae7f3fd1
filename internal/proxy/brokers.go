package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// Broker is one broker the proxy knows: its binary and HTTP addresses as host:port.
type Broker struct {
	ServiceAddr string // host:port of pulsar://
	WebAddr     string // host:port of http:// ("" when unknown)
	// The TLS listeners (pulsar+ssl://, https://), "" when the broker has none or they are
	// not known.
	ServiceAddrTLS, WebAddrTLS string
}

// registrationJSON is the part of a broker registration the proxy reads. Pulsar's
// LocalBrokerData spells the URLs pulsarServiceUrl/webServiceUrl; brokerServiceUrl and
// httpUrl are accepted too so a registration written in lookup-answer terms also works.
type registrationJSON struct {
	PulsarServiceURL    string `json:"pulsarServiceUrl"`
	BrokerServiceURL    string `json:"brokerServiceUrl"`
	WebServiceURL       string `json:"webServiceUrl"`
	HTTPURL             string `json:"httpUrl"`
	PulsarServiceURLTLS string `json:"pulsarServiceUrlTls"`
	WebServiceURLTLS    string `json:"webServiceUrlTls"`
}

// ParseRegistration decodes one broker registration: key is the metadata key (its last path
// element is the broker's host:port when the value says nothing better), value is JSON.
// It never trusts the input: every address must be a host:port with a numeric port.
func ParseRegistration(key string, value []byte) (Broker, error) {
	var r registrationJSON
	if len(value) > 0 {
		if err := json.Unmarshal(value, &r); err != nil {
			return Broker{}, fmt.Errorf("%w: %s: %v", ErrBadRegistration, key, err)
		}
	}
	var b Broker
	svc := r.PulsarServiceURL
	if svc == "" {
		svc = r.BrokerServiceURL
	}
	if svc != "" {
		addr, err := HostPort(svc, "pulsar")
		if err != nil {
			return Broker{}, fmt.Errorf("%w: %s: %v", ErrBadRegistration, key, err)
		}
		b.ServiceAddr = addr
	} else {
		// The key alone: ".../host:port" names the binary listener.
		name := key[strings.LastIndexByte(key, '/')+1:]
		addr, err := HostPort(name, "pulsar")
		if err != nil {
			return Broker{}, fmt.Errorf("%w: %s: no pulsarServiceUrl and the key is not host:port", ErrBadRegistration, key)
		}
		b.ServiceAddr = addr
	}
	web := r.WebServiceURL
	if web == "" {
		web = r.HTTPURL
	}
	if web != "" {
		addr, err := HostPort(web, "http")
		if err != nil {
			return Broker{}, fmt.Errorf("%w: %s: %v", ErrBadRegistration, key, err)
		}
		b.WebAddr = addr
	}
	for _, u := range []struct {
		raw, scheme string
		dst         *string
	}{{r.PulsarServiceURLTLS, "pulsar", &b.ServiceAddrTLS}, {r.WebServiceURLTLS, "http", &b.WebAddrTLS}} {
		if u.raw == "" {
			continue
		}
		addr, err := HostPort(u.raw, u.scheme)
		if err != nil {
			return Broker{}, fmt.Errorf("%w: %s: %v", ErrBadRegistration, key, err)
		}
		*u.dst = addr
	}
	return b, nil
}

// HostPort turns "scheme://host:port[/]" or "host:port" into a canonical host:port, checking
// the scheme when one is given (wantScheme "pulsar" also accepts "pulsar+ssl", "http" also
// "https"). The port must be numeric and present.
func HostPort(s, wantScheme string) (string, error) {
	hp := s
	if i := strings.Index(s, "://"); i >= 0 {
		u, err := url.Parse(s)
		if err != nil {
			return "", fmt.Errorf("bad URL %q: %v", s, err)
		}
		if u.Scheme != wantScheme && u.Scheme != wantScheme+"+ssl" && u.Scheme != wantScheme+"s" {
			return "", fmt.Errorf("URL %q: scheme must be %s", s, wantScheme)
		}
		if u.Path != "" && u.Path != "/" || u.User != nil || u.RawQuery != "" {
			return "", fmt.Errorf("URL %q: only scheme://host:port is allowed", s)
		}
		hp = u.Host
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil || host == "" || port == "" {
		return "", fmt.Errorf("address %q: must be host:port", s)
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return "", fmt.Errorf("address %q: port must be numeric", s)
		}
	}
	if len(port) > 5 {
		return "", fmt.Errorf("address %q: port out of range", s)
	}
	return net.JoinHostPort(strings.ToLower(host), port), nil
}

// maxVouched bounds the addresses remembered from brokers' lookup answers.
const maxVouched = 4096

// brokerSet is what the proxy knows about brokers: live registrations from the metadata
// store, the configured fallback, and addresses that a trusted broker named in a lookup
// answer ("vouched"). Only addresses in this set are ever dialled for a client.
type brokerSet struct {
	configured Broker

	mu         sync.Mutex
	registered map[string]Broker // metadata key -> broker
	vouched    map[string]struct{}
	vouchedTLS map[string]struct{} // the vouched addresses that are TLS listeners
	order      []string            // vouched addresses, oldest first, for eviction
	next       int                 // round-robin cursor over registered brokers
}

func newBrokerSet(configured Broker) *brokerSet {
	return &brokerSet{configured: configured, registered: map[string]Broker{}, vouched: map[string]struct{}{}, vouchedTLS: map[string]struct{}{}}
}

// candidates returns the brokers to ask, starting at a rotating position so load spreads;
// the configured broker comes last (it may be a load balancer in front of the others).
func (s *brokerSet) candidates() []Broker {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.registered))
	for k := range s.registered {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Broker, 0, len(keys)+1)
	if n := len(keys); n > 0 {
		s.next++
		for i := range n {
			out = append(out, s.registered[keys[(s.next+i)%n]])
		}
	}
	if s.configured != (Broker{}) {
		out = append(out, s.configured)
	}
	return out
}

// allowedService reports whether a client may be spliced to the binary address hp.
func (s *brokerSet) allowedService(hp string) bool {
	if hp == s.configured.ServiceAddr || hp == s.configured.ServiceAddrTLS {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.vouched[hp]; ok {
		return true
	}
	for _, b := range s.registered {
		if b.ServiceAddr == hp || b.ServiceAddrTLS == hp {
			return true
		}
	}
	return false
}

// binaryTarget is the address to dial for a client that asked for hp, and whether to use
// TLS: a broker's TLS listener is dialled with TLS; with tlsEnabledWithBroker a plaintext
// address is replaced by the same broker's TLS one when it is known.
func (s *brokerSet) binaryTarget(hp string, preferTLS bool) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	bs := []Broker{s.configured}
	for _, b := range s.registered {
		bs = append(bs, b)
	}
	for _, b := range bs {
		switch {
		case hp != "" && hp == b.ServiceAddrTLS:
			return hp, true
		case hp != "" && hp == b.ServiceAddr && preferTLS && b.ServiceAddrTLS != "":
			return b.ServiceAddrTLS, true
		}
	}
	if _, ok := s.vouchedTLS[hp]; ok {
		return hp, true
	}
	return hp, false
}

// allowedWeb reports whether the proxy may follow an HTTP redirect to hp.
func (s *brokerSet) allowedWeb(hp string) bool {
	if hp == s.configured.WebAddr || hp == s.configured.WebAddrTLS {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.registered {
		if b.WebAddr == hp || b.WebAddrTLS == hp {
			return true
		}
	}
	return false
}

// vouch remembers a binary address that a broker gave in a lookup answer: the client will
// CONNECT through us with it as proxy_to_broker_url next.
func (s *brokerSet) vouch(hp string) { s.vouchAs(hp, false) }

// vouchAs is vouch for an address that is a TLS listener (a lookup's brokerServiceUrlTls).
func (s *brokerSet) vouchAs(hp string, isTLS bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.vouched[hp]; !ok {
		if len(s.order) >= maxVouched {
			delete(s.vouched, s.order[0])
			delete(s.vouchedTLS, s.order[0])
			s.order = s.order[1:]
		}
		s.vouched[hp] = struct{}{}
		s.order = append(s.order, hp)
	}
	if isTLS {
		s.vouchedTLS[hp] = struct{}{}
	}
}

func (s *brokerSet) put(key string, b Broker) {
	s.mu.Lock()
	s.registered[key] = b
	s.mu.Unlock()
}

func (s *brokerSet) remove(key string) {
	s.mu.Lock()
	delete(s.registered, key)
	s.mu.Unlock()
}

func (s *brokerSet) reset(kvs []metadata.KV, logger *slog.Logger) {
	fresh := map[string]Broker{}
	for _, kv := range kvs {
		b, err := ParseRegistration(kv.Key, kv.Value)
		if err != nil {
			logger.Warn("ignoring broker registration", "err", err)
			continue
		}
		fresh[kv.Key] = b
	}
	s.mu.Lock()
	s.registered = fresh
	s.mu.Unlock()
}

// watch keeps registered in step with the broker registrations under prefix until ctx ends.
// Each round lists the prefix (dropping keys deleted while no watch ran), then applies the
// watch's events; a closed watch channel starts a new round after a short backoff.
func (s *brokerSet) watch(ctx context.Context, store metadata.Store, prefix string, logger *slog.Logger) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if err := s.watchOnce(ctx, store, prefix, logger); err != nil && ctx.Err() == nil {
			logger.Warn("watching broker registrations failed; retrying", "err", err, "retryIn", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (s *brokerSet) watchOnce(ctx context.Context, store metadata.Store, prefix string, logger *slog.Logger) error {
	kvs, err := store.List(ctx, prefix)
	if err != nil {
		return err
	}
	s.reset(kvs, logger)
	events, err := store.Watch(ctx, prefix, true)
	if err != nil {
		return err
	}
	for ev := range events {
		switch ev.Type {
		case metadata.EventPut:
			b, err := ParseRegistration(ev.Key, ev.Value)
			if err != nil {
				logger.Warn("ignoring broker registration", "err", err)
				s.remove(ev.Key)
				continue
			}
			s.put(ev.Key, b)
		case metadata.EventDelete:
			s.remove(ev.Key)
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("proxy: registration watch closed")
}

// watchOnceList loads the current registrations once, so a proxy that just started knows
// the brokers before it serves its first client.
func (s *brokerSet) watchOnceList(ctx context.Context, store metadata.Store, prefix string, logger *slog.Logger) error {
	kvs, err := store.List(ctx, prefix)
	if err != nil {
		return err
	}
	s.reset(kvs, logger)
	return nil
}
