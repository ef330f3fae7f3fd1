package standalone_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/config"

	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// The authorization matrix: every binary command that names a topic or namespace and the
// admin endpoints of every route family, for each kind of principal, allowed or denied.
//
// Roles: root (superuser), acme-admin (admin of tenant acme), producer and consumer
// (produce-only and consume-only on namespace acme/app), other-admin (admin of another
// tenant), anonymous (no credentials: anonymousUserRole, with no grant).
var matrixRoles = []string{"root", "acme-admin", "producer", "consumer", "other-admin", "anonymous"}

// Who may do what, by rule.
var (
	onlyRoot      = []string{"root"}
	acmeAdmins    = []string{"root", "acme-admin"}
	lookupRoles   = []string{"root", "acme-admin", "producer", "consumer"}
	produceRoles  = []string{"root", "acme-admin", "producer"}
	consumeRoles  = []string{"root", "acme-admin", "consumer"}
	everyoneRoles = matrixRoles
)

type matrix struct {
	f      *secure
	tokens map[string]string
	msgID  pulsar.MessageID // a message of acme/app/matrix
}

const matrixTopic = "persistent://acme/app/matrix"

func setupMatrix(t *testing.T) *matrix {
	f := startSecure(t, func(c *config_) {
		c.Broker.Security.Authz.SuperUserRoles = []string{"root", "admin"}
		c.Broker.Transaction.CoordinatorEnabled = true // END_TXN_ON_* are in the matrix
		c.Broker.Packages.Enabled = true
	})
	m := &matrix{f: f, tokens: map[string]string{}}
	for _, r := range matrixRoles {
		if r != "anonymous" {
			m.tokens[r] = f.token(t, r, 0)
		}
	}
	root := "Bearer " + m.tokens["root"]
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/admin/v2/tenants/acme", `{"adminRoles":["acme-admin"],"allowedClusters":["standalone"]}`},
		{"PUT", "/admin/v2/namespaces/acme/app", ``},
		{"POST", "/admin/v2/namespaces/acme/app/permissions/producer", `["produce"]`},
		{"POST", "/admin/v2/namespaces/acme/app/permissions/consumer", `["consume"]`},
		{"PUT", "/admin/v2/tenants/other", `{"adminRoles":["other-admin"],"allowedClusters":["standalone"]}`},
		{"PUT", "/admin/v2/namespaces/other/ns", ``},
		{"PUT", "/admin/v2/persistent/acme/app/parted/partitions", `2`},
	} {
		if code, body := f.rest(t, root, c.method, c.path, c.body); code >= 300 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, code, body)
		}
	}
	c := f.client(t, pulsar.ClientOptions{URL: f.brokerURL, Authentication: pulsar.NewAuthenticationToken(m.tokens["root"])})
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: matrixTopic, SubscriptionName: "sub"})
	if err != nil {
		t.Fatal(err)
	}
	cons.Close()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: matrixTopic})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if m.msgID, err = p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("secret")}); err != nil {
		t.Fatal(err)
	}
	p.Close()
	return m
}

