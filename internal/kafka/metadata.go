package kafka

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/magnetar-io/magnetar/internal/auth"
)

// Metadata (key 3), v0-v12; DescribeCluster (key 60), v0-v1.
//
// Brokers are the live brokers that speak Kafka; each partition's leader is the broker
// that owns its bundle (the same lookup Pulsar clients get), so a Kafka client sends
// produce and fetch straight to the owner. Replicas and ISR list the leader only: the
// replicas of a Magnetar topic are bookies, which Kafka clients never talk to. A missing
// topic is created when the request allows it (v4+; always before) and the namespace's
// auto-creation policy does, with the namespace's default partition count.
func handleMetadata(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.MetadataRequest)
	s := c.s
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	nodes, err := s.be.Brokers(c.ctx)
	if err != nil {
		s.log.Warn("kafka metadata: listing brokers failed", "err", err)
	}
	for _, n := range nodes {
		resp.Brokers = append(resp.Brokers, kmsg.MetadataResponseBroker{NodeID: n.ID, Host: n.Host, Port: n.Port, Rack: n.Rack})
	}
	resp.ClusterID = &s.cluster
	resp.ControllerID = s.nodeID
	autoCreate := r.Version < 4 || r.AllowAutoTopicCreation

	var names []string
	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	if all {
		fulls, err := s.be.ListTopics(c.ctx)
		if err != nil {
			resp.ErrorCode = errorCode(err)
			reply(resp)
			return
		}
		for _, f := range fulls {
			if name, ok := s.kafkaNameOf(f); ok {
				// Listing every topic shows only those the principal may look up.
				if c.authorizeName(c.ctx, name, auth.TopicLookup, "") == nil {
					names = append(names, name)
				}
			}
		}
		autoCreate = false
	} else {
		for _, t := range r.Topics {
			if t.Topic != nil {
				names = append(names, *t.Topic)
			}
		}
	}
	for _, name := range names {
		if err := c.authorizeName(c.ctx, name, auth.TopicLookup, ""); err != nil {
			t := kmsg.NewMetadataResponseTopic()
			t.Topic, t.ErrorCode = kmsg.StringPtr(name), errorCode(err)
			resp.Topics = append(resp.Topics, t)
			continue
		}
		resp.Topics = append(resp.Topics, s.describeTopic(c.ctx, name, autoCreate))
	}
	reply(resp)
}

// kafkaNameOf turns a full Pulsar name from ListTopics into the Kafka name listed.
func (s *Server) kafkaNameOf(full string) (string, bool) {
	rest, ok := strings.CutPrefix(full, "persistent://")
	if !ok {
		return "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return "", false
	}
	return s.namer.KafkaName(parts[0], parts[1], parts[2]), true
}

func (s *Server) describeTopic(ctx context.Context, name string, autoCreate bool) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic = kmsg.StringPtr(name)
	t.AuthorizedOperations = -2147483648
	fail := func(err error) kmsg.MetadataResponseTopic {
		t.ErrorCode = errorCode(err)
		return t
	}
	ref, err := s.namer.Resolve(name)
	if err != nil {
		return fail(err)
	}
	t.TopicID = topicID(ref.Full())
	n, err := s.partitionCount(ctx, ref.Full(), true)
	if isUnknownTopic(err) && autoCreate {
		if ok, parts := s.be.AutoCreate(ctx, ref.Tenant, ref.Namespace); ok {
			if cerr := s.be.CreateTopic(ctx, ref.Full(), parts, nil); cerr != nil && errorCode(cerr) != ErrTopicExists.Code {
				return fail(cerr)
			}
			// Kafka answers LEADER_NOT_AVAILABLE right after creating; we can do better
			// and answer with the new partitions.
			n, err = s.partitionCount(ctx, ref.Full(), true)
		}
	}
	if err != nil {
		return fail(err)
	}
	count := max(n, 1)
	for i := 0; i < count; i++ {
		pname, _ := partitionName(ref, n, int32(i))
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition = int32(i)
		p.LeaderEpoch = -1
		leader, err := s.be.Leader(ctx, pname)
		if err != nil {
			p.ErrorCode = errorCode(fmt.Errorf("%w: %v", ErrLeaderNotAvailable, err))
			p.Leader = -1
		} else {
			p.Leader = leader
			p.Replicas, p.ISR = []int32{leader}, []int32{leader}
		}
		t.Partitions = append(t.Partitions, p)
	}
	return t
}

