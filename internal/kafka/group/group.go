package group

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a group's state, named as Kafka names it in DescribeGroups and ListGroups.
type State string

// The group states.
const (
	Empty               State = "Empty"
	PreparingRebalance  State = "PreparingRebalance"
	CompletingRebalance State = "CompletingRebalance"
	Stable              State = "Stable"
	Dead                State = "Dead"
)

// Config bounds the coordinator (config.KafkaConfig's group keys).
type Config struct {
	MinSessionTimeout     time.Duration
	MaxSessionTimeout     time.Duration
	InitialRebalanceDelay time.Duration
	MaxSize               int // members per group
	MaxGroups             int
}

// Coordinator holds the groups this broker coordinates.
type Coordinator struct {
	cfg Config

	mu     sync.Mutex
	groups map[string]*Group
}

// New returns an empty coordinator.
func New(cfg Config) *Coordinator {
	return &Coordinator{cfg: cfg, groups: map[string]*Group{}}
}

// Group is one consumer group's membership.
type Group struct {
	c    *Coordinator
	name string

	mu           sync.Mutex
	state        State
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	order        []string          // member ids in join order (the first is the next leader)
	instances    map[string]string // group.instance.id -> member id
	pending      map[string]bool   // ids handed out with MEMBER_ID_REQUIRED, not yet joined
	timer        *time.Timer       // rebalance completion (initial delay, timeout)
	deadline     time.Time         // rebalance timeout of the current rebalance
	delayUntil   time.Time         // initial-delay end of the current rebalance
}

type member struct {
	id, instanceID       string
	clientID, clientHost string
	protocolType         string
	protocols            []kmsg.JoinGroupRequestProtocol
	session, rebalance   time.Duration
	assignment           []byte
	joinReply            func(*kmsg.JoinGroupResponse)
	joinVersion          int16
	syncReply            func(*kmsg.SyncGroupResponse)
	syncVersion          int16
	timer                *time.Timer
}

// replies collects the callbacks to run once the group's lock is released.
type replies []func()

func (r replies) run() {
	for _, f := range r {
		f()
	}
}

// Get returns the group called name, nil if it is not known.
func (c *Coordinator) Get(name string) *Group {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groups[name]
}

func (c *Coordinator) getOrCreate(name string) (*Group, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.groups[name]; g != nil {
		return g, nil
	}
	if len(c.groups) >= c.cfg.MaxGroups {
		return nil, kerr.CoordinatorNotAvailable
	}
	g := &Group{c: c, name: name, state: Empty, members: map[string]*member{},
		instances: map[string]string{}, pending: map[string]bool{}}
	c.groups[name] = g
	return g, nil
}

// JoinInfo is what the connection knows about the joining client.
type JoinInfo struct {
	ClientID, ClientHost string
}

func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return clientID + "-" + hex.EncodeToString(b[:])
}

// Join handles a JoinGroup. reply is called exactly once, possibly later (when the
// rebalance completes) and from another goroutine.
func (c *Coordinator) Join(req *kmsg.JoinGroupRequest, info JoinInfo, reply func(*kmsg.JoinGroupResponse)) {
	fail := func(err *kerr.Error, memberID string) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation, resp.MemberID = err.Code, -1, memberID
		reply(resp)
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		fail(kerr.InvalidSessionTimeout, req.MemberID)
		return
	}
	if req.Group == "" {
		fail(kerr.InvalidGroupID, req.MemberID)
		return
	}
	if req.ProtocolType == "" || len(req.Protocols) == 0 {
		fail(kerr.InconsistentGroupProtocol, req.MemberID)
		return
	}
	var g *Group
	if req.MemberID == "" {
		var err error
		if g, err = c.getOrCreate(req.Group); err != nil {
			fail(kerr.CoordinatorNotAvailable, "")
			return
		}
	} else if g = c.Get(req.Group); g == nil {
		fail(kerr.UnknownMemberID, req.MemberID)
		return
	}
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 || rebalance <= 0 {
		rebalance = session
	}
	var out replies
	g.mu.Lock()
	out = g.joinLocked(req, info, session, rebalance, reply)
	g.mu.Unlock()
	out.run()
}

