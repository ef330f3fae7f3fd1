package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/kafka/group"
)

// Groups (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
// OffsetFetch, DescribeGroups, ListGroups, DeleteGroups).
//
// Membership is internal/kafka/group's state machine, on the group's coordinator: the
// broker that owns the bundle of the group's key (Backend.Coordinator), so all brokers
// agree without a __consumer_offsets topic. Offsets are not kept by the coordinator: each
// is the group's durable subscription on the partition (Backend.CommitOffset), so Pulsar
// tools see a Kafka group as a subscription with a backlog, retention keeps what it has not
// consumed, and a restart or ownership change loses nothing. The group record (the list of
// partitions a group committed to) is the only state of its own, written when that list
// grows.

// groupRecord is the durable record of a group (JSON, Backend.SaveGroup).
type groupRecord struct {
	Partitions []groupPartition `json:"partitions"`
}

type groupPartition struct {
	Topic     string `json:"topic"` // Kafka name, as the client committed it
	Partition int32  `json:"partition"`
}

// groupRecords caches group records by group.
type groupRecords struct {
	mu sync.Mutex
	m  map[string]*groupRecord
}

func (s *Server) groupRecord(ctx context.Context, name string) (*groupRecord, error) {
	s.records.mu.Lock()
	rec := s.records.m[name]
	s.records.mu.Unlock()
	if rec != nil {
		return rec, nil
	}
	return s.loadGroupRecord(ctx, name)
}

// loadGroupRecord reads the group's record from the store (every write goes there before
// the cache, so the store's is never behind this broker's) and caches it. Another broker may have added partitions (a Kafka transaction's coordinator applies
// its offsets itself, txn.go), so the list that finds every offset is read afresh where
// it matters: OffsetFetch of all partitions, and before the record is written.
func (s *Server) loadGroupRecord(ctx context.Context, name string) (*groupRecord, error) {
	data, err := s.be.LoadGroup(ctx, name)
	if err != nil {
		return nil, err
	}
	rec := &groupRecord{}
	if data != nil {
		if err := json.Unmarshal(data, rec); err != nil {
			return nil, fmt.Errorf("kafka: group %q record: %w", name, err)
		}
	}
	s.records.mu.Lock()
	s.records.m[name] = rec
	s.records.mu.Unlock()
	return rec, nil
}

// addGroupPartitions records that group committed to tps, writing the record if it grew.
func (s *Server) addGroupPartitions(ctx context.Context, name string, tps []groupPartition) error {
	rec, err := s.groupRecord(ctx, name)
	if err != nil {
		return err
	}
	s.records.mu.Lock()
	grown := false
	next := &groupRecord{Partitions: slices.Clone(rec.Partitions)}
	for _, tp := range tps {
		if !slices.Contains(next.Partitions, tp) {
			next.Partitions = append(next.Partitions, tp)
			grown = true
		}
	}
	s.records.mu.Unlock()
	if !grown {
		return nil
	}
	// Grown: write what the store has plus these, not just what this broker cached.
	if rec, err = s.loadGroupRecord(ctx, name); err != nil {
		return err
	}
	s.records.mu.Lock()
	next = &groupRecord{Partitions: slices.Clone(rec.Partitions)}
	s.records.mu.Unlock()
	for _, tp := range tps {
		if !slices.Contains(next.Partitions, tp) {
			next.Partitions = append(next.Partitions, tp)
		}
	}
	data, err := json.Marshal(next)
	if err != nil {
		return err
	}
	if err := s.be.SaveGroup(ctx, name, data); err != nil {
		return err
	}
	s.records.mu.Lock()
	s.records.m[name] = next
	s.records.mu.Unlock()
	return nil
}

