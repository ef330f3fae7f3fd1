package group

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func testCoordinator() *Coordinator {
	return New(Config{MinSessionTimeout: 10 * time.Millisecond, MaxSessionTimeout: time.Hour, MaxSize: 10, MaxGroups: 10})
}

func joinReq(member string, session time.Duration, protocols ...string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group, r.MemberID, r.ProtocolType = "g", member, "consumer"
	r.SessionTimeoutMillis = int32(session / time.Millisecond)
	r.RebalanceTimeoutMillis = int32(time.Minute / time.Millisecond)
	for _, p := range protocols {
		r.Protocols = append(r.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: []byte(p)})
	}
	return r
}

// join runs a JoinGroup and returns a channel with its answer.
func join(c *Coordinator, r *kmsg.JoinGroupRequest) chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	c.Join(r, JoinInfo{ClientID: "c"}, func(resp *kmsg.JoinGroupResponse) { ch <- resp })
	return ch
}

func syncGroup(c *Coordinator, member string, gen int32, assign map[string]string) chan *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version, r.Group, r.MemberID, r.Generation = 5, "g", member, gen
	for m, a := range assign {
		r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(a)})
	}
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	c.Sync(r, func(resp *kmsg.SyncGroupResponse) { ch <- resp })
	return ch
}

func memberID(t *testing.T, c *Coordinator) string {
	t.Helper()
	resp := <-join(c, joinReq("", time.Hour, "range"))
	if resp.ErrorCode != kerr.MemberIDRequired.Code || resp.MemberID == "" {
		t.Fatalf("first join: code %d id %q, want MEMBER_ID_REQUIRED with an id", resp.ErrorCode, resp.MemberID)
	}
	return resp.MemberID
}

// form makes a the only member (generation 1), then has b join: a learns of the
// rebalance from its heartbeat and rejoins, which completes generation 2 with both.
func form(t *testing.T, c *Coordinator, a, b *kmsg.JoinGroupRequest) (ra, rb *kmsg.JoinGroupResponse) {
	t.Helper()
	if r := <-join(c, a); r.ErrorCode != 0 || r.Generation != 1 {
		t.Fatalf("first member's join %+v", r)
	}
	if r := <-syncGroup(c, a.MemberID, 1, map[string]string{a.MemberID: "A"}); r.ErrorCode != 0 {
		t.Fatalf("first member's sync %+v", r)
	}
	jb := join(c, b)
	if err := c.Heartbeat(&kmsg.HeartbeatRequest{Group: "g", MemberID: a.MemberID, Generation: 1}); !errors.Is(err, kerr.RebalanceInProgress) {
		t.Fatalf("heartbeat during a join: %v", err)
	}
	ra, rb = <-join(c, a), <-jb
	return ra, rb
}

func TestTwoMembersJoinSyncAndLeave(t *testing.T) {
	c := testCoordinator()
	a, b := memberID(t, c), memberID(t, c)
	ra, rb := form(t, c, joinReq(a, time.Hour, "range", "sticky"), joinReq(b, time.Hour, "sticky", "range"))
	if ra.ErrorCode != 0 || rb.ErrorCode != 0 || ra.Generation != 2 || rb.Generation != 2 {
		t.Fatalf("joins: %+v %+v", ra, rb)
	}
	if ra.LeaderID != a || len(ra.Members) != 2 || len(rb.Members) != 0 {
		t.Fatalf("leader %q with %d members, follower sees %d", ra.LeaderID, len(ra.Members), len(rb.Members))
	}
	if *ra.Protocol != "range" {
		t.Fatalf("protocol %q: the leader's first protocol every member supports", *ra.Protocol)
	}
	// The follower's sync waits for the leader's.
	sb := syncGroup(c, b, 2, nil)
	select {
	case r := <-sb:
		t.Fatalf("follower sync answered before the leader's: %+v", r)
	default:
	}
	sa := syncGroup(c, a, 2, map[string]string{a: "A", b: "B"})
	if r := <-sa; r.ErrorCode != 0 || string(r.MemberAssignment) != "A" {
		t.Fatalf("leader sync %+v", r)
	}
	if r := <-sb; r.ErrorCode != 0 || string(r.MemberAssignment) != "B" {
		t.Fatalf("follower sync %+v", r)
	}
	if d := c.Describe("g"); d.State != Stable || len(d.Members) != 2 {
		t.Fatalf("describe %+v", d)
	}
	hb := &kmsg.HeartbeatRequest{Group: "g", MemberID: b, Generation: 2}
	if err := c.Heartbeat(hb); err != nil {
		t.Fatal(err)
	}
	if err := c.Heartbeat(&kmsg.HeartbeatRequest{Group: "g", MemberID: b, Generation: 0}); !errors.Is(err, kerr.IllegalGeneration) {
		t.Fatalf("stale generation heartbeat: %v", err)
	}
	if err := c.CheckCommit("g", b, nil, 2); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckCommit("g", "", nil, -1); !errors.Is(err, kerr.UnknownMemberID) {
		t.Fatalf("outside commit into a live group: %v", err)
	}
	// a leaves: b is told to rejoin, and rejoining alone makes generation 2 with b leader.
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version, lr.Group = 5, "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: a}}
	if resp := c.LeaveGroup(lr); resp.Members[0].ErrorCode != 0 {
		t.Fatalf("leave %+v", resp)
	}
	if err := c.Heartbeat(hb); !errors.Is(err, kerr.RebalanceInProgress) {
		t.Fatalf("heartbeat after a leave: %v", err)
	}
	rb = <-join(c, joinReq(b, time.Hour, "sticky", "range"))
	if rb.ErrorCode != 0 || rb.Generation != 3 || rb.LeaderID != b || len(rb.Members) != 1 {
		t.Fatalf("rejoin %+v", rb)
	}
	if err := c.Delete("g"); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Fatalf("delete of a live group: %v", err)
	}
}

func TestSessionExpiryRebalances(t *testing.T) {
	c := testCoordinator()
	a, b := memberID(t, c), memberID(t, c)
	form(t, c, joinReq(a, time.Hour, "range"), joinReq(b, 50*time.Millisecond, "range"))
	<-syncGroup(c, a, 2, map[string]string{a: "A", b: "B"})
	// b never heartbeats: it expires and a is told to rejoin.
	deadline := time.Now().Add(time.Minute)
	for {
		err := c.Heartbeat(&kmsg.HeartbeatRequest{Group: "g", MemberID: a, Generation: 2})
		if errors.Is(err, kerr.RebalanceInProgress) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b never expired: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := <-join(c, joinReq(a, time.Hour, "range"))
	if r.ErrorCode != 0 || len(r.Members) != 1 || r.Generation != 3 {
		t.Fatalf("rejoin after expiry %+v", r)
	}
}

func TestInconsistentProtocolsAndBadTimeouts(t *testing.T) {
	c := testCoordinator()
	a := memberID(t, c)
	<-join(c, joinReq(a, time.Hour, "range"))
	b := memberID(t, c)
	if r := <-join(c, joinReq(b, time.Hour, "roundrobin")); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("no common protocol: %d", r.ErrorCode)
	}
	if r := <-join(c, joinReq("", time.Millisecond, "range")); r.ErrorCode != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("session below the minimum: %d", r.ErrorCode)
	}
	if r := <-join(c, joinReq("nobody", time.Hour, "range")); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member id: %d", r.ErrorCode)
	}
}