func (g *Group) joinLocked(req *kmsg.JoinGroupRequest, info JoinInfo, session, rebalance time.Duration, reply func(*kmsg.JoinGroupResponse)) replies {
	failNow := func(err *kerr.Error, memberID string) replies {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation, resp.MemberID = err.Code, -1, memberID
		return replies{func() { reply(resp) }}
	}
	if g.state == Dead {
		return failNow(kerr.CoordinatorNotAvailable, req.MemberID)
	}
	if len(g.members) > 0 && (req.ProtocolType != g.protocolType || !g.supportsLocked(req.Protocols)) {
		return failNow(kerr.InconsistentGroupProtocol, req.MemberID)
	}
	instance := ""
	if req.InstanceID != nil {
		instance = *req.InstanceID
	}
	id := req.MemberID
	var out replies
	m := g.members[id]
	switch {
	case id == "" && instance != "" && g.instances[instance] != "":
		// A static member restarting: it takes the old member's place under a new id.
		old := g.members[g.instances[instance]]
		id = newMemberID(info.ClientID)
		out = append(out, g.removeLocked(old, kerr.FencedInstanceID)...)
		m = g.addLocked(id, instance, req, info, session, rebalance)
	case id == "" && instance == "" && req.Version >= 4:
		// KIP-394: hand out an id and have the client join again with it, so a client
		// that retries a join whose answer it lost does not leave a ghost member.
		id = newMemberID(info.ClientID)
		g.pending[id] = true
		return failNow(kerr.MemberIDRequired, id)
	case id == "":
		id = newMemberID(info.ClientID)
		m = g.addLocked(id, instance, req, info, session, rebalance)
	case m == nil && g.pending[id]:
		delete(g.pending, id)
		m = g.addLocked(id, instance, req, info, session, rebalance)
	case m == nil:
		return failNow(kerr.UnknownMemberID, id)
	default:
		if m.instanceID != instance {
			return failNow(kerr.FencedInstanceID, id)
		}
	}
	if m.joinReply != nil {
		// A repeated join while one is pending: the older request gets no answer in
		// Kafka either; answer it so its connection's queue moves on.
		old := m.joinReply
		resp := &kmsg.JoinGroupResponse{Version: m.joinVersion, ErrorCode: kerr.RebalanceInProgress.Code, Generation: -1, MemberID: id}
		out = append(out, func() { old(resp) })
	}
	changed := !slices.EqualFunc(m.protocols, req.Protocols, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
	m.protocols, m.session, m.rebalance = req.Protocols, session, rebalance
	m.joinReply, m.joinVersion = reply, req.Version
	m.clientID, m.clientHost = info.ClientID, info.ClientHost
	stopTimer(m.timer) // a member waiting for its join answer does not expire
	switch g.state {
	case Stable, CompletingRebalance:
		if !changed && id != g.leader && g.generation > 0 {
			// A follower rejoining with what it had: answer with the current generation.
			out = append(out, g.answerJoinLocked(m))
			return out
		}
		out = append(out, g.prepareLocked()...)
	case Empty:
		out = append(out, g.prepareLocked()...)
	}
	return append(out, g.tryCompleteLocked()...)
}

func (g *Group) addLocked(id, instance string, req *kmsg.JoinGroupRequest, info JoinInfo, session, rebalance time.Duration) *member {
	m := &member{id: id, instanceID: instance, protocolType: req.ProtocolType}
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	g.members[id] = m
	g.order = append(g.order, id)
	if instance != "" {
		g.instances[instance] = id
	}
	return m
}

// supportsLocked tells whether protocols has one every member supports.
func (g *Group) supportsLocked(protocols []kmsg.JoinGroupRequestProtocol) bool {
	for _, p := range protocols {
		if g.allSupportLocked(p.Name) {
			return true
		}
	}
	return false
}

func (g *Group) allSupportLocked(name string) bool {
	for _, m := range g.members {
		if !slices.ContainsFunc(m.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == name }) {
			return false
		}
	}
	return true
}

// prepareLocked starts a rebalance: pending syncs are told to rejoin.
func (g *Group) prepareLocked() replies {
	if g.state == PreparingRebalance {
		return nil
	}
	var out replies
	for _, m := range g.members {
		if m.syncReply != nil {
			r := m.syncReply
			resp := &kmsg.SyncGroupResponse{Version: m.syncVersion, ErrorCode: kerr.RebalanceInProgress.Code}
			m.syncReply = nil
			out = append(out, func() { r(resp) })
		}
	}
	wasEmpty := g.state == Empty
	g.state = PreparingRebalance
	var longest time.Duration
	for _, m := range g.members {
		longest = max(longest, m.rebalance)
	}
	now := time.Now()
	g.deadline = now.Add(longest)
	g.delayUntil = time.Time{}
	if wasEmpty && g.c.cfg.InitialRebalanceDelay > 0 {
		g.delayUntil = now.Add(min(g.c.cfg.InitialRebalanceDelay, longest))
	}
	g.scheduleLocked()
	return out
}

