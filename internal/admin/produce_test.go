package admin_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// restProduce posts body to the REST producer and decodes ProducerAcks.
func restProduce(t *testing.T, path, body string) (int, []string, string) {
	t.Helper()
	resp, err := http.Post("http://"+sa.HTTPAddr()+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var acks struct {
		Results []struct {
			MessageID string `json:"messageId"`
			ErrorCode int    `json:"errorCode"`
		} `json:"messagePublishResults"`
	}
	var ids []string
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &acks); err != nil {
			t.Fatalf("ProducerAcks: %v: %s", err, raw)
		}
		for _, r := range acks.Results {
			if r.ErrorCode != 0 {
				t.Fatalf("errorCode %d in %s", r.ErrorCode, raw)
			}
			ids = append(ids, r.MessageID)
		}
	}
	return resp.StatusCode, ids, string(raw)
}

func createTopic(t *testing.T, topic string, partitions int) {
	t.Helper()
	path, body := "/admin/v2/persistent/public/default/"+topic, ""
	if partitions > 0 {
		path, body = path+"/partitions", fmt.Sprint(partitions)
	}
	req, _ := http.NewRequest(http.MethodPut, "http://"+sa.HTTPAddr()+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("create %s: %s", topic, resp.Status)
	}
}

// TestRESTProduce: messages posted to /topics/... (Pulsar's REST producer) reach a Go
// client consumer with their keys, properties and event times, and the answer's message
// ids are where they were stored.
func TestRESTProduce(t *testing.T) {
	createTopic(t, "rest-plain", 0)
	cons, err := pulsarClient(t).Subscribe(pulsar.ConsumerOptions{Topic: "persistent://public/default/rest-plain",
		SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	status, ids, raw := restProduce(t, "/topics/persistent/public/default/rest-plain", `{"producerName":"rest-test","messages":[
		{"key":"k1","payload":"hello","properties":{"a":"1"},"eventTime":1603045262772,"sequenceId":1},
		{"key":"k2","payload":"world","eventTime":"1603045262773","sequenceId":2}]}`)
	if status != http.StatusOK || len(ids) != 2 {
		t.Fatalf("status %d: %s", status, raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, want := range []struct{ key, payload string }{{"k1", "hello"}, {"k2", "world"}} {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Key() != want.key || string(m.Payload()) != want.payload || m.ProducerName() != "rest-test" {
			t.Fatalf("message %d: key %q payload %q producer %q", i, m.Key(), m.Payload(), m.ProducerName())
		}
		if got := m.EventTime().UnixMilli(); got != 1603045262772+int64(i) {
			t.Fatalf("message %d: event time %d", i, got)
		}
		if i == 0 && m.Properties()["a"] != "1" {
			t.Fatalf("properties %v", m.Properties())
		}
		id := fmt.Sprintf("%d:%d:-1", m.ID().LedgerID(), m.ID().EntryID())
		if ids[i] != id {
			t.Fatalf("answer says %s, the consumer got %s", ids[i], id)
		}
	}
	// Reading it back by id: the metadata in Pulsar's peek headers.
	resp, err := http.Get(fmt.Sprintf("http://%s/admin/v2/persistent/public/default/rest-plain/ledger/%s/entry/%s",
		sa.HTTPAddr(), strings.Split(ids[0], ":")[0], strings.Split(ids[0], ":")[1]))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if h.Get("X-Pulsar-partition-key") != "k1" || h.Get("X-Pulsar-producer-name") != "rest-test" ||
		h.Get("X-Pulsar-sequence-id") != "1" || h.Get("X-Pulsar-event-time") != "2020-10-18T18:21:02.772Z" {
		t.Fatalf("headers %v", h)
	}
}

// TestRESTProducePartitioned: the partition in the path is the one written; without one,
// messages of a key go to one partition and every message arrives.
func TestRESTProducePartitioned(t *testing.T) {
	createTopic(t, "rest-parts", 3)
	cons, err := pulsarClient(t).Subscribe(pulsar.ConsumerOptions{Topic: "persistent://public/default/rest-parts",
		SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	status, ids, raw := restProduce(t, "/topics/persistent/public/default/rest-parts/partitions/1", `{"messages":[{"payload":"p1"}]}`)
	if status != http.StatusOK || len(ids) != 1 || !strings.HasSuffix(ids[0], ":1") {
		t.Fatalf("status %d: %s", status, raw)
	}
	var msgs []string
	for i := range 9 {
		msgs = append(msgs, fmt.Sprintf(`{"key":"key-%d","payload":"m%d"}`, i%3, i))
	}
	status, ids, raw = restProduce(t, "/topics/persistent/public/default/rest-parts", `{"messages":[`+strings.Join(msgs, ",")+`]}`)
	if status != http.StatusOK || len(ids) != 9 {
		t.Fatalf("status %d: %s", status, raw)
	}
	for i := range 9 { // the same key, the same partition
		if a, b := ids[i][strings.LastIndex(ids[i], ":"):], ids[i%3][strings.LastIndex(ids[i%3], ":"):]; a != b {
			t.Fatalf("key-%d went to partitions %s and %s", i%3, a, b)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seen := map[string]string{}
	for range 10 {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen[string(m.Payload())] = m.Topic()
	}
	if len(seen) != 10 || !strings.HasSuffix(seen["p1"], "-partition-1") {
		t.Fatalf("received %v", seen)
	}
}

// TestRESTProduceSchemas: a JSON valueSchema registers the topic's schema; an Avro one
// encodes the JSON payload so an Avro consumer decodes it; a payload that does not fit is
// refused with nothing stored.
func TestRESTProduceSchemas(t *testing.T) {
	info := func(typ, def string) string {
		b, _ := json.Marshal(map[string]any{"name": "", "type": typ, "schema": base64.StdEncoding.EncodeToString([]byte(def)), "properties": map[string]string{}})
		s, _ := json.Marshal(string(b))
		return string(s)
	}
	const avroDef = `{"type":"record","name":"R","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}`
	createTopic(t, "rest-avro", 0)
	cons, err := pulsarClient(t).Subscribe(pulsar.ConsumerOptions{Topic: "persistent://public/default/rest-avro",
		SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
		Schema: pulsar.NewAvroSchema(avroDef, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	status, _, raw := restProduce(t, "/topics/persistent/public/default/rest-avro",
		`{"valueSchema":`+info("AVRO", avroDef)+`,"messages":[{"payload":"{\"id\":\"not a number\",\"name\":\"x\"}"}]}`)
	if status != http.StatusBadRequest {
		t.Fatalf("a payload that does not fit: status %d: %s", status, raw)
	}
	status, _, raw = restProduce(t, "/topics/persistent/public/default/rest-avro",
		`{"valueSchema":`+info("AVRO", avroDef)+`,"messages":[{"payload":"{\"id\":42,\"name\":\"magnetar\"}"}]}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := cons.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		ID   int64  `avro:"id"`
		Name string `avro:"name"`
	}
	if err := m.GetSchemaValue(&rec); err != nil || rec.ID != 42 || rec.Name != "magnetar" {
		t.Fatalf("decoded %+v, %v (payload %x)", rec, err, m.Payload())
	}

	createTopic(t, "rest-json", 0)
	status, _, raw = restProduce(t, "/topics/persistent/public/default/rest-json",
		`{"valueSchema":`+info("JSON", avroDef)+`,"messages":[{"payload":"{\"id\":1,\"name\":\"a\"}"}]}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, raw)
	}
	if code, body := get(t, "/admin/v2/schemas/public/default/rest-json/schema"); code != http.StatusOK || !strings.Contains(body, `"JSON"`) {
		t.Fatalf("schema after a JSON REST produce: %d %s", code, body)
	}
}

// TestRESTProduceBadInput: every malformed request is a 4xx naming the problem, and
// nothing is stored.
func TestRESTProduceBadInput(t *testing.T) {
	createTopic(t, "rest-bad", 2)
	for _, c := range []struct {
		path, body string
		status     int
	}{
		{"/topics/persistent/public/default/rest-missing", `{"messages":[{"payload":"x"}]}`, http.StatusNotFound},
		{"/topics/persistent/public/nope/rest-bad", `{"messages":[{"payload":"x"}]}`, http.StatusNotFound},
		{"/topics/persistent/public/default/rest-bad", `{"messages":[`, http.StatusBadRequest},
		{"/topics/persistent/public/default/rest-bad", `{"messages":[]}`, http.StatusBadRequest},
		{"/topics/persistent/public/default/rest-bad/partitions/7", `{"messages":[{"payload":"x"}]}`, http.StatusBadRequest},
		{"/topics/persistent/public/default/rest-bad/partitions/x", `{"messages":[{"payload":"x"}]}`, http.StatusBadRequest},
		{"/topics/persistent/public/default/rest-bad", `{"messages":[{"payload":"x","eventTime":"yesterday"}]}`, http.StatusBadRequest},
		{"/topics/persistent/public/default/rest-bad", `{"valueSchema":"{not json","messages":[{"payload":"x"}]}`, http.StatusBadRequest},
		{"/topics/persistent/public/default/rest-bad", `{"messages":[{"payload":"` + strings.Repeat("x", 6<<20) + `"}]}`, http.StatusBadRequest},
	} {
		resp, err := http.Post("http://"+sa.HTTPAddr()+c.path, "application/json", bytes.NewReader([]byte(c.body)))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(raw), "reason") {
			t.Errorf("POST %s %.40q: %d %s, want %d", c.path, c.body, resp.StatusCode, raw, c.status)
		}
	}
	for i := range 2 {
		if code, body := get(t, fmt.Sprintf("/admin/v2/persistent/public/default/rest-bad-partition-%d/stats", i)); code == http.StatusOK && !strings.Contains(body, `"msgInCounter":0`) {
			t.Fatalf("partition %d got messages: %s", i, body)
		}
	}
}

func get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + sa.HTTPAddr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