// coordinates tells whether this broker coordinates key; an error is the Kafka error to
// answer with.
func (s *Server) coordinates(ctx context.Context, key string) error {
	id, err := s.be.Coordinator(ctx, key)
	if err != nil {
		return fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	if id != s.nodeID {
		return fmt.Errorf("%w: node %d coordinates %q", ErrNotCoordinator, id, key)
	}
	return nil
}

func (s *Server) node(ctx context.Context, id int32) (Node, error) {
	nodes, err := s.be.Brokers(ctx)
	if err != nil {
		return Node{}, err
	}
	for _, n := range nodes {
		if n.ID == id {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("%w: node %d is not live", kerr.CoordinatorNotAvailable, id)
}

func handleFindCoordinator(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.FindCoordinatorRequest)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := r.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	for _, key := range keys {
		co := kmsg.NewFindCoordinatorResponseCoordinator()
		co.Key, co.NodeID, co.Port = key, -1, -1
		var err error
		switch r.CoordinatorType {
		case 0:
			var id int32
			if id, err = c.s.be.Coordinator(c.ctx, key); err == nil {
				var n Node
				if n, err = c.s.node(c.ctx, id); err == nil {
					co.NodeID, co.Host, co.Port = n.ID, n.Host, n.Port
				}
			} else {
				err = fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
			}
		case 1:
			// The broker serving the internal/txn coordinator the id maps to.
			var id int32
			if _, id, err = c.s.be.TxnCoordinator(c.ctx, key); err == nil {
				var n Node
				if n, err = c.s.node(c.ctx, id); err == nil {
					co.NodeID, co.Host, co.Port = n.ID, n.Host, n.Port
				}
			}
		default:
			err = fmt.Errorf("%w: coordinator type %d", ErrInvalidRequest, r.CoordinatorType)
		}
		co.ErrorCode, co.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Coordinators = append(resp.Coordinators, co)
	}
	if r.Version < 4 && len(resp.Coordinators) == 1 {
		co := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = co.ErrorCode, co.ErrorMessage, co.NodeID, co.Host, co.Port
		resp.Coordinators = nil
	}
	reply(resp)
}

func handleJoinGroup(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.JoinGroupRequest)
	if err := c.s.coordinates(c.ctx, r.Group); err != nil {
		resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation, resp.MemberID = errorCode(err), -1, r.MemberID
		reply(resp)
		return
	}
	c.s.groups.Join(r, group.JoinInfo{ClientID: c.clientID, ClientHost: "/" + c.host},
		func(resp *kmsg.JoinGroupResponse) { reply(resp) })
}

func handleSyncGroup(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.SyncGroupRequest)
	if err := c.s.coordinates(c.ctx, r.Group); err != nil {
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = errorCode(err)
		reply(resp)
		return
	}
	c.s.groups.Sync(r, func(resp *kmsg.SyncGroupResponse) { reply(resp) })
}

func handleHeartbeat(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.HeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
	err := c.s.coordinates(c.ctx, r.Group)
	if err == nil {
		err = c.s.groups.Heartbeat(r)
	}
	resp.ErrorCode = errorCode(err)
	reply(resp)
}

func handleLeaveGroup(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.LeaveGroupRequest)
	if err := c.s.coordinates(c.ctx, r.Group); err != nil {
		resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = errorCode(err)
		reply(resp)
		return
	}
	reply(c.s.groups.LeaveGroup(r))
}

// handleOffsetCommit stores each partition's offset in the group's subscription on it.
// It runs in the read loop, so a connection's commits apply in the order sent.
func handleOffsetCommit(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.OffsetCommitRequest)
	s := c.s
	resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
	err := s.coordinates(c.ctx, r.Group)
	if err == nil && r.Group == "" {
		err = kerr.InvalidGroupID
	}
	if err == nil {
		err = s.groups.CheckCommit(r.Group, r.MemberID, r.InstanceID, r.Generation)
	}
	var tps []groupPartition
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			perr := err
			if perr == nil {
				perr = c.authorizeName(c.ctx, t.Topic, auth.TopicConsume, r.Group)
			}
			if perr == nil {
				perr = s.commitOne(c.ctx, r.Group, t.Topic, p.Partition, p.Offset, p.Metadata, false)
			}
			if perr == nil {
				tps = append(tps, groupPartition{Topic: t.Topic, Partition: p.Partition})
			}
			rp.ErrorCode = errorCode(perr)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(tps) > 0 {
		if err := s.addGroupPartitions(c.ctx, r.Group, tps); err != nil {
			// The offsets are stored; only the list that finds them without naming the
			// partitions failed. Report it so the client commits again.
			s.log.Warn("kafka group record not saved", "group", r.Group, "err", err)
			for i := range resp.Topics {
				for j := range resp.Topics[i].Partitions {
					if resp.Topics[i].Partitions[j].ErrorCode == 0 {
						resp.Topics[i].Partitions[j].ErrorCode = kerr.CoordinatorLoadInProgress.Code
					}
				}
			}
		}
	}
	reply(resp)
}