func (g *Group) scheduleLocked() {
	at := g.deadline
	if !g.delayUntil.IsZero() && g.delayUntil.Before(at) {
		at = g.delayUntil
	}
	stopTimer(g.timer)
	g.timer = time.AfterFunc(max(time.Until(at), time.Millisecond), g.onTimer)
}

func (g *Group) onTimer() {
	g.mu.Lock()
	var out replies
	if g.state == PreparingRebalance {
		now := time.Now()
		if !now.Before(g.deadline) {
			out = g.completeLocked()
		} else {
			if !g.delayUntil.IsZero() && !now.Before(g.delayUntil) {
				g.delayUntil = time.Time{}
			}
			if out = g.tryCompleteLocked(); g.state == PreparingRebalance {
				g.scheduleLocked()
			}
		}
	}
	g.mu.Unlock()
	out.run()
}

// tryCompleteLocked completes the rebalance if every member has joined and the initial
// delay is over.
func (g *Group) tryCompleteLocked() replies {
	if g.state != PreparingRebalance {
		return nil
	}
	if !g.delayUntil.IsZero() {
		if time.Now().Before(g.delayUntil) {
			return nil
		}
		g.delayUntil = time.Time{}
	}
	for _, m := range g.members {
		if m.joinReply == nil {
			return nil
		}
	}
	return g.completeLocked()
}