// binary runs one command for role on a fresh connection and says whether it was allowed.
func (m *matrix) binary(t *testing.T, role string, cmd string) bool {
	t.Helper()
	c := dialRaw(t, m.f.s.BrokerAddr())
	method, data := "", []byte(nil)
	if tok, ok := m.tokens[role]; ok {
		method, data = "token", []byte(tok)
	}
	if r := c.connect(method, data, true, nil); r.GetType() != pb.BaseCommand_CONNECTED {
		t.Fatalf("%s: CONNECT: %v", role, r)
	}
	defer c.nc.Close()
	rid := uint64(7)
	str := proto.String
	subscribe := func() *pb.BaseCommand {
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
			Topic: str(matrixTopic), Subscription: str("sub-" + role), SubType: pb.CommandSubscribe_Exclusive.Enum(),
			ConsumerId: proto.Uint64(1), RequestId: proto.Uint64(1)}})
		return m.answer(t, c)
	}
	var resp *pb.BaseCommand
	switch cmd {
	case "LOOKUP":
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_LOOKUP.Enum(), LookupTopic: &pb.CommandLookupTopic{Topic: str(matrixTopic), RequestId: &rid}})
		resp = m.answer(t, c)
		return resp.GetLookupTopicResponse().GetResponse() == pb.CommandLookupTopicResponse_Connect
	case "PARTITIONED_METADATA":
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_PARTITIONED_METADATA.Enum(), PartitionMetadata: &pb.CommandPartitionedTopicMetadata{Topic: str(matrixTopic), RequestId: &rid}})
		resp = m.answer(t, c)
		return resp.GetPartitionMetadataResponse().GetResponse() == pb.CommandPartitionedTopicMetadataResponse_Success
	case "PRODUCER":
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{Topic: str(matrixTopic), ProducerId: proto.Uint64(1), RequestId: &rid}})
		resp = m.answer(t, c)
		return resp.GetType() == pb.BaseCommand_PRODUCER_SUCCESS
	case "SUBSCRIBE":
		return subscribe().GetType() == pb.BaseCommand_SUCCESS
	case "SEEK":
		subscribe()
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_SEEK.Enum(), Seek: &pb.CommandSeek{ConsumerId: proto.Uint64(1), RequestId: &rid,
			MessagePublishTime: proto.Uint64(0)}})
		for {
			resp = m.answer(t, c)
			if resp.GetType() != pb.BaseCommand_CLOSE_CONSUMER {
				return resp.GetType() == pb.BaseCommand_SUCCESS
			}
		}
	case "GET_TOPICS_OF_NAMESPACE":
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_TOPICS_OF_NAMESPACE.Enum(), GetTopicsOfNamespace: &pb.CommandGetTopicsOfNamespace{
			Namespace: str("acme/app"), RequestId: &rid}})
		resp = m.answer(t, c)
		return resp.GetType() == pb.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE
	case "GET_SCHEMA":
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_SCHEMA.Enum(), GetSchema: &pb.CommandGetSchema{Topic: str(matrixTopic), RequestId: &rid}})
		resp = m.answer(t, c)
		return resp.GetGetSchemaResponse().GetErrorCode() != pb.ServerError_AuthorizationError
	case "END_TXN_ON_PARTITION", "END_TXN_ON_SUBSCRIPTION":
		// What another broker's coordinator sends; on a topic that does not exist (allowed
		// roles hear TopicNotFound, the others AuthorizationError before anything is looked at).
		ghost, id := str("persistent://acme/app/ghost-txn"), proto.Uint64(1<<40)
		if cmd == "END_TXN_ON_PARTITION" {
			c.send(&pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_PARTITION.Enum(), EndTxnOnPartition: &pb.CommandEndTxnOnPartition{
				RequestId: &rid, TxnidMostBits: proto.Uint64(0), TxnidLeastBits: id, Topic: ghost, TxnAction: pb.TxnAction_ABORT.Enum()}})
			resp = m.answer(t, c)
			return resp.GetType() == pb.BaseCommand_END_TXN_ON_PARTITION_RESPONSE &&
				resp.GetEndTxnOnPartitionResponse().GetError() != pb.ServerError_AuthorizationError
		}
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_END_TXN_ON_SUBSCRIPTION.Enum(), EndTxnOnSubscription: &pb.CommandEndTxnOnSubscription{
			RequestId: &rid, TxnidMostBits: proto.Uint64(0), TxnidLeastBits: id, TxnAction: pb.TxnAction_ABORT.Enum(),
			Subscription: &pb.Subscription{Topic: ghost, Subscription: str("s")}}})
		resp = m.answer(t, c)
		return resp.GetType() == pb.BaseCommand_END_TXN_ON_SUBSCRIPTION_RESPONSE &&
			resp.GetEndTxnOnSubscriptionResponse().GetError() != pb.ServerError_AuthorizationError
	case "GET_OR_CREATE_SCHEMA":
		c.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_OR_CREATE_SCHEMA.Enum(), GetOrCreateSchema: &pb.CommandGetOrCreateSchema{
			Topic: str(matrixTopic), RequestId: &rid, Schema: &pb.Schema{Name: str("s"), SchemaData: []byte{}, Type: pb.Schema_None.Enum()}}})
		resp = m.answer(t, c)
		return resp.GetGetOrCreateSchemaResponse().GetErrorCode() != pb.ServerError_AuthorizationError
	}
	t.Fatalf("unknown command %s", cmd)
	return false
}

