package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ownership"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// Ownership is bundle ownership in a cluster (internal/ownership.Manager implements it).
// A broker without one (standalone) serves every topic it is asked for.
type Ownership interface {
	// Lookup says whether this broker serves topic (owning or taking its bundle) or which
	// broker to send the client to.
	Lookup(ctx context.Context, topic string, authoritative bool) (ownership.Result, error)
	// Acquire makes sure this broker owns topic's bundle before the topic is loaded.
	Acquire(ctx context.Context, topic string) error
	// Holds tells, without I/O, whether this broker still holds topic's bundle.
	Holds(topic string) bool
}

// recheckOwner closes a topic that finished loading after its bundle was lost (the session
// ended while the log was being opened, after the unload sweep had passed): it must not be
// served. Fencing would stop its writes anyway; this sends its clients away at once.
func (s *Server) recheckOwner(ctx context.Context, t *topic) error {
	if s.own == nil || s.own.Holds(t.full) {
		return nil
	}
	_ = t.closeResources(ctx)
	return fmt.Errorf("%w: bundle of %s lost while loading it", wire.ErrServiceNotReady, t.full)
}

// checkOwner refuses to load a topic whose bundle another broker owns: two brokers must
// never open one managed ledger for writing (each would fence the other in turn).
func (s *Server) checkOwner(ctx context.Context, name TopicName) error {
	if s.own == nil {
		return nil
	}
	err := s.own.Acquire(ctx, name.String())
	switch {
	case err == nil:
		return nil
	case errors.Is(err, resources.ErrNotFound), errors.Is(err, resources.ErrInvalid):
		return s.checkNamespace(ctx, name) // no such namespace: TopicNotFound naming it
	}
	return fmt.Errorf("%w: %w", wire.ErrServiceNotReady, err)
}

// handleClusterLookup answers LOOKUP through the ownership manager: Connect when this
// broker serves the topic, Redirect to the owner (or to the broker chosen to take a free
// bundle, authoritative so it takes it) otherwise.
func (c *conn) handleClusterLookup(cmd *pb.CommandLookupTopic) {
	rid := cmd.GetRequestId()
	resp := &pb.CommandLookupTopicResponse{RequestId: proto.Uint64(rid)}
	name, err := ParseTopicName(cmd.GetTopic())
	var res ownership.Result
	if err == nil {
		ctx, cancel := c.opContext()
		res, err = c.s.own.Lookup(ctx, name.String(), cmd.GetAuthoritative())
		if errors.Is(err, resources.ErrNotFound) || errors.Is(err, resources.ErrInvalid) {
			if nsErr := c.s.checkNamespace(ctx, name); nsErr != nil {
				err = nsErr
			}
		}
		cancel()
	}
	switch {
	case err != nil:
		// NB: never ServiceNotReady in a lookup answer: the Go client drops the connection.
		code, _ := wire.ServerErrorFor(err)
		switch {
		case errors.Is(err, wire.ErrInvalidTopicName), errors.Is(err, wire.ErrTopicNotFound):
		default:
			code = pb.ServerError_MetadataError
		}
		resp.Response = pb.CommandLookupTopicResponse_Failed.Enum()
		resp.Error, resp.Message = code.Enum(), proto.String(err.Error())
	case res.Self:
		resp.Response = pb.CommandLookupTopicResponse_Connect.Enum()
		resp.BrokerServiceUrl = proto.String(c.s.ServiceURL())
		resp.Authoritative = proto.Bool(true)
		resp.ProxyThroughServiceUrl = proto.Bool(false)
	default:
		resp.Response = pb.CommandLookupTopicResponse_Redirect.Enum()
		resp.BrokerServiceUrl = proto.String(res.BrokerURL)
		resp.Authoritative = proto.Bool(res.Authoritative)
		resp.ProxyThroughServiceUrl = proto.Bool(false)
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP_RESPONSE.Enum(), LookupTopicResponse: resp})
}

// UnloadTopics unloads, in parallel, every loaded topic whose full name matches: its
// clients get CLOSE_PRODUCER/CLOSE_CONSUMER and look it up again (ownership.Unloader).
func (s *Server) UnloadTopics(ctx context.Context, match func(topic string) bool) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, t := range s.loadedTopics() {
		if !match(t.full) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.unload(ctx, t); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// LoadedTopicLoads lists the loaded topics with their producer and consumer counts, for
// automatic bundle splits (ownership.TopicLister).
func (s *Server) LoadedTopicLoads() []ownership.TopicLoad {
	var out []ownership.TopicLoad
	for _, t := range s.loadedTopics() {
		t.mu.Lock()
		n := len(t.producers)
		subs := make([]*subscription, 0, len(t.subs))
		for _, sub := range t.subs {
			subs = append(subs, sub)
		}
		t.mu.Unlock()
		for _, sub := range subs {
			n += len(sub.consumersSnapshot())
		}
		out = append(out, ownership.TopicLoad{Topic: t.full, Sessions: n,
			MsgsTotal:  t.counters.msgsIn.Load() + t.counters.msgsOut.Load(),
			BytesTotal: t.counters.bytesIn.Load() + t.counters.bytesOut.Load()})
	}
	return out
}

// LoadStats counts what a load report carries (ownership.Manager.Register).
func (s *Server) LoadStats() ownership.LoadStats {
	st := ownership.LoadStats{}
	for _, t := range s.loadedTopics() {
		st.Topics++
		st.MsgsInTotal += t.counters.msgsIn.Load()
		st.MsgsOutTotal += t.counters.msgsOut.Load()
		st.BytesInTotal += t.counters.bytesIn.Load()
		st.BytesOutTotal += t.counters.bytesOut.Load()
		t.mu.Lock()
		st.Producers += len(t.producers)
		subs := make([]*subscription, 0, len(t.subs))
		for _, sub := range t.subs {
			subs = append(subs, sub)
		}
		t.mu.Unlock()
		for _, sub := range subs {
			st.Consumers += len(sub.consumersSnapshot())
		}
	}
	s.mu.Lock()
	st.Connections = len(s.conns)
	s.mu.Unlock()
	return st
}

// AdvertisedAddr is host:port a broker with cfg listening on a advertises in lookups: the
// configured advertised address, else the bind address unless it is a wildcard, else
// localhost; the port is the listener's.
func AdvertisedAddr(cfg config.BrokerConfig, a net.Addr) string {
	port := strconv.Itoa(cfg.ServicePort)
	if ta, ok := a.(*net.TCPAddr); ok {
		port = strconv.Itoa(ta.Port)
	}
	return net.JoinHostPort(AdvertisedHost(cfg), port)
}

// AdvertisedHost is the host part of AdvertisedAddr.
func AdvertisedHost(cfg config.BrokerConfig) string {
	host := cfg.AdvertisedAddress
	if host == "" {
		host = cfg.BindAddress
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			host = "localhost"
		}
	}
	return host
}