// completeLocked ends the join phase: members that did not rejoin are removed, a new
// generation starts and every joined member gets its answer.
func (g *Group) completeLocked() replies {
	stopTimer(g.timer)
	var out replies
	for _, id := range slices.Clone(g.order) {
		if m := g.members[id]; m != nil && m.joinReply == nil {
			out = append(out, g.removeLocked(m, kerr.UnknownMemberID)...)
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.state, g.protocol, g.leader, g.protocolType = Empty, "", "", ""
		return out
	}
	if g.members[g.leader] == nil {
		g.leader = g.order[0]
	}
	g.protocol = ""
	for _, p := range g.members[g.leader].protocols {
		if g.allSupportLocked(p.Name) {
			g.protocol = p.Name
			break
		}
	}
	g.state = CompletingRebalance
	for _, id := range g.order {
		out = append(out, g.answerJoinLocked(g.members[id]))
	}
	return out
}

// answerJoinLocked sends m its JoinGroup answer for the current generation; the leader's
// lists every member with its metadata for the chosen protocol.
func (g *Group) answerJoinLocked(m *member) func() {
	resp := &kmsg.JoinGroupResponse{
		Version:      m.joinVersion,
		Generation:   g.generation,
		ProtocolType: kmsg.StringPtr(g.protocolType),
		Protocol:     kmsg.StringPtr(g.protocol),
		LeaderID:     g.leader,
		MemberID:     m.id,
	}
	if m.id == g.leader {
		for _, id := range g.order {
			o := g.members[id]
			jm := kmsg.JoinGroupResponseMember{MemberID: o.id, ProtocolMetadata: o.metadata(g.protocol)}
			if o.instanceID != "" {
				jm.InstanceID = kmsg.StringPtr(o.instanceID)
			}
			resp.Members = append(resp.Members, jm)
		}
	}
	r := m.joinReply
	m.joinReply = nil
	g.resetSessionLocked(m)
	return func() { r(resp) }
}

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// removeLocked drops m; its pending requests are answered with err.
func (g *Group) removeLocked(m *member, err *kerr.Error) replies {
	if m == nil {
		return nil
	}
	stopTimer(m.timer)
	delete(g.members, m.id)
	g.order = slices.DeleteFunc(g.order, func(id string) bool { return id == m.id })
	if m.instanceID != "" && g.instances[m.instanceID] == m.id {
		delete(g.instances, m.instanceID)
	}
	var out replies
	if r := m.joinReply; r != nil {
		resp := &kmsg.JoinGroupResponse{Version: m.joinVersion, ErrorCode: err.Code, Generation: -1, MemberID: m.id}
		out = append(out, func() { r(resp) })
		m.joinReply = nil
	}
	if r := m.syncReply; r != nil {
		resp := &kmsg.SyncGroupResponse{Version: m.syncVersion, ErrorCode: err.Code}
		out = append(out, func() { r(resp) })
		m.syncReply = nil
	}
	if g.leader == m.id {
		g.leader = ""
	}
	return out
}

// afterRemovalLocked moves the group on once members left or expired.
func (g *Group) afterRemovalLocked() replies {
	switch g.state {
	case Stable, CompletingRebalance:
		if len(g.members) == 0 {
			g.state, g.protocol, g.leader = Empty, "", ""
			g.generation++
			return nil
		}
		return append(g.prepareLocked(), g.tryCompleteLocked()...)
	case PreparingRebalance:
		if len(g.members) == 0 {
			stopTimer(g.timer)
			g.state, g.protocol, g.leader = Empty, "", ""
			g.generation++
			return nil
		}
		return g.tryCompleteLocked()
	}
	return nil
}

func (g *Group) resetSessionLocked(m *member) {
	stopTimer(m.timer)
	id := m.id
	m.timer = time.AfterFunc(m.session, func() { g.expire(id, m) })
}

func (g *Group) expire(id string, m *member) {
	g.mu.Lock()
	var out replies
	if g.members[id] == m && m.joinReply == nil {
		out = append(g.removeLocked(m, kerr.UnknownMemberID), g.afterRemovalLocked()...)
	}
	g.mu.Unlock()
	out.run()
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// Sync handles a SyncGroup; reply is called exactly once, possibly later.
func (c *Coordinator) Sync(req *kmsg.SyncGroupRequest, reply func(*kmsg.SyncGroupResponse)) {
	fail := func(err *kerr.Error) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = err.Code
		reply(resp)
	}
	g := c.Get(req.Group)
	if g == nil {
		fail(kerr.UnknownMemberID)
		return
	}
	g.mu.Lock()
	m := g.members[req.MemberID]
	var err *kerr.Error
	switch {
	case g.state == Dead:
		err = kerr.CoordinatorNotAvailable
	case m == nil:
		err = kerr.UnknownMemberID
	case req.InstanceID != nil && *req.InstanceID != m.instanceID:
		err = kerr.FencedInstanceID
	case req.Generation != g.generation:
		err = kerr.IllegalGeneration
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		err = kerr.InconsistentGroupProtocol
	case g.state == PreparingRebalance:
		err = kerr.RebalanceInProgress
	}
	if err != nil {
		g.mu.Unlock()
		fail(err)
		return
	}
	g.resetSessionLocked(m)
	var out replies
	switch g.state {
	case Stable:
		resp := g.syncAnswerLocked(m, req.Version)
		out = replies{func() { reply(resp) }}
	case CompletingRebalance:
		m.syncReply, m.syncVersion = reply, req.Version
		if m.id == g.leader {
			for _, a := range req.GroupAssignment {
				if o := g.members[a.MemberID]; o != nil {
					o.assignment = a.MemberAssignment
				}
			}
			g.state = Stable
			for _, o := range g.members {
				if o.syncReply != nil {
					r, resp := o.syncReply, g.syncAnswerLocked(o, o.syncVersion)
					o.syncReply = nil
					out = append(out, func() { r(resp) })
				}
			}
		}
	}
	g.mu.Unlock()
	out.run()
}

func (g *Group) syncAnswerLocked(m *member, version int16) *kmsg.SyncGroupResponse {
	return &kmsg.SyncGroupResponse{
		Version:          version,
		ProtocolType:     kmsg.StringPtr(g.protocolType),
		Protocol:         kmsg.StringPtr(g.protocol),
		MemberAssignment: m.assignment,
	}
}

// Heartbeat handles a Heartbeat and returns its error (nil: carry on).
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) error {
	g := c.Get(req.Group)
	if g == nil {
		return kerr.UnknownMemberID
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.members[req.MemberID]
	switch {
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable
	case m == nil:
		return kerr.UnknownMemberID
	case req.InstanceID != nil && *req.InstanceID != m.instanceID:
		return kerr.FencedInstanceID
	case req.Generation != g.generation:
		return kerr.IllegalGeneration
	}
	if m.joinReply == nil {
		g.resetSessionLocked(m)
	}
	if g.state == PreparingRebalance {
		return kerr.RebalanceInProgress
	}
	return nil
}

// Leave handles a LeaveGroup: one error per member (v3+ lists members; older versions
// leave by the single MemberID).
func (c *Coordinator) Leave(req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, replies) {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	members := req.Members
	if req.Version < 3 {
		members = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	g := c.Get(req.Group)
	if g == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		if req.Version >= 3 {
			resp.ErrorCode = 0
			for _, lm := range members {
				resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{MemberID: lm.MemberID, InstanceID: lm.InstanceID, ErrorCode: kerr.UnknownMemberID.Code})
			}
		}
		return resp, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out replies
	removed := false
	for _, lm := range members {
		id := lm.MemberID
		var code int16
		if lm.InstanceID != nil {
			cur := g.instances[*lm.InstanceID]
			switch {
			case cur == "":
				code = kerr.UnknownMemberID.Code
			case id != "" && id != cur:
				code = kerr.FencedInstanceID.Code
			default:
				id = cur
			}
		}
		m := g.members[id]
		if code == 0 && m == nil {
			code = kerr.UnknownMemberID.Code
		}
		if code == 0 {
			out = append(out, g.removeLocked(m, kerr.UnknownMemberID)...)
			removed = true
		}
		if req.Version >= 3 {
			resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{MemberID: lm.MemberID, InstanceID: lm.InstanceID, ErrorCode: code})
		} else {
			resp.ErrorCode = code
		}
	}
	if removed {
		out = append(out, g.afterRemovalLocked()...)
	}
	return resp, out
}