// answer reads the broker's answer to the last request.
func (m *matrix) answer(t *testing.T, c *rawConn) *pb.BaseCommand {
	t.Helper()
	resp, err := c.next()
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	if e := resp.GetError(); e != nil && e.GetError() != pb.ServerError_AuthorizationError && resp.GetType() == pb.BaseCommand_ERROR {
		t.Logf("ERROR %s: %s", e.GetError(), e.GetMessage())
	}
	return resp
}

func (m *matrix) rest(t *testing.T, role, method, path, body string) (bool, int, string) {
	t.Helper()
	authz := ""
	if tok, ok := m.tokens[role]; ok {
		authz = "Bearer " + tok
	}
	code, b := m.f.rest(t, authz, method, path, body)
	return code != 401 && code != 403, code, b
}

func sameSet(got, want []string) bool {
	g, w := append([]string(nil), got...), append([]string(nil), want...)
	sort.Strings(g)
	sort.Strings(w)
	return fmt.Sprint(g) == fmt.Sprint(w)
}

type config_ = config.StandaloneConfig

func TestAuthorizationMatrix(t *testing.T) {
	m := setupMatrix(t)
	binary := []struct {
		cmd     string
		allowed []string
	}{
		{"LOOKUP", lookupRoles},
		{"PARTITIONED_METADATA", lookupRoles},
		{"PRODUCER", produceRoles},
		{"SUBSCRIBE", consumeRoles},
		{"SEEK", consumeRoles}, // on a consumer of its own only
		{"GET_TOPICS_OF_NAMESPACE", lookupRoles},
		{"GET_SCHEMA", lookupRoles},
		{"GET_OR_CREATE_SCHEMA", produceRoles},
		{"END_TXN_ON_PARTITION", acmeAdmins}, // brokers' coordinators: their role is a superuser
		{"END_TXN_ON_SUBSCRIPTION", acmeAdmins},
	}
	for _, b := range binary {
		var got []string
		for _, r := range matrixRoles {
			if m.binary(t, r, b.cmd) {
				got = append(got, r)
			}
		}
		if !sameSet(got, b.allowed) {
			t.Errorf("binary %s: allowed %v, want %v", b.cmd, got, b.allowed)
		}
	}
	led, ent := m.msgID.LedgerID(), m.msgID.EntryID()
	t0 := "/admin/v2/persistent/acme/app/matrix"
	ghost := "/admin/v2/persistent/acme/app/ghost"
	parted := "/admin/v2/persistent/acme/app/parted"
	rest := []struct {
		method, path, body string
		allowed            []string
	}{
		// Clusters: readable when authenticated, written by superusers.
		{"GET", "/admin/v2/clusters", "", everyoneRoles},
		{"GET", "/admin/v2/clusters/standalone", "", everyoneRoles},
		{"PUT", "/admin/v2/clusters/c-{role}", `{"serviceUrl":"http://x:8080"}`, onlyRoot},
		{"DELETE", "/admin/v2/clusters/ghost", "", onlyRoot},
		// Tenants.
		{"GET", "/admin/v2/tenants", "", onlyRoot},
		{"GET", "/admin/v2/tenants/acme", "", acmeAdmins},
		{"PUT", "/admin/v2/tenants/t-{role}", `{"adminRoles":[],"allowedClusters":["standalone"]}`, onlyRoot},
		{"POST", "/admin/v2/tenants/ghost", `{"adminRoles":[],"allowedClusters":["standalone"]}`, onlyRoot},
		{"DELETE", "/admin/v2/tenants/ghost", "", onlyRoot},
		{"DELETE", "/admin/v2/tenants/ghost?force=true", "", onlyRoot}, // 405 here: forceDeleteTenantAllowed is off
		// Namespaces, their policies and permissions: tenant admins.
		{"GET", "/admin/v2/namespaces/acme", "", acmeAdmins},
		{"PUT", "/admin/v2/namespaces/acme/ns-{role}", "", acmeAdmins},
		{"GET", "/admin/v2/namespaces/acme/app", "", acmeAdmins},
		{"DELETE", "/admin/v2/namespaces/acme/ghost", "", acmeAdmins},
		{"GET", "/admin/v2/namespaces/acme/app/retention", "", acmeAdmins},
		{"POST", "/admin/v2/namespaces/acme/app/messageTTL", "3600", acmeAdmins},
		{"GET", "/admin/v2/namespaces/acme/app/permissions", "", acmeAdmins},
		{"POST", "/admin/v2/namespaces/acme/app/permissions/someone", `["consume"]`, acmeAdmins},
		{"DELETE", "/admin/v2/namespaces/acme/app/permissions/someone", "", acmeAdmins},
		{"GET", "/admin/v2/namespaces/acme/app/permissions/subscription", "", acmeAdmins},
		{"GET", "/admin/v2/namespaces/acme/app/bundles", "", acmeAdmins},
		{"PUT", "/admin/v2/namespaces/acme/app/unload", "", acmeAdmins},
		{"POST", "/admin/v2/namespaces/acme/app/clearBacklog/ghost", "", consumeRoles},
		{"POST", "/admin/v2/namespaces/acme/app/0x00000000_0x40000000/clearBacklog/ghost", "", consumeRoles},
		{"POST", "/admin/v2/namespaces/acme/app/0x00000000_0x40000000/unsubscribe/ghost", "", consumeRoles},
		{"DELETE", "/admin/v2/namespaces/acme/app/0x00000000_0x40000000", "", acmeAdmins}, // delete-bundle
		{"DELETE", "/admin/v2/namespaces/acme/ghost?force=true", "", acmeAdmins},
		// Topic lists: produce or consume on the namespace.
		{"GET", "/admin/v2/namespaces/acme/app/topics", "", lookupRoles},
		{"GET", "/admin/v2/persistent/acme/app", "", lookupRoles},
		{"GET", "/admin/v2/persistent/acme/app/partitioned", "", lookupRoles},
		// Topic stats and metadata: produce or consume.
		{"GET", t0 + "/stats", "", lookupRoles},
		{"GET", t0 + "/internalStats", "", lookupRoles},
		{"GET", t0 + "/lastMessageId", "", lookupRoles},
		{"GET", t0 + "/partitions", "", lookupRoles},
		{"GET", "/lookup/v2/topic/persistent/acme/app/matrix", "", lookupRoles},
		{"GET", "/admin/v2/schemas/acme/app/matrix/schema", "", lookupRoles},
		// The REST producer: produce.
		{"POST", "/topics/persistent/acme/app/matrix", `{"messages":[{"payload":"x"}]}`, produceRoles},
		{"POST", "/topics/persistent/acme/app/matrix/partitions/0", `{"messages":[{"payload":"x"}]}`, produceRoles},
		// Reading messages and subscriptions: consume.
		{"GET", t0 + "/subscriptions", "", consumeRoles},
		{"GET", fmt.Sprintf("%s/ledger/%d/entry/%d", t0, led, ent), "", consumeRoles},
		{"GET", t0 + "/examinemessage?initialPosition=earliest&messagePosition=1", "", consumeRoles},
		{"GET", t0 + "/subscription/sub/position/1", "", consumeRoles},
		{"POST", t0 + "/subscription/sub/resetcursor/0", "", consumeRoles},
		{"POST", t0 + "/subscription/sub/skip/0", "", consumeRoles},
		{"PUT", t0 + "/subscription/s-{role}", "", consumeRoles},
		{"DELETE", t0 + "/subscription/ghost", "", consumeRoles},
		// The same on a partitioned topic (each partition where it is served, partitions.go).
		{"GET", parted + "/partitioned-stats", "", lookupRoles},
		{"GET", parted + "/partitioned-internalStats", "", lookupRoles},
		{"GET", parted + "/subscriptions", "", consumeRoles},
		{"PUT", parted + "/subscription/s-{role}", "", consumeRoles},
		{"POST", parted + "/subscription/ghost/skip_all", "", consumeRoles},
		{"POST", parted + "/subscription/sub/skip/1", "", consumeRoles}, // 405 for a partitioned topic
		{"POST", parted + "/subscription/sub/resetcursor/0", "", consumeRoles},
		{"POST", parted + "/all_subscription/expireMessages/0", "", consumeRoles},
		{"DELETE", parted + "/subscription/ghost", "", consumeRoles},
		{"PUT", parted + "/unload", "", acmeAdmins},
		// Everything else about a topic: tenant admins (never produce/consume roles).
		{"PUT", "/admin/v2/persistent/acme/app/new-{role}", "", acmeAdmins},
		{"DELETE", ghost, "", acmeAdmins},
		{"PUT", "/admin/v2/persistent/acme/app/part-{role}/partitions", "2", acmeAdmins},
		{"POST", ghost + "/terminate", "", acmeAdmins},
		{"PUT", ghost + "/unload", "", acmeAdmins},
		{"GET", t0 + "/retention", "", acmeAdmins},
		{"POST", t0 + "/retention", `{"retentionTimeInMinutes":1,"retentionSizeInMB":1}`, acmeAdmins},
		{"GET", t0 + "/permissions", "", acmeAdmins},
		{"POST", t0 + "/permissions/someone", `["produce"]`, acmeAdmins},
		{"DELETE", "/admin/v2/schemas/acme/app/ghost/schema", "", acmeAdmins},
		// Brokers and bookies: superusers.
		{"GET", "/admin/v2/brokers", "", onlyRoot},
		{"GET", "/admin/v2/brokers/health", "", onlyRoot},
		{"GET", "/admin/v2/brokers/configuration", "", onlyRoot},
		{"POST", "/admin/v2/brokers/configuration/dispatcherMaxReadBatchSize/100", "", onlyRoot},
		{"GET", "/admin/v2/bookies/all", "", onlyRoot},
		// Functions, sources and sinks: the namespace's functions/sources/sinks permission.
		{"GET", "/admin/v3/functions/acme/app", "", acmeAdmins},
		{"GET", "/admin/v3/sources/acme/app", "", acmeAdmins},
		{"GET", "/admin/v3/sinks/acme/app/ghost", "", acmeAdmins},
		{"GET", "/admin/v3/functions/connectors", "", everyoneRoles}, // as clusters: anonymousUserRole is set
		{"POST", "/admin/v3/functions/upload", "", onlyRoot},
		{"GET", "/admin/v2/worker/cluster", "", onlyRoot},
		// Packages: the namespace's packages permission (401 otherwise, as Pulsar).
		{"GET", "/admin/v3/packages/function/acme/app", "", acmeAdmins},
		{"GET", "/admin/v3/packages/sink/acme/app/ghost", "", acmeAdmins},
		{"GET", "/admin/v3/packages/function/acme/app/ghost/v1/metadata", "", acmeAdmins},
		{"DELETE", "/admin/v3/packages/source/acme/app/ghost/v1", "", acmeAdmins},
		{"GET", "/admin/v2/packages/function/acme/app", "", acmeAdmins},
		// Open.
		{"GET", "/ui/", "", everyoneRoles},
		{"GET", "/metrics", "", everyoneRoles},
		{"GET", "/status.html", "", everyoneRoles},
	}
	for _, c := range rest {
		var got []string
		for _, r := range matrixRoles {
			ok, code, body := m.rest(t, r, c.method, strings.ReplaceAll(c.path, "{role}", r), c.body)
			if ok {
				got = append(got, r)
				if code >= 500 {
					t.Errorf("%s %s as %s: %d %s", c.method, c.path, r, code, body)
				}
			}
		}
		if !sameSet(got, c.allowed) {
			t.Errorf("%s %s: allowed %v, want %v", c.method, c.path, got, c.allowed)
		}
	}
	// A message id of another tenant's topic read through a topic one may consume gives
	// nothing of the other topic (CVE-2021-41571).
	oc := m.f.client(t, pulsar.ClientOptions{URL: m.f.brokerURL, Authentication: pulsar.NewAuthenticationToken(m.tokens["root"])})
	op, err := oc.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://other/ns/private"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	otherID, err := op.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("other tenant's data")})
	if err != nil {
		t.Fatal(err)
	}
	op.Close()
	if otherID.LedgerID() == led {
		t.Fatal("both topics in one ledger: the test proves nothing")
	}
	_, code, body := m.rest(t, "consumer", "GET", fmt.Sprintf("%s/ledger/%d/entry/%d", t0, otherID.LedgerID(), otherID.EntryID()), "")
	if code == 200 || strings.Contains(body, "other tenant") {
		t.Fatalf("another tenant's message through acme's topic: %d %s", code, body)
	}
	t.Run("SubscriptionAuthModePrefix", m.subscriptionAuthPrefix)
}

