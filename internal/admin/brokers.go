package admin

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
)

// registerBrokers adds the broker endpoints and the HTTP lookups the Go client uses with an
// http:// service URL.
func (s *server) registerBrokers(mux *http.ServeMux) {
	for pattern, f := range map[string]handlerFunc{
		"GET /admin/v2/brokers":                                      s.activeBrokers,
		"GET /admin/v2/brokers/{cluster}":                            s.activeBrokersOf,
		"GET /admin/v2/brokers/leaderBroker":                         s.leaderBroker,
		"GET /admin/v2/brokers/health":                               s.health,
		"GET /admin/v2/brokers/ready":                                s.health,
		"GET /admin/v2/brokers/configuration":                        s.dynamicConfigNames,
		"GET /admin/v2/brokers/configuration/values":                 s.dynamicConfigValues,
		"GET /admin/v2/brokers/configuration/runtime":                s.runtimeConfig,
		"GET /admin/v2/brokers/internal-configuration":               s.internalConfig,
		"GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}": s.lookup,
		"POST /admin/v2/brokers/configuration/{name}/{value}":        s.updateDynamicConfig,
		"DELETE /admin/v2/brokers/configuration/{name}":              s.updateDynamicConfig,
		"GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces":   s.ownedNamespaces,
		"GET /admin/v2/bookies/all":                                  s.bookies,
		"GET /admin/v2/bookies/racks-info":                           s.bookieRacks,
		"GET /admin/v2/bookies/state":                                s.bookieStates,
		"GET /admin/v2/bookies/under-replicated":                     s.underReplicated,
	} {
		mux.HandleFunc(pattern, s.handle(f))
	}
}

// webAddr is this process's host:port for HTTP, as other processes should dial it.
func (s *server) webAddr() string { return s.webAddrOf(s.webServiceAddr) }

// webAddrOf is webAddr for one of the HTTP listeners' addresses.
func (s *server) webAddrOf(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		// Bound to every interface: advertise the host the broker advertises.
		if s.broker != nil {
			if u, err := url.Parse(s.broker.ServiceURL()); err == nil && u.Hostname() != "" {
				return net.JoinHostPort(u.Hostname(), port)
			}
		}
		return net.JoinHostPort("localhost", port)
	}
	return addr
}

// A standalone is one broker, so the active list and the leader are this process.
func (s *server) activeBrokers(context.Context, *http.Request) (any, error) {
	return []string{s.webAddr()}, nil
}

func (s *server) activeBrokersOf(_ context.Context, r *http.Request) (any, error) {
	if c := r.PathValue("cluster"); c != s.cluster {
		return nil, clusterMissing(c, errNotFound)
	}
	return []string{s.webAddr()}, nil
}

func (s *server) leaderBroker(context.Context, *http.Request) (any, error) {
	return map[string]string{"brokerId": s.webAddr(), "serviceUrl": "http://" + s.webAddr()}, nil
}

// health answers "ok" as plain text (pulsaradmin compares it case-insensitively) once the
// process is ready and the metadata store answers a read.
func (s *server) health(ctx context.Context, _ *http.Request) (any, error) {
	if s.ready != nil && !s.ready() {
		return nil, fmt.Errorf("%w: broker is starting", ErrUnavailable)
	}
	if _, err := s.res.Clusters(ctx); err != nil {
		return nil, fmt.Errorf("%w: metadata store: %v", ErrUnavailable, err)
	}
	return textResponse("ok"), nil
}

// bookies is Pulsar's BookiesClusterInfo: the registered bookies.
func (s *server) bookies(ctx context.Context, _ *http.Request) (any, error) {
	regs, err := s.res.Bookies(ctx)
	if err != nil {
		return nil, err
	}
	type bookie struct {
		BookieID string `json:"bookieId"`
	}
	out := struct {
		Bookies []bookie `json:"bookies"`
	}{Bookies: []bookie{}}
	for _, r := range regs {
		out.Bookies = append(out.Bookies, bookie{r.Address})
	}
	return out, nil
}

