package admin_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestEveryEndpointGroup is the acceptance walk of issue #8 with pulsaradmin: clusters,
// tenants, namespaces with each policy, topics, topic permissions and policies,
// subscriptions, brokers, schemas and lookup, all against the shared standalone, in a tenant
// of its own that it removes at the end.
func TestEveryEndpointGroup(t *testing.T) {
	a := adminClient(t)

	// Clusters.
	cl, err := a.Clusters().List()
	must(t, "clusters list", err)
	if !slices.Contains(cl, "standalone") {
		t.Fatalf("clusters %v", cl)
	}
	own, err := a.Clusters().Get("standalone")
	must(t, "cluster get", err)
	if own.BrokerServiceURL != "pulsar://"+sa.BrokerAddr() || own.ServiceURL != "http://"+sa.HTTPAddr() {
		t.Fatalf("own cluster %+v", own)
	}
	if _, err := a.Clusters().Get("nope"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("missing cluster: %v", err)
	}
	east := utils.ClusterData{Name: "grp-east", ServiceURL: "http://east:8080", BrokerServiceURL: "pulsar://east:6650"}
	must(t, "cluster create", a.Clusters().Create(east))
	if err := a.Clusters().Create(east); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("duplicate cluster: %v", err)
	}
	east.ServiceURL = "http://east2:8080"
	must(t, "cluster update", a.Clusters().Update(east))
	if c, err := a.Clusters().Get("grp-east"); err != nil || c.ServiceURL != "http://east2:8080" || c.BrokerServiceURL != "pulsar://east:6650" {
		t.Fatalf("updated cluster %+v %v", c, err)
	}
	must(t, "peers", a.Clusters().UpdatePeerClusters("grp-east", []string{"standalone"}))
	if p, err := a.Clusters().GetPeerClusters("grp-east"); err != nil || !slices.Equal(p, []string{"standalone"}) {
		t.Fatalf("peers %v %v", p, err)
	}
	if err := a.Clusters().UpdatePeerClusters("grp-east", []string{"nope"}); err == nil || !strings.Contains(err.Error(), "412") {
		t.Fatalf("unknown peer: %v", err)
	}
	if err := a.Clusters().Delete("standalone"); err == nil || !strings.Contains(err.Error(), "412") {
		t.Fatalf("delete own cluster: %v", err)
	}
	must(t, "cluster delete", a.Clusters().Delete("grp-east"))
	if err := a.Clusters().Update(east); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("update deleted cluster: %v", err)
	}

	// Tenants.
	td := utils.TenantData{Name: "grp", AdminRoles: []string{"ops"}, AllowedClusters: []string{"standalone"}}
	must(t, "tenant create", a.Tenants().Create(td))
	if err := a.Tenants().Create(td); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("duplicate tenant: %v", err)
	}
	td.AdminRoles = []string{"ops", "dev"}
	must(t, "tenant update", a.Tenants().Update(td))
	got, err := a.Tenants().Get("grp")
	must(t, "tenant get", err)
	if len(got.AdminRoles) != 2 || !slices.Equal(got.AllowedClusters, []string{"standalone"}) {
		t.Fatalf("tenant %+v", got)
	}
	tl, err := a.Tenants().List()
	must(t, "tenants list", err)
	if !slices.Contains(tl, "grp") {
		t.Fatalf("tenants %v", tl)
	}

	// Namespaces and each policy.
	const ns = "grp/ns"
	nsn, err := utils.GetNamespaceName(ns)
	must(t, "ns name", err)
	must(t, "namespace create", a.Namespaces().CreateNamespace(ns))
	if err := a.Namespaces().CreateNamespace(ns); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("duplicate namespace: %v", err)
	}
	// pulsarctl namespaces create sends pulsaradmin's full default Policies object.
	must(t, "namespace create with policies", a.Namespaces().CreateNsWithPolices("grp/ctl", *utils.NewDefaultPolicies()))
	if p, err := a.Namespaces().GetPolicies("grp/ctl"); err != nil || p.SchemaAutoUpdateCompatibilityStrategy != utils.Full {
		t.Fatalf("policies of grp/ctl %+v %v", p, err)
	}
	must(t, "namespace with bundles", a.Namespaces().CreateNsWithNumBundles("grp/b8", 8))
	getJSON(t, "/admin/v2/namespaces/grp/b8/bundles", &struct{}{})
	must(t, "delete grp/ctl", a.Namespaces().DeleteNamespace("grp/ctl"))
	must(t, "delete grp/b8", a.Namespaces().DeleteNamespace("grp/b8"))
	nl, err := a.Namespaces().GetNamespaces("grp")
	must(t, "namespaces list", err)
	if !slices.Equal(nl, []string{ns}) {
		t.Fatalf("namespaces %v", nl)
	}
	must(t, "set retention", a.Namespaces().SetRetention(ns, utils.NewRetentionPolicies(60, 100)))
	if r, err := a.Namespaces().GetRetention(ns); err != nil || r.RetentionTimeInMinutes != 60 || r.RetentionSizeInMB != 100 {
		t.Fatalf("retention %+v %v", r, err)
	}
	must(t, "set ttl", a.Namespaces().SetNamespaceMessageTTL(ns, 90))
	if ttl, err := a.Namespaces().GetNamespaceMessageTTL(ns); err != nil || ttl != 90 {
		t.Fatalf("ttl %d %v", ttl, err)
	}
	must(t, "set backlog quota", a.Namespaces().SetBacklogQuota(ns, utils.NewBacklogQuota(1<<30, 0, utils.ProducerRequestHold), utils.DestinationStorage))
	if m, err := a.Namespaces().GetBacklogQuotaMap(ns); err != nil || m[utils.DestinationStorage].LimitSize != 1<<30 {
		t.Fatalf("backlog quotas %+v %v", m, err)
	}
	must(t, "remove backlog quota", a.Namespaces().RemoveBacklogQuota(ns))
	if m, err := a.Namespaces().GetBacklogQuotaMap(ns); err != nil || len(m) != 0 {
		t.Fatalf("backlog quotas after remove %+v %v", m, err)
	}
	must(t, "set dedup", a.Namespaces().SetDeduplicationStatus(ns, true))
	parts := 2
	must(t, "set auto creation", a.Namespaces().SetTopicAutoCreation(*nsn, utils.TopicAutoCreationConfig{Allow: true, Type: utils.Partitioned, Partitions: &parts}))
	if c, err := a.Namespaces().GetTopicAutoCreation(*nsn); err != nil || c.Type != utils.Partitioned || c.Partitions == nil || *c.Partitions != 2 {
		t.Fatalf("auto creation %+v %v", c, err)
	}
	must(t, "remove auto creation", a.Namespaces().RemoveTopicAutoCreation(*nsn))
	must(t, "set schema compat", a.Namespaces().SetSchemaCompatibilityStrategy(*nsn, utils.SchemaCompatibilityStrategyForward))
	if st, err := a.Namespaces().GetSchemaCompatibilityStrategy(*nsn); err != nil || st != utils.SchemaCompatibilityStrategyForward {
		t.Fatalf("schema compat %v %v", st, err)
	}
	must(t, "set persistence", a.Namespaces().SetPersistence(ns, utils.NewPersistencePolicies(1, 1, 1, 0)))
	if p, err := a.Namespaces().GetPersistence(ns); err != nil || p.BookkeeperEnsemble != 1 {
		t.Fatalf("persistence %+v %v", p, err)
	}
	produceAct, _ := utils.ParseAuthAction("produce")
	consumeAct, _ := utils.ParseAuthAction("consume")
	must(t, "grant ns", a.Namespaces().GrantNamespacePermission(*nsn, "app", []utils.AuthAction{produceAct, consumeAct}))
	if perms, err := a.Namespaces().GetNamespacePermissions(*nsn); err != nil || len(perms["app"]) != 2 {
		t.Fatalf("ns permissions %v %v", perms, err)
	}
	if rc, err := a.Namespaces().GetNamespaceReplicationClusters(ns); err != nil || !slices.Equal(rc, []string{"standalone"}) {
		t.Fatalf("replication clusters %v %v", rc, err)
	}
	must(t, "set replication", a.Namespaces().SetNamespaceReplicationClusters(ns, []string{"standalone"}))
	if err := a.Namespaces().SetNamespaceReplicationClusters(ns, []string{"nope"}); err == nil || !strings.Contains(err.Error(), "412") {
		t.Fatalf("unknown replication cluster: %v", err)
	}
	must(t, "grant sub", a.Namespaces().GrantSubPermission(*nsn, "orders", []string{"app", "audit"}))
	if sp, err := a.Namespaces().GetSubPermissions(*nsn); err != nil || !slices.Equal(sp["orders"], []string{"app", "audit"}) {
		t.Fatalf("subscription permissions %v %v", sp, err)
	}
	must(t, "revoke sub", a.Namespaces().RevokeSubPermission(*nsn, "orders", "app"))
	if err := a.Namespaces().RevokeSubPermission(*nsn, "orders", "app"); err == nil || !strings.Contains(err.Error(), "412") {
		t.Fatalf("revoke twice: %v", err)
	}
	if sp, _ := a.Namespaces().GetSubPermissions(*nsn); !slices.Equal(sp["orders"], []string{"audit"}) {
		t.Fatalf("after revoke %v", sp)
	}
	must(t, "max producers", a.Namespaces().SetMaxProducersPerTopic(*nsn, 7))
	must(t, "ns properties", a.Namespaces().UpdateProperties(*nsn, map[string]string{"team": "core"}))
	pol, err := a.Namespaces().GetPolicies(ns)
	must(t, "policies", err)
	if pol.DeduplicationEnabled == nil || !*pol.DeduplicationEnabled || pol.MessageTTLInSeconds == nil || *pol.MessageTTLInSeconds != 90 ||
		pol.MaxProducersPerTopic == nil || *pol.MaxProducersPerTopic != 7 || pol.Persistence == nil {
		t.Fatalf("policies %+v", pol)
	}
	var bundles struct {
		Boundaries []string `json:"boundaries"`
		NumBundles int      `json:"numBundles"`
	}
	getJSON(t, "/admin/v2/namespaces/"+ns+"/bundles", &bundles)
	if bundles.NumBundles < 1 || len(bundles.Boundaries) != bundles.NumBundles+1 {
		t.Fatalf("bundles %+v", bundles)
	}

	// Topics, topic permissions and topic policies.
	tn := topicName(t, "persistent://grp/ns/t1")
	must(t, "topic create", a.Topics().Create(*tn, 0))
	topics, err := a.Namespaces().GetTopics(ns)
	must(t, "ns topics", err)
	if !slices.Contains(topics, tn.String()) {
		t.Fatalf("ns topics %v", topics)
	}
	must(t, "grant topic", a.Topics().GrantPermission(*tn, "reader", []utils.AuthAction{consumeAct}))
	perms, err := a.Topics().GetPermissions(*tn)
	must(t, "topic permissions", err)
	if len(perms["reader"]) != 1 || len(perms["app"]) != 2 {
		t.Fatalf("topic permissions (own + namespace) %v", perms)
	}
	must(t, "revoke topic", a.Topics().RevokePermission(*tn, "reader"))
	if err := a.Topics().RevokePermission(*tn, "app"); err == nil || !strings.Contains(err.Error(), "412") {
		t.Fatalf("revoke a namespace-level role on a topic: %v", err)
	}
	if perms, _ := a.Topics().GetPermissions(*tn); perms["reader"] != nil {
		t.Fatalf("after revoke %v", perms)
	}
	must(t, "revoke ns", a.Namespaces().RevokeNamespacePermission(*nsn, "app"))
	must(t, "topic ttl", a.Topics().SetMessageTTL(*tn, 30))
	if ttl, err := a.Topics().GetMessageTTL(*tn); err != nil || ttl != 30 {
		t.Fatalf("topic ttl %d %v", ttl, err)
	}

	pt := topicName(t, "persistent://grp/ns/p")
	must(t, "partitioned create", a.Topics().Create(*pt, 2))
	var ps map[string]json.RawMessage
	getJSON(t, "/admin/v2/persistent/grp/ns/p/partitioned-stats", &ps)
	if string(ps["partitions"]) != "{}" || string(ps["metadata"]) != `{"partitions":2}` {
		t.Fatalf("partitioned stats without perPartition: %s %s", ps["partitions"], ps["metadata"])
	}
	must(t, "partitioned delete", a.Topics().Delete(*pt, true, false))

	// Subscriptions.
	must(t, "sub create", a.Subscriptions().Create(*tn, "s", utils.Earliest))
	subs, err := a.Subscriptions().List(*tn)
	must(t, "subs", err)
	if !slices.Equal(subs, []string{"s"}) {
		t.Fatalf("subs %v", subs)
	}
	must(t, "skip all", a.Subscriptions().ClearBacklog(*tn, "s"))
	must(t, "sub delete", a.Subscriptions().Delete(*tn, "s"))
	must(t, "sub u", a.Subscriptions().Create(*tn, "u", utils.Latest))
	must(t, "ns unsubscribe", a.Namespaces().UnsubscribeNamespace(*nsn, "u"))
	if subs, err := a.Subscriptions().List(*tn); err != nil || len(subs) != 0 {
		t.Fatalf("subs after namespace unsubscribe %v %v", subs, err)
	}

	// Schemas.
	const avro = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`
	must(t, "schema post", a.Schemas().CreateSchemaByPayload(tn.String(), utils.PostSchemaPayload{SchemaType: "AVRO", Schema: avro}))
	if si, err := a.Schemas().GetSchemaInfo(tn.String()); err != nil || si.Type != "AVRO" {
		t.Fatalf("schema %+v %v", si, err)
	}
	must(t, "schema delete", a.Schemas().DeleteSchema(tn.String()))

	// Brokers and lookup.
	bs, err := a.Brokers().GetListActiveBrokers()
	must(t, "brokers", err)
	if len(bs) != 1 {
		t.Fatalf("brokers %v", bs)
	}
	if l, err := a.Brokers().GetLeaderBroker(); err != nil || l.ServiceURL == "" {
		t.Fatalf("leader %+v %v", l, err)
	}
	must(t, "health", a.Brokers().HealthCheck())
	if rc, err := a.Brokers().GetRuntimeConfigurations(); err != nil || rc["clusterName"] != "standalone" {
		t.Fatalf("runtime config %v %v", rc, err)
	}
	_, err = a.Brokers().GetInternalConfigurationData()
	must(t, "internal config", err)
	if lk, err := a.Topics().Lookup(*tn); err != nil || lk.BrokerURL != "pulsar://"+sa.BrokerAddr() {
		t.Fatalf("lookup %+v %v", lk, err)
	}
	br, err := a.Topics().GetBundleRange(*tn)
	must(t, "bundle range", err)
	lo, hi, ok := strings.Cut(br, "_")
	if !ok || !slices.Contains(bundles.Boundaries, lo) || !slices.Contains(bundles.Boundaries, hi) {
		t.Fatalf("bundle range %q not within %v", br, bundles.Boundaries)
	}

	// Clean up: a namespace with topics and a tenant with namespaces refuse deletion (409).
	if err := a.Namespaces().DeleteNamespace(ns); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("delete namespace with topics: %v", err)
	}
	if err := a.Tenants().Delete("grp"); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("delete tenant with namespaces: %v", err)
	}
	must(t, "topic delete", a.Topics().Delete(*tn, true, true))
	must(t, "namespace delete", a.Namespaces().DeleteNamespace(ns))
	must(t, "tenant delete", a.Tenants().Delete("grp"))
	if _, err := a.Tenants().Get("grp"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("deleted tenant: %v", err)
	}
}

// getJSON GETs path from the standalone and decodes the 200 answer into v.
func getJSON(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := http.Get("http://" + sa.HTTPAddr() + path)
	must(t, path, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	must(t, "decode "+path, json.Unmarshal(b, v))
}

// TestResetPartitionedCursorByID resets one partition of a partitioned topic to a message
// id: only the partition named by the id's partitionIndex moves.
func TestResetPartitionedCursorByID(t *testing.T) {
	a := adminClient(t)
	name := "persistent://public/default/admin-reset-part"
	tn := topicName(t, name)
	must(t, "create", a.Topics().Create(*tn, 2))
	must(t, "sub", a.Subscriptions().Create(*tn, "s", utils.Earliest))
	ids := produce(t, pulsarClient(t), name, 10) // round-robin over both partitions
	must(t, "skip all", a.Subscriptions().ClearBacklog(*tn, "s"))
	var target pulsar.MessageID
	for _, id := range ids {
		if id.PartitionIdx() == 1 {
			target = id // the last message of partition 1
		}
	}
	if target == nil {
		t.Fatal("no message went to partition 1")
	}
	mid, err := utils.ParseMessageID(fmt.Sprintf("%d:%d:1", target.LedgerID(), target.EntryID()))
	must(t, "parse", err)
	must(t, "reset partition 1", a.Subscriptions().ResetCursorToMessageID(*tn, "s", *mid))
	st, err := a.Topics().GetPartitionedStats(*tn, true)
	must(t, "stats", err)
	if b0, b1 := st.Partitions[name+"-partition-0"].Subscriptions["s"].MsgBacklog, st.Partitions[name+"-partition-1"].Subscriptions["s"].MsgBacklog; b0 != 0 || b1 != 1 {
		t.Fatalf("backlogs after reset of partition 1: %d %d, want 0 1", b0, b1)
	}
	mid.PartitionIndex = -1
	if err := a.Subscriptions().ResetCursorToMessageID(*tn, "s", *mid); err == nil || !strings.Contains(err.Error(), "412") {
		t.Fatalf("reset without partition index: %v", err)
	}
	must(t, "delete", a.Topics().Delete(*tn, true, false))
}

// TestNamespaceAutoTopicCreationOverride checks that a namespace's autoTopicCreation
// override, set through REST, decides what a client's first use of a new topic creates.
func TestNamespaceAutoTopicCreationOverride(t *testing.T) {
	a := adminClient(t)
	const ns = "public/autocreate"
	nsn, err := utils.GetNamespaceName(ns)
	must(t, "ns name", err)
	must(t, "create ns", a.Namespaces().CreateNamespace(ns))
	c := pulsarClient(t)

	must(t, "forbid", a.Namespaces().SetTopicAutoCreation(*nsn, utils.TopicAutoCreationConfig{Allow: false, Type: utils.NonPartitioned}))
	if p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://" + ns + "/forbidden"}); err == nil {
		p.Close()
		t.Fatal("producer on a new topic while the namespace forbids auto-creation")
	}

	parts := 3
	must(t, "partitioned", a.Namespaces().SetTopicAutoCreation(*nsn, utils.TopicAutoCreationConfig{Allow: true, Type: utils.Partitioned, Partitions: &parts}))
	produce(t, c, "persistent://"+ns+"/auto-part", 3)
	md, err := a.Topics().GetMetadata(*topicName(t, "persistent://"+ns+"/auto-part"))
	must(t, "metadata", err)
	if md.Partitions != 3 {
		t.Fatalf("auto-created topic has %d partitions, want 3", md.Partitions)
	}

	must(t, "remove override", a.Namespaces().RemoveTopicAutoCreation(*nsn))
	produce(t, c, "persistent://"+ns+"/auto-plain", 1) // the broker's default: non-partitioned
	if md, err := a.Topics().GetMetadata(*topicName(t, "persistent://"+ns+"/auto-plain")); err != nil || md.Partitions != 0 {
		t.Fatalf("default auto-creation: %+v %v", md, err)
	}
	must(t, "delete part", a.Topics().Delete(*topicName(t, "persistent://"+ns+"/auto-part"), true, false))
	must(t, "delete plain", a.Topics().Delete(*topicName(t, "persistent://"+ns+"/auto-plain"), true, true))
	must(t, "delete ns", a.Namespaces().DeleteNamespace(ns))
}
