package broker

import (
	"errors"
	"net"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ownership"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// handleClusterLookup answers LOOKUP through the ownership manager: Connect when this
// broker serves the topic, Redirect to the owner (or to the broker chosen to take a free
// bundle, authoritative so it takes it) otherwise.
func (c *conn) handleClusterLookup(cmd *pb.CommandLookupTopic) {
	rid := cmd.GetRequestId()
	resp := &pb.CommandLookupTopicResponse{RequestId: proto.Uint64(rid)}
	name, err := topics.ParseName(cmd.GetTopic())
	var res ownership.Result
	if err == nil {
		ctx, cancel := c.opContext()
		if err = c.s.topics.Authorize(ctx, topics.ActionLookup, name); err == nil {
			res, err = c.s.topics.Ownership().Lookup(ctx, name.String(), cmd.GetAuthoritative())
		}
		if errors.Is(err, resources.ErrNotFound) || errors.Is(err, resources.ErrInvalid) {
			if nsErr := c.s.topics.CheckNamespace(ctx, name); nsErr != nil {
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
		case errors.Is(err, wire.ErrInvalidTopicName), errors.Is(err, wire.ErrTopicNotFound),
			errors.Is(err, wire.ErrAuthorization), errors.Is(err, wire.ErrAuthentication):
		default:
			code = pb.ServerError_MetadataError
		}
		resp.Response = pb.CommandLookupTopicResponse_Failed.Enum()
		resp.Error, resp.Message = code.Enum(), proto.String(err.Error())
	case res.Self:
		resp.Response = pb.CommandLookupTopicResponse_Connect.Enum()
		if u := c.s.ServiceURL(); u != "" {
			resp.BrokerServiceUrl = proto.String(u)
		}
		if u := c.s.ServiceURLTLS(); u != "" {
			resp.BrokerServiceUrlTls = proto.String(u)
		}
		resp.Authoritative = proto.Bool(true)
		resp.ProxyThroughServiceUrl = proto.Bool(false)
	default:
		resp.Response = pb.CommandLookupTopicResponse_Redirect.Enum()
		if res.BrokerURL != "" {
			resp.BrokerServiceUrl = proto.String(res.BrokerURL)
		}
		if res.BrokerURLTLS != "" {
			resp.BrokerServiceUrlTls = proto.String(res.BrokerURLTLS)
		}
		resp.Authoritative = proto.Bool(res.Authoritative)
		resp.ProxyThroughServiceUrl = proto.Bool(false)
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP_RESPONSE.Enum(), LookupTopicResponse: resp})
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