// commitOne commits one partition's offset; viaStore keeps it in the metadata store only
// (Backend.StoreOffset: a commit made on a broker that does not coordinate the group).
func (s *Server) commitOne(ctx context.Context, grp, topic string, part int32, offset int64, metadata *string, viaStore bool) error {
	if offset < 0 {
		return fmt.Errorf("%w: offset %d", ErrOffsetOutOfRange, offset)
	}
	ref, err := s.namer.Resolve(topic)
	if err != nil {
		return err
	}
	n, err := s.partitionCount(ctx, ref.Full(), false)
	if err != nil {
		return err
	}
	name, err := partitionName(ref, n, part)
	if err != nil {
		return err
	}
	md := ""
	if metadata != nil {
		md = *metadata
	}
	if len(md) > 4096 {
		return kerr.OffsetMetadataTooLarge
	}
	commit := s.be.CommitOffset
	if viaStore {
		commit = s.be.StoreOffset
	}
	if err := commit(ctx, name, grp, offset, md); err != nil {
		return err
	}
	s.metrics.committedOffset(lagKey{group: grp, topic: topic, partition: part, log: name}, offset)
	return nil
}

func handleOffsetFetch(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.OffsetFetchRequest)
	resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
	if r.Version < 8 {
		var topics []kmsg.OffsetFetchRequestGroupTopic
		for _, t := range r.Topics {
			topics = append(topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
		if r.Topics == nil {
			topics = nil
		}
		g := c.s.fetchGroupOffsets(c.ctx, c, r.Group, topics)
		resp.ErrorCode = g.ErrorCode
		for _, t := range g.Topics {
			rt := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition{
					Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata, ErrorCode: p.ErrorCode})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		reply(resp)
		return
	}
	for _, g := range r.Groups {
		resp.Groups = append(resp.Groups, c.s.fetchGroupOffsets(c.ctx, c, g.Group, g.Topics))
	}
	reply(resp)
}

// fetchGroupOffsets answers one group of an OffsetFetch; nil topics means every partition
// the group committed to.
func (s *Server) fetchGroupOffsets(ctx context.Context, c *conn, grp string, topics []kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroup {
	out := kmsg.OffsetFetchResponseGroup{Group: grp}
	if err := s.coordinates(ctx, grp); err != nil {
		out.ErrorCode = errorCode(err)
		return out
	}
	if topics == nil {
		rec, err := s.loadGroupRecord(ctx, grp)
		if err != nil {
			out.ErrorCode = errorCode(err)
			return out
		}
		s.records.mu.Lock()
		byTopic := map[string]int{}
		for _, tp := range rec.Partitions {
			i, ok := byTopic[tp.Topic]
			if !ok {
				i = len(topics)
				byTopic[tp.Topic] = i
				topics = append(topics, kmsg.OffsetFetchRequestGroupTopic{Topic: tp.Topic})
			}
			topics[i].Partitions = append(topics[i].Partitions, tp.Partition)
		}
		s.records.mu.Unlock()
	}
	for _, t := range topics {
		rt := kmsg.OffsetFetchResponseGroupTopic{Topic: t.Topic}
		for _, part := range t.Partitions {
			rp := kmsg.OffsetFetchResponseGroupTopicPartition{Partition: part, Offset: -1, LeaderEpoch: -1}
			var off int64
			var md string
			var ok bool
			err := c.authorizeName(ctx, t.Topic, auth.TopicConsume, grp)
			if err == nil {
				off, md, ok, err = s.committed(ctx, grp, t.Topic, part)
			}
			switch {
			case err != nil:
				rp.ErrorCode = errorCode(err)
			case ok:
				rp.Offset, rp.Metadata = off, &md
			default:
				rp.Metadata = kmsg.StringPtr("")
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
	return out
}

func (s *Server) committed(ctx context.Context, grp, topic string, part int32) (int64, string, bool, error) {
	ref, err := s.namer.Resolve(topic)
	if err != nil {
		return 0, "", false, err
	}
	n, err := s.partitionCount(ctx, ref.Full(), false)
	if err != nil {
		return 0, "", false, err
	}
	name, err := partitionName(ref, n, part)
	if err != nil {
		return 0, "", false, err
	}
	return s.be.CommittedOffset(ctx, name, grp)
}

func handleDescribeGroups(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.DescribeGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, name := range r.Groups {
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.Group = name
		g.AuthorizedOperations = -2147483648
		if err := c.s.coordinates(c.ctx, name); err != nil {
			g.ErrorCode, g.ErrorMessage = errorCode(err), errorMessage(err)
			resp.Groups = append(resp.Groups, g)
			continue
		}
		d := c.s.groups.Describe(name)
		g.State, g.ProtocolType, g.Protocol = string(d.State), d.ProtocolType, d.Protocol
		if d.State == group.Dead {
			// No members here; a group with committed offsets is Empty, as in Kafka.
			if rec, err := c.s.groupRecord(c.ctx, name); err == nil && len(rec.Partitions) > 0 {
				g.State = string(group.Empty)
			}
		}
		for _, m := range d.Members {
			gm := kmsg.NewDescribeGroupsResponseGroupMember()
			gm.MemberID, gm.ClientID, gm.ClientHost = m.ID, m.ClientID, m.ClientHost
			if m.InstanceID != "" {
				gm.InstanceID = kmsg.StringPtr(m.InstanceID)
			}
			gm.ProtocolMetadata, gm.MemberAssignment = m.Metadata, m.Assignment
			g.Members = append(g.Members, gm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	reply(resp)
}

func handleListGroups(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.ListGroupsRequest)
	resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
	seen := map[string]bool{}
	add := func(name, ptype string, state group.State) {
		if seen[name] {
			return
		}
		seen[name] = true
		if len(r.StatesFilter) > 0 && !slices.Contains(r.StatesFilter, string(state)) {
			return
		}
		resp.Groups = append(resp.Groups, kmsg.ListGroupsResponseGroup{Group: name, ProtocolType: ptype, GroupState: string(state)})
	}
	for _, g := range c.s.groups.List() {
		add(g.Name, g.ProtocolType, g.State)
	}
	names, err := c.s.be.ListGroups(c.ctx)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		reply(resp)
		return
	}
	for _, name := range names {
		if !seen[name] && c.s.coordinates(c.ctx, name) == nil {
			add(name, "consumer", group.Empty)
		}
	}
	reply(resp)
}

func handleDeleteGroups(c *conn, req kmsg.Request, reply func(kmsg.Response)) {
	r := req.(*kmsg.DeleteGroupsRequest)
	s := c.s
	resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, name := range r.Groups {
		err := s.coordinates(c.ctx, name)
		if err == nil {
			err = s.groups.Delete(name)
		}
		if err == nil {
			err = s.deleteGroupOffsets(c.ctx, name)
		}
		resp.Groups = append(resp.Groups, kmsg.DeleteGroupsResponseGroup{Group: name, ErrorCode: errorCode(err)})
	}
	reply(resp)
}

func (s *Server) deleteGroupOffsets(ctx context.Context, name string) error {
	rec, err := s.groupRecord(ctx, name)
	if err != nil {
		return err
	}
	if len(rec.Partitions) == 0 {
		if data, err := s.be.LoadGroup(ctx, name); err != nil {
			return err
		} else if data == nil {
			return kerr.GroupIDNotFound
		}
	}
	s.records.mu.Lock()
	parts := slices.Clone(rec.Partitions)
	s.records.mu.Unlock()
	for _, tp := range parts {
		ref, err := s.namer.Resolve(tp.Topic)
		if err != nil {
			continue
		}
		n, err := s.partitionCount(ctx, ref.Full(), false)
		if err != nil {
			continue // the topic is gone, and its subscriptions with it
		}
		pname, err := partitionName(ref, n, tp.Partition)
		if err != nil {
			continue
		}
		if err := s.be.DeleteOffset(ctx, pname, name); err != nil {
			return err
		}
	}
	if err := s.be.DeleteGroup(ctx, name); err != nil {
		return err
	}
	s.records.mu.Lock()
	delete(s.records.m, name)
	s.records.mu.Unlock()
	s.metrics.forgetGroup(name)
	return nil
}
