package connect

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/etcdstore"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
)

// ErrBadURL is returned for a metadata URL that cannot be understood.
var ErrBadURL = errors.New("connect: bad metadata URL")

// DefaultEtcdPort is used for an etcd host given without a port.
const DefaultEtcdPort = "2379"

// Limits on what a URL may ask for, so a typo cannot make a client wait for hours or buffer
// without bound.
const (
	maxEndpoints       = 64
	maxDialTimeout     = 5 * time.Minute
	maxWatchBacklogCap = 1 << 20
)

// Target is a parsed metadata URL.
type Target struct {
	Scheme    string   // "etcd" or "memory"
	Endpoints []string // etcd: http://host:port of each member
	Name      string   // memory: the shared store's name
	Etcd      etcdstore.Options
}

// ParseURL decodes a metadata URL (see the package doc).
func ParseURL(raw string) (Target, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return Target{}, fmt.Errorf("%w %q: want etcd://host:port[,host:port...] or memory://name", ErrBadURL, raw)
	}
	switch scheme {
	case "etcd":
		return parseEtcd(raw, rest)
	case "memory":
		if rest == "" || strings.Trim(rest, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
			return Target{}, fmt.Errorf("%w %q: memory://name wants a name of letters, digits, '.', '_' or '-'", ErrBadURL, raw)
		}
		return Target{Scheme: "memory", Name: rest}, nil
	default:
		return Target{}, fmt.Errorf("%w %q: unknown scheme %q (want etcd or memory)", ErrBadURL, raw, scheme)
	}
}

func parseEtcd(raw, rest string) (Target, error) {
	hosts, query, _ := strings.Cut(rest, "?")
	hosts = strings.TrimSuffix(hosts, "/")
	if strings.ContainsAny(hosts, "/@#") {
		return Target{}, fmt.Errorf("%w %q: want etcd://host:port[,host:port...] with no path or user", ErrBadURL, raw)
	}
	t := Target{Scheme: "etcd", Etcd: etcdstore.DefaultOptions()}
	for h := range strings.SplitSeq(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return Target{}, fmt.Errorf("%w %q: empty host", ErrBadURL, raw)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			// No port (or an IPv6 literal in brackets without one): use etcd's default.
			host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), DefaultEtcdPort
			if strings.ContainsAny(host, "[]") || (strings.Contains(host, ":") && net.ParseIP(host) == nil) {
				return Target{}, fmt.Errorf("%w %q: host %q is not host or host:port", ErrBadURL, raw, h)
			}
		}
		if !validHost(host) {
			return Target{}, fmt.Errorf("%w %q: %q is not a host name or IP address", ErrBadURL, raw, h)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return Target{}, fmt.Errorf("%w %q: port of %q must be between 1 and 65535", ErrBadURL, raw, h)
		}
		if len(t.Endpoints) == maxEndpoints {
			return Target{}, fmt.Errorf("%w %q: more than %d hosts", ErrBadURL, raw, maxEndpoints)
		}
		t.Endpoints = append(t.Endpoints, "http://"+net.JoinHostPort(host, port))
	}
	if query == "" {
		t.Etcd.Endpoints = t.Endpoints
		return t, nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return Target{}, fmt.Errorf("%w %q: %w", ErrBadURL, raw, err)
	}
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch k {
		case "dialTimeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 || d > maxDialTimeout {
				return Target{}, fmt.Errorf("%w %q: dialTimeout must be a duration between 1ns and %v", ErrBadURL, raw, maxDialTimeout)
			}
			t.Etcd.DialTimeout = d
		case "maxWatchBacklog":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxWatchBacklogCap {
				return Target{}, fmt.Errorf("%w %q: maxWatchBacklog must be between 1 and %d", ErrBadURL, raw, maxWatchBacklogCap)
			}
			t.Etcd.MaxWatchBacklog = n
		default:
			return Target{}, fmt.Errorf("%w %q: unknown option %q (known: dialTimeout, maxWatchBacklog)", ErrBadURL, raw, k)
		}
	}
	t.Etcd.Endpoints = t.Endpoints
	return t, nil
}

func validHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	return h != "" && len(h) <= 253 && strings.Trim(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") == ""
}

// Open parses url and opens the store it names. For etcd it checks that the cluster answers.
func Open(ctx context.Context, url string, logger *slog.Logger) (metadata.Store, error) {
	return OpenTLS(ctx, url, nil, logger)
}

// OpenTLS is Open over TLS: with tc set, etcd members are dialled as https:// with tc (the
// members' CA and this client's certificate).
func OpenTLS(ctx context.Context, url string, tc *tls.Config, logger *slog.Logger) (metadata.Store, error) {
	t, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	switch t.Scheme {
	case "memory":
		return memory(t.Name).NewClient(), nil
	default:
		if tc != nil {
			t.Etcd.TLS = tc
			for i, e := range t.Etcd.Endpoints {
				t.Etcd.Endpoints[i] = "https://" + strings.TrimPrefix(e, "http://")
			}
		}
		s, err := etcdstore.Open(ctx, t.Etcd, logger)
		if err != nil {
			// Not the typed nil *etcdstore.Store: callers test the interface against nil.
			return nil, err
		}
		return s, nil
	}
}

// The memory:// stores of this process, by name. Package-level on purpose: the point of
// memory://name is that independent components in one process find the same data.
var (
	memMu     sync.Mutex
	memStores = map[string]*memstore.Store{}
)

func memory(name string) *memstore.Store {
	memMu.Lock()
	defer memMu.Unlock()
	s, ok := memStores[name]
	if !ok {
		s = memstore.New(memstore.DefaultOptions())
		memStores[name] = s
	}
	return s
}