// LeaveGroup is Leave with the replies it caused run.
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp, out := c.Leave(req)
	out.run()
	return resp
}

// CheckCommit tells whether an OffsetCommit (or TxnOffsetCommit) from member at
// generation may commit for group. A generation of -1 with no member is a commit from
// outside the group (kafka-consumer-groups --reset-offsets, a consumer without a group
// protocol), allowed only while the group has no members.
func (c *Coordinator) CheckCommit(group, memberID string, instanceID *string, generation int32) error {
	g := c.Get(group)
	if g == nil {
		if generation < 0 {
			return nil
		}
		return kerr.IllegalGeneration
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if generation < 0 && memberID == "" {
		if len(g.members) == 0 {
			return nil
		}
		return kerr.UnknownMemberID
	}
	m := g.members[memberID]
	switch {
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable
	case m == nil:
		return kerr.UnknownMemberID
	case instanceID != nil && *instanceID != m.instanceID:
		return kerr.FencedInstanceID
	case generation != g.generation:
		return kerr.IllegalGeneration
	case g.state == CompletingRebalance:
		return kerr.RebalanceInProgress
	}
	if m.joinReply == nil {
		g.resetSessionLocked(m)
	}
	return nil
}

// MemberInfo describes one member for DescribeGroups.
type MemberInfo struct {
	ID, InstanceID, ClientID, ClientHost string
	Metadata, Assignment                 []byte
}

// Description is a group as DescribeGroups shows it.
type Description struct {
	State        State
	ProtocolType string
	Protocol     string
	Generation   int32
	Members      []MemberInfo
}

// Describe returns the group's description; a group this coordinator does not know is
// Dead (Kafka's answer for a group with no state).
func (c *Coordinator) Describe(name string) Description {
	g := c.Get(name)
	if g == nil {
		return Description{State: Dead}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	d := Description{State: g.state, ProtocolType: g.protocolType, Protocol: g.protocol, Generation: g.generation}
	for _, id := range g.order {
		m := g.members[id]
		d.Members = append(d.Members, MemberInfo{ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID,
			ClientHost: m.clientHost, Metadata: m.metadata(g.protocol), Assignment: m.assignment})
	}
	return d
}

// Summary is one group as ListGroups shows it.
type Summary struct {
	Name         string
	ProtocolType string
	State        State
}

// List returns every group the coordinator knows.
func (c *Coordinator) List() []Summary {
	c.mu.Lock()
	gs := make([]*Group, 0, len(c.groups))
	for _, g := range c.groups {
		gs = append(gs, g)
	}
	c.mu.Unlock()
	out := make([]Summary, 0, len(gs))
	for _, g := range gs {
		g.mu.Lock()
		if g.state != Dead {
			out = append(out, Summary{Name: g.name, ProtocolType: g.protocolType, State: g.state})
		}
		g.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Summary) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// Delete removes an empty group (NON_EMPTY_GROUP if it has members). A group the
// coordinator does not know is deleted already.
func (c *Coordinator) Delete(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[name]
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.members) > 0 {
		return kerr.NonEmptyGroup
	}
	stopTimer(g.timer)
	g.state = Dead
	delete(c.groups, name)
	return nil
}

// Close stops every timer (the broker is shutting down); pending requests are answered
// with NOT_COORDINATOR so clients look for the new coordinator.
func (c *Coordinator) Close() {
	c.mu.Lock()
	gs := c.groups
	c.groups = map[string]*Group{}
	c.mu.Unlock()
	for _, g := range gs {
		g.mu.Lock()
		var out replies
		stopTimer(g.timer)
		for _, m := range g.members {
			out = append(out, g.removeLocked(m, kerr.NotCoordinator)...)
		}
		g.state = Dead
		g.mu.Unlock()
		out.run()
	}
}