// bookieStates lists registered and decommissioned bookies with their state (writable,
// readonly, gone), as the ledger client sees them.
func (s *server) bookieStates(ctx context.Context, _ *http.Request) (any, error) {
	if s.storage == nil {
		return nil, fmt.Errorf("%w: no storage view in this process", ErrNotSupported)
	}
	bs, err := s.storage.BookieStates(ctx)
	if err != nil {
		return nil, err
	}
	if bs == nil {
		bs = []BookieState{}
	}
	return bs, nil
}

// underReplicated lists the ledgers with a fragment on a bookie that is not registered now:
// what the auditor still has to re-replicate.
func (s *server) underReplicated(ctx context.Context, _ *http.Request) (any, error) {
	if s.storage == nil {
		return nil, fmt.Errorf("%w: no storage view in this process", ErrNotSupported)
	}
	ls, err := s.storage.UnderReplicated(ctx)
	if err != nil {
		return nil, err
	}
	if ls == nil {
		ls = []UnderReplicatedLedger{}
	}
	return ls, nil
}

// bookieRacks is Pulsar's racks-info: group -> bookie -> {rack, hostname}; all bookies are
// in the "default" group.
func (s *server) bookieRacks(ctx context.Context, _ *http.Request) (any, error) {
	regs, err := s.res.Bookies(ctx)
	if err != nil {
		return nil, err
	}
	group := map[string]map[string]string{}
	for _, r := range regs {
		host, _, _ := net.SplitHostPort(r.Address)
		rack := r.Rack
		if rack == "" {
			rack = "/default-rack"
		}
		group[r.Address] = map[string]string{"rack": rack, "hostname": host}
	}
	return map[string]any{"default": group}, nil
}

// fullBundle is the one bundle of every namespace: a standalone does not split namespaces.
const fullBundle = "0x00000000_0xffffffff"

// ownedNamespaces lists every namespace's bundle as owned by this broker (a standalone
// owns everything).
func (s *server) ownedNamespaces(ctx context.Context, r *http.Request) (any, error) {
	if c := r.PathValue("cluster"); c != s.cluster {
		return nil, clusterMissing(c, errNotFound)
	}
	tenants, err := s.res.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	type status struct {
		Assignment   string `json:"broker_assignment"`
		IsControlled bool   `json:"is_controlled"`
		IsActive     bool   `json:"is_active"`
	}
	out := map[string]status{}
	for _, t := range tenants {
		nss, err := s.res.Namespaces(ctx, t)
		if err != nil {
			return nil, err
		}
		for _, ns := range nss {
			out[ns+"/"+fullBundle] = status{Assignment: "primary", IsActive: true}
		}
	}
	return out, nil
}

func (s *server) runtimeConfig(context.Context, *http.Request) (any, error) {
	out := map[string]string{"clusterName": s.cluster, "webServiceAddress": s.webAddr()}
	if s.broker != nil {
		out["brokerServiceUrl"] = s.broker.ServiceURL()
	}
	return out, nil
}

func (s *server) internalConfig(context.Context, *http.Request) (any, error) {
	return map[string]string{"ledgersRootPath": "/ledgers"}, nil
}

// lookup answers with this broker's URLs: a standalone owns every topic.
func (s *server) lookup(ctx context.Context, r *http.Request) (any, error) {
	d := r.PathValue("domain")
	if d != "persistent" && d != "non-persistent" {
		return nil, fmt.Errorf("%w: domain must be persistent or non-persistent, got %q", ErrBadRequest, d)
	}
	if err := s.checkNamespace(ctx, r.PathValue("tenant"), r.PathValue("namespace")); err != nil {
		return nil, err
	}
	if s.broker == nil {
		return nil, fmt.Errorf("%w: no broker in this process", ErrNotSupported)
	}
	out := map[string]string{"brokerUrl": s.broker.ServiceURL(), "brokerUrlTls": "", "httpUrl": "", "httpUrlTls": ""}
	if s.webServiceAddr != "" {
		out["httpUrl"] = "http://" + s.webAddr()
	}
	if s.serviceURLTLS != nil {
		out["brokerUrlTls"] = s.serviceURLTLS()
	}
	if s.webServiceAddrTLS != "" {
		out["httpUrlTls"] = "https://" + s.webAddrOf(s.webServiceAddrTLS)
	}
	return out, nil
}

// textResponse is a plain-text body.
type textResponse string

func (t textResponse) writeTo(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(t))
}
