package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

const (
	adminUserV1 = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"}]}`
	adminUserV2 = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"name","type":"string","default":""}]}`
	adminUserV3 = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"email","type":"string"}]}`
)

// TestSchemasWithPulsarAdmin drives the schema endpoints and the namespace schema policies
// with pulsaradmin v0.19.0, then a producer and consumer of the Go client on the same topic.
func TestSchemasWithPulsarAdmin(t *testing.T) {
	a := adminClient(t)
	if err := a.Namespaces().CreateNamespace("public/schemas"); err != nil {
		t.Fatal(err)
	}
	ns, _ := utils.GetNamespaceName("public/schemas")
	if st, err := a.Namespaces().GetSchemaCompatibilityStrategy(*ns); err != nil || st != utils.SchemaCompatibilityStrategyUndefined {
		t.Fatalf("default strategy = %v, %v", st, err)
	}
	if err := a.Namespaces().SetSchemaCompatibilityStrategy(*ns, utils.SchemaCompatibilityStrategyBackward); err != nil {
		t.Fatal(err)
	}
	if st, err := a.Namespaces().GetSchemaCompatibilityStrategy(*ns); err != nil || st != utils.SchemaCompatibilityStrategyBackward {
		t.Fatalf("strategy = %v, %v", st, err)
	}
	if ok, err := a.Namespaces().GetIsAllowAutoUpdateSchema(*ns); err != nil || !ok {
		t.Fatalf("isAllowAutoUpdateSchema = %v, %v", ok, err)
	}

	const topic = "persistent://public/schemas/users"
	s := a.Schemas()
	if _, err := s.GetSchemaInfo(topic); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("no schema yet: %v", err)
	}
	if err := s.CreateSchemaByPayload(topic, utils.PostSchemaPayload{SchemaType: "AVRO", Schema: adminUserV1, Properties: map[string]string{"owner": "me"}}); err != nil {
		t.Fatal(err)
	}
	info, err := s.GetSchemaInfoWithVersion(topic)
	if err != nil || info.Version != 0 || info.SchemaInfo.Type != "AVRO" || string(info.SchemaInfo.Schema) != adminUserV1 ||
		info.SchemaInfo.Properties["owner"] != "me" || info.SchemaInfo.Timestamp == 0 {
		t.Fatalf("GetSchemaInfoWithVersion = %+v %+v, %v", info, info.SchemaInfo, err)
	}
	c, err := s.TestCompatibilityWithPostSchemaPayload(topic, utils.PostSchemaPayload{SchemaType: "AVRO", Schema: adminUserV3})
	if err != nil || c.IsCompatibility || c.SchemaCompatibilityStrategy != utils.SchemaCompatibilityStrategyBackward {
		t.Fatalf("compatibility of v3 = %+v, %v", c, err)
	}
	c, err = s.TestCompatibilityWithSchemaInfo(topic, utils.SchemaInfo{Type: "AVRO", Schema: []byte(adminUserV2)})
	if err != nil || !c.IsCompatibility {
		t.Fatalf("compatibility of v2 = %+v, %v", c, err)
	}
	if err := s.CreateSchemaByPayload(topic, utils.PostSchemaPayload{SchemaType: "AVRO", Schema: adminUserV3}); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("incompatible upload: %v", err)
	}
	if err := s.CreateSchemaBySchemaInfo(topic, utils.SchemaInfo{Type: "AVRO", Schema: []byte(adminUserV2)}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSchemaByPayload(topic, utils.PostSchemaPayload{SchemaType: "AVRO", Schema: `{"type":`}); err == nil || !strings.Contains(err.Error(), "422") {
		t.Fatalf("invalid upload: %v", err)
	}
	all, err := s.GetAllSchemas(topic)
	if err != nil || len(all) != 2 || all[1].Version != 1 || string(all[1].SchemaInfo.Schema) != adminUserV2 {
		t.Fatalf("GetAllSchemas = %v, %v", all, err)
	}
	if v0, err := s.GetSchemaInfoByVersion(topic, 0); err != nil || string(v0.Schema) != adminUserV1 {
		t.Fatalf("version 0 = %+v, %v", v0, err)
	}
	if v, err := s.GetVersionByPayload(topic, utils.PostSchemaPayload{SchemaType: "AVRO", Schema: adminUserV2}); err != nil || v != 1 {
		t.Fatalf("GetVersionByPayload = %d, %v", v, err)
	}
	if _, err := s.GetVersionBySchemaInfo(topic, utils.SchemaInfo{Type: "AVRO", Schema: []byte(adminUserV3)}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("version of an unregistered schema: %v", err)
	}

	// The Go client with the same strategy: a producer whose schema can read v2 (the
	// client re-serialises the definition, so it may become a new version) and a
	// consumer decoding what it sent.
	client := pulsarClient(t)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(adminUserV2, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Schema: pulsar.NewAvroSchema(adminUserV2, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	type user struct {
		ID   int64  `avro:"id"`
		Name string `avro:"name"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Value: &user{ID: 5, Name: "eve"}}); err != nil {
		t.Fatal(err)
	}
	m, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var u user
	if err := m.GetSchemaValue(&u); err != nil || u != (user{5, "eve"}) {
		t.Fatalf("decoded %+v, %v", u, err)
	}
	if _, err := s.GetSchemaInfo(topic + "-partition-0"); err != nil {
		t.Fatalf("schema through a partition name: %v", err)
	}
	// A client with an http:// service URL reads the schema by version over REST.
	httpClient, err := pulsar.NewClient(pulsar.ClientOptions{URL: "http://" + sa.HTTPAddr(), OperationTimeout: 30 * time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer httpClient.Close()
	hc, err := httpClient.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "over-http",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	hm, err := hc.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Without a schema of its own the consumer decodes with the one its message's
	// version names, fetched through the HTTP lookup service.
	var hu user
	if err := hm.GetSchemaValue(&hu); err != nil || hu != (user{5, "eve"}) {
		t.Fatalf("decoded over http: %+v, %v", hu, err)
	}

	if err := s.DeleteSchema(topic); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSchemaInfo(topic); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("after delete: %v", err)
	}
	// After a delete any schema may start the history again; versions go on.
	if err := s.CreateSchemaByPayload(topic, utils.PostSchemaPayload{SchemaType: "STRING"}); err != nil {
		t.Fatal(err)
	}
	if info, err := s.GetSchemaInfoWithVersion(topic); err != nil || info.SchemaInfo.Type != "STRING" || info.Version < 3 {
		t.Fatalf("after re-create: %+v, %v", info, err)
	}
	if err := s.ForceDeleteSchema(topic); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetAllSchemas(topic); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("after force delete: %v", err)
	}
	if _, err := s.GetSchemaInfo("persistent://public/nosuchns/t"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("unknown namespace: %v", err)
	}

	if err := a.Namespaces().SetIsAllowAutoUpdateSchema(*ns, false); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Namespaces().GetIsAllowAutoUpdateSchema(*ns); err != nil || ok {
		t.Fatalf("isAllowAutoUpdateSchema after set = %v, %v", ok, err)
	}
	if err := a.Namespaces().SetSchemaValidationEnforced(*ns, true); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Namespaces().GetSchemaValidationEnforced(*ns); err != nil || !ok {
		t.Fatalf("schemaValidationEnforced = %v, %v", ok, err)
	}
	if err := a.Namespaces().SetSchemaAutoUpdateCompatibilityStrategy(*ns, utils.BackwardTransitive); err != nil {
		t.Fatal(err)
	}
	if st, err := a.Namespaces().GetSchemaAutoUpdateCompatibilityStrategy(*ns); err != nil || st != utils.BackwardTransitive {
		t.Fatalf("auto update strategy = %v, %v", st, err)
	}
}

// TestSchemasUpstreamFlow follows pulsaradmin's own schema tests (STRING schema on a short
// topic name in public/default, FULL by default) so their expectations hold here.
func TestSchemasUpstreamFlow(t *testing.T) {
	s := adminClient(t).Schemas()
	topic := "my-topic-upstream-flow"
	info := utils.SchemaInfo{Schema: []byte(""), Type: "STRING"}
	if err := s.CreateSchemaBySchemaInfo(topic, info); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSchemaInfo(topic)
	if err != nil || got.Type != "STRING" || got.Timestamp == 0 {
		t.Fatalf("GetSchemaInfo = %+v, %v", got, err)
	}
	if v, err := s.GetVersionBySchemaInfo(topic, info); err != nil || v != 0 {
		t.Fatalf("GetVersionBySchemaInfo = %d, %v", v, err)
	}
	c, err := s.TestCompatibilityWithSchemaInfo(topic, info)
	if err != nil || !c.IsCompatibility || c.SchemaCompatibilityStrategy != utils.SchemaCompatibilityStrategyFull {
		t.Fatalf("compatibility = %+v, %v", c, err)
	}
	if infos, err := s.GetAllSchemas(topic); err != nil || len(infos) != 1 {
		t.Fatalf("GetAllSchemas = %v, %v", infos, err)
	}
	if err := s.ForceDeleteSchema(topic); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSchemaInfo(topic); err == nil {
		t.Fatal("schema still there after force delete")
	}
}

// TestKeyValueSchemaREST: KEY_VALUE schemas go up and come back in Pulsar's
// {"key": ..., "value": ...} form, and evolve by their parts.
func TestKeyValueSchemaREST(t *testing.T) {
	s := adminClient(t).Schemas()
	const topic = "persistent://public/default/kv-schema"
	props := map[string]string{"key.schema.type": "STRING", "value.schema.type": "AVRO", "kv.encoding.type": "INLINE"}
	body := func(def string) string { return `{"key":"","value":` + def + `}` }
	if err := s.CreateSchemaByPayload(topic, utils.PostSchemaPayload{SchemaType: "KEY_VALUE", Schema: body(adminUserV1), Properties: props}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + sa.HTTPAddr() + "/admin/v2/schemas/public/default/kv-schema/schema")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var got struct {
		Type string `json:"type"`
		Data string `json:"data"`
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Type != "KEY_VALUE" || got.Data != body(adminUserV1) {
		t.Fatalf("GET = %s, %v", b, err)
	}
	// FULL (the default): the value gains a defaulted field, accepted; one without default, refused.
	if err := s.CreateSchemaByPayload(topic, utils.PostSchemaPayload{SchemaType: "KEY_VALUE", Schema: body(adminUserV2), Properties: props}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSchemaByPayload(topic, utils.PostSchemaPayload{SchemaType: "KEY_VALUE", Schema: body(adminUserV3), Properties: props}); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("incompatible value: %v", err)
	}
	if err := s.CreateSchemaByPayload(topic, utils.PostSchemaPayload{SchemaType: "KEY_VALUE", Schema: "not json", Properties: props}); err == nil || !strings.Contains(err.Error(), "422") {
		t.Fatalf("bad KEY_VALUE body: %v", err)
	}
}