// subscriptionAuthPrefix: with subscriptionAuthMode Prefix on acme/app (set by its tenant
// admin over REST), the consume-only role subscribes with the official client only to
// subscriptions named consumer-..., is refused others with AuthorizationError (binary and
// REST), and neither the superuser nor the tenant's admin is bound by it.
func (m *matrix) subscriptionAuthPrefix(t *testing.T) {
	const path = "/admin/v2/namespaces/acme/app/subscriptionAuthMode"
	mode := func() string {
		t.Helper()
		ok, code, body := m.rest(t, "acme-admin", "GET", path, "")
		if !ok || code != 200 {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		return strings.TrimSpace(body)
	}
	if got := mode(); got != `"None"` {
		t.Fatalf("default subscriptionAuthMode %s", got)
	}
	if ok, code, _ := m.rest(t, "consumer", "POST", path, `"Prefix"`); ok {
		t.Fatalf("the consume-only role set subscriptionAuthMode: %d", code)
	}
	if _, code, body := m.rest(t, "acme-admin", "POST", path, `"Prefix"`); code >= 300 {
		t.Fatalf("POST %s: %d %s", path, code, body)
	}
	if _, code, _ := m.rest(t, "acme-admin", "POST", path, `"Suffix"`); code != 400 {
		t.Fatalf("subscriptionAuthMode Suffix: %d, want 400", code)
	}
	if got := mode(); got != `"Prefix"` {
		t.Fatalf("subscriptionAuthMode %s after setting Prefix", got)
	}
	defer m.rest(t, "acme-admin", "POST", path, `"None"`)

	topic := "persistent://acme/app/prefixed"
	subscribe := func(role, sub string) error {
		c := m.f.client(t, pulsar.ClientOptions{URL: m.f.brokerURL, Authentication: pulsar.NewAuthenticationToken(m.tokens[role]),
			OperationTimeout: 5 * time.Second})
		cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub})
		if err == nil {
			cons.Close()
		}
		return err
	}
	// Permissions are read through a cache (a couple of seconds): wait until the mode bites.
	deadline := time.Now().Add(time.Minute)
	for err := subscribe("consumer", "orders"); err == nil; err = subscribe("consumer", "orders") {
		if time.Now().After(deadline) {
			t.Fatal("subscriptionAuthMode Prefix never refused subscription orders to role consumer")
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, c := range []struct {
		role, sub string
		ok        bool
	}{
		{"consumer", "consumer-orders", true},
		{"consumer", "orders", false},
		{"consumer", "consumerorders", false}, // the prefix is "<role>-"
		{"consumer", "acme-admin-orders", false},
		{"root", "orders", true},
		{"acme-admin", "orders", true}, // tenant admins are not bound, as in Pulsar
	} {
		err := subscribe(c.role, c.sub)
		if c.ok != (err == nil) {
			t.Errorf("%s subscribing %q: want ok=%v, got %v", c.role, c.sub, c.ok, err)
		}
		if err != nil && !strings.Contains(err.Error(), "AuthorizationError") {
			t.Errorf("%s subscribing %q: %v, want AuthorizationError", c.role, c.sub, err)
		}
	}
	sub := "/admin/v2/persistent/acme/app/prefixed/subscription/"
	if ok, code, _ := m.rest(t, "consumer", "PUT", sub+"rest-sub", ""); ok {
		t.Errorf("REST subscription rest-sub for consumer: %d", code)
	}
	if ok, code, body := m.rest(t, "consumer", "PUT", sub+"consumer-rest", ""); !ok || code >= 300 {
		t.Errorf("REST subscription consumer-rest for consumer: %d %s", code, body)
	}
}
