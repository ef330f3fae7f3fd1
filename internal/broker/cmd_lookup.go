package broker

import (
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// handleLookup answers "connect here": this broker serves every topic (single-broker
// ownership), so the answer is always Connect to our advertised URL, authoritative, with
// proxy_through_service_url false.
func (c *conn) handleLookup(cmd *pb.CommandLookupTopic) {
	release, ok := c.s.lookupSlot()
	if !ok {
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP_RESPONSE.Enum(), LookupTopicResponse: &pb.CommandLookupTopicResponse{
			RequestId: proto.Uint64(cmd.GetRequestId()), Response: pb.CommandLookupTopicResponse_Failed.Enum(),
			Error: pb.ServerError_TooManyRequests.Enum(), Message: proto.String(errTooManyLookups.Error())}})
		return
	}
	defer release()
	if c.s.topics.Ownership() != nil {
		c.handleClusterLookup(cmd)
		return
	}
	rid := cmd.GetRequestId()
	resp := &pb.CommandLookupTopicResponse{RequestId: proto.Uint64(rid)}
	name, err := topics.ParseName(cmd.GetTopic())
	if err == nil {
		ctx, cancel := c.opContext()
		err = c.s.topics.Authorize(ctx, topics.ActionLookup, name)
		cancel()
	}
	if err != nil {
		code, _ := wire.ServerErrorFor(err)
		resp.Response = pb.CommandLookupTopicResponse_Failed.Enum()
		resp.Error, resp.Message = code.Enum(), proto.String(err.Error())
	} else {
		resp.Response = pb.CommandLookupTopicResponse_Connect.Enum()
		if u := c.s.ServiceURL(); u != "" {
			resp.BrokerServiceUrl = proto.String(u)
		}
		if u := c.s.ServiceURLTLS(); u != "" {
			resp.BrokerServiceUrlTls = proto.String(u)
		}
		resp.Authoritative = proto.Bool(true)
		resp.ProxyThroughServiceUrl = proto.Bool(false)
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP_RESPONSE.Enum(), LookupTopicResponse: resp})
}

// handlePartitionedMetadata answers the partition count: N for a partitioned topic, 0 for
// a non-partitioned one, a partition, or a topic that does not exist yet (unless
// auto-creation makes it partitioned now).
func (c *conn) handlePartitionedMetadata(cmd *pb.CommandPartitionedTopicMetadata) {
	rid := cmd.GetRequestId()
	resp := &pb.CommandPartitionedTopicMetadataResponse{RequestId: proto.Uint64(rid)}
	release, ok := c.s.lookupSlot()
	if !ok {
		resp.Response = pb.CommandPartitionedTopicMetadataResponse_Failed.Enum()
		resp.Error, resp.Message = pb.ServerError_TooManyRequests.Enum(), proto.String(errTooManyLookups.Error())
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_PARTITIONED_METADATA_RESPONSE.Enum(), PartitionMetadataResponse: resp})
		return
	}
	defer release()
	ctx, cancel := c.opContext()
	defer cancel()
	var n int
	name, err := topics.ParseName(cmd.GetTopic())
	if err == nil {
		n, err = c.s.topics.PartitionsFor(ctx, name)
	}
	if err != nil {
		// NB: never ServiceNotReady here; it makes the Go client drop the connection.
		code, _ := wire.ServerErrorFor(err)
		if code == pb.ServerError_ServiceNotReady {
			code = pb.ServerError_MetadataError
		}
		resp.Response = pb.CommandPartitionedTopicMetadataResponse_Failed.Enum()
		resp.Error, resp.Message = code.Enum(), proto.String(err.Error())
	} else {
		resp.Response = pb.CommandPartitionedTopicMetadataResponse_Success.Enum()
		resp.Partitions = proto.Uint32(uint32(n))
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_PARTITIONED_METADATA_RESPONSE.Enum(), PartitionMetadataResponse: resp})
}

// handleGetTopicsOfNamespace lists the namespace's topics (partitions listed one by one).
// A namespace that does not exist has no topics, which is not an error.
func (c *conn) handleGetTopicsOfNamespace(cmd *pb.CommandGetTopicsOfNamespace) {
	rid := cmd.GetRequestId()
	ctx, cancel := c.opContext()
	defer cancel()
	domain := ""
	switch cmd.GetMode() {
	case pb.CommandGetTopicsOfNamespace_PERSISTENT:
		domain = topics.DomainPersistent
	case pb.CommandGetTopicsOfNamespace_NON_PERSISTENT:
		domain = topics.DomainNonPersistent
	}
	list, err := c.s.topics.ListTopics(ctx, cmd.GetNamespace(), domain)
	if err != nil {
		c.sendError(rid, err)
		return
	}
	out := list[:0]
	for _, t := range list {
		if !strings.Contains(t, "/__") { // system topics
			out = append(out, t)
		}
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE.Enum(),
		GetTopicsOfNamespaceResponse: c.s.topicsOfNamespaceResponse(cmd, out)}) // topics_pattern.go
}