func handleDescribeCluster(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.DescribeClusterRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterID, resp.ControllerID, resp.EndpointType = c.s.cluster, c.s.nodeID, r.EndpointType
	resp.ClusterAuthorizedOperations = -2147483648
	nodes, err := c.s.be.Brokers(c.ctx)
	resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
	for _, n := range nodes {
		resp.Brokers = append(resp.Brokers, kmsg.DescribeClusterResponseBroker{NodeID: n.ID, Host: n.Host, Port: n.Port, Rack: n.Rack})
	}
	reply(resp)
}

// listOffsetsSpecial are ListOffsets' special timestamps.
const (
	latestTimestamp   = -1
	earliestTimestamp = -2
	maxTimestamp      = -3 // v7+: the record with the largest timestamp
)

// handleListOffsets (key 2), v1-v8: -1 is the high watermark (the last stable offset for
// read_committed, the same while there are no transactions), -2 the log start, -3 the
// newest record (Magnetar appends in time order, so the largest timestamp is the last
// record's unless producers set event times out of order), any other timestamp the first
// offset published at or after it (a bounded search over the entries' broker timestamps,
// Log.OffsetForTime).
func handleListOffsets(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.ListOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.Timestamp, rp.Offset, rp.LeaderEpoch = p.Partition, -1, -1, -1
			err := c.authorizeName(c.ctx, t.Topic, auth.TopicLookup, "")
			var part *partition
			if err == nil {
				part, _, err = c.s.openPartition(c.ctx, t.Topic, p.Partition)
			}
			if err == nil {
				switch p.Timestamp {
				case latestTimestamp:
					rp.Offset = part.log.HighWatermark()
					if r.IsolationLevel == 1 {
						rp.Offset, err = part.log.LastStable(c.ctx)
					}
				case earliestTimestamp:
					rp.Offset = part.log.StartOffset()
				case maxTimestamp:
					if hw := part.log.HighWatermark(); hw > part.log.StartOffset() {
						rp.Offset = hw - 1
						rp.Timestamp, err = lastTimestamp(c.ctx, part.log, hw-1)
					}
				default:
					if p.Timestamp < 0 {
						err = fmt.Errorf("%w: timestamp %d", ErrInvalidRequest, p.Timestamp)
						break
					}
					var off int64
					if off, err = part.log.OffsetForTime(c.ctx, p.Timestamp); err == nil && off < part.log.HighWatermark() {
						rp.Offset, rp.Timestamp = off, p.Timestamp
						if ts, terr := lastTimestamp(c.ctx, part.log, off); terr == nil {
							rp.Timestamp = ts
						}
					}
				}
			}
			rp.ErrorCode = errorCode(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	reply(resp)
}

// lastTimestamp is the Kafka timestamp of the record at offset.
func lastTimestamp(ctx context.Context, l Log, offset int64) (int64, error) {
	entries, err := l.Read(ctx, offset, 1)
	if err != nil || len(entries) == 0 {
		return -1, err
	}
	if k := entries[0].Kind; k == EntryCommitMarker || k == EntryAbortMarker {
		return -1, nil // a transaction marker: no record timestamp
	}
	batch, _, err := appendKafkaBatch(nil, entries[0].Data, entries[0].Base)
	if err != nil {
		return -1, err
	}
	pb, err := parseBatch(batch, fetchLimit)
	if err != nil {
		return -1, err
	}
	i := offset - entries[0].Base
	if i < 0 || i >= int64(len(pb.records)) {
		return -1, nil
	}
	return pb.records[i].timestamp, nil
}
