package regression

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Regression tests for failures pulsar-client-go's own suites (./pulsar and pulsaradmin)
// found; each names the client test. docs/compatibility.md "Failures and their causes".

// rest sends a request to the shared standalone's admin API and returns the status and body.
func rest(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	_, admin := server(t)
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(longCtx(t), method, admin+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// restJSON is rest for a 2xx JSON answer decoded into v.
func restJSON(t *testing.T, method, path, body string, v any) {
	t.Helper()
	code, b := rest(t, method, path, body)
	if code/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// statsPath is the admin path of a persistent topic's stats.
func statsPath(topic string) string {
	return "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://") + "/stats"
}

type topicStats struct {
	TopicCreationTimeStamp int64 `json:"topicCreationTimeStamp"`
	LastPublishTimeStamp   int64 `json:"lastPublishTimeStamp"`
	Publishers             []struct {
		Metadata map[string]string `json:"metadata"`
	} `json:"publishers"`
	Subscriptions map[string]struct {
		Consumers []struct {
			Metadata                  map[string]string `json:"metadata"`
			ClientVersion             string            `json:"clientVersion"`
			LastConsumedFlowTimestamp int64             `json:"lastConsumedFlowTimestamp"`
		} `json:"consumers"`
		ConsumersAfterMarkDeletePosition map[string]string `json:"consumersAfterMarkDeletePosition"`
		SubscriptionProperties           map[string]string `json:"subscriptionProperties"`
	} `json:"subscriptions"`
}

// TestNamespaceTopicsWebURL: the Go client's HTTP lookup lists a namespace's topics with
// GET .../topics?mode=PERSISTENT, but builds the URL from url.Parse(path).Path, so the mode
// never arrives; without one Pulsar lists the persistent topics only.
func TestNamespaceTopicsWebURL(t *testing.T) {
	c := client(t)
	persistent := topicName(t)
	np := "non-persistent://public/default/" + strings.TrimPrefix(topicName(t), "persistent://public/default/") + "-np"
	for _, topic := range []string{persistent, np} {
		p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
	}
	list := func(query string) []string {
		var out []string
		restJSON(t, "GET", "/admin/v2/namespaces/public/default/topics"+query, "", &out)
		return out
	}
	if got := list(""); !slices.Contains(got, persistent) || slices.Contains(got, np) {
		t.Errorf("no mode: %v, want %s and not %s", got, persistent, np)
	}
	if got := list("?mode=ALL"); !slices.Contains(got, persistent) || !slices.Contains(got, np) {
		t.Errorf("mode=ALL: %v, want both", got)
	}
	if got := list("?mode=NON_PERSISTENT"); slices.Contains(got, persistent) || !slices.Contains(got, np) {
		t.Errorf("mode=NON_PERSISTENT: %v", got)
	}
}

// TestProducerMetadata / TestConsumerMetadata: PRODUCER's and SUBSCRIBE's metadata show in
// the topic stats (publishers[].metadata, consumers[].metadata). pulsaradmin's
// TestPartitionState: a consumer's clientVersion and lastConsumedFlowTimestamp, and the
// subscription's two maps as {} (not null).
func TestProducerAndConsumerMetadata(t *testing.T) {
	c := client(t)
	topic := topicName(t)
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
		Properties: map[string]string{"consumer-name": "c1", "role": "reader"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Properties: map[string]string{"app": "orders", "v": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The consumer's first FLOW follows its subscription's answer: wait for it.
	var st topicStats
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		restJSON(t, "GET", statsPath(topic), "", &st)
		if cs := st.Subscriptions["s"].Consumers; (len(cs) == 1 && cs[0].LastConsumedFlowTimestamp > 0) || time.Now().After(deadline) {
			break
		}
	}
	if len(st.Publishers) != 1 || st.Publishers[0].Metadata["app"] != "orders" || st.Publishers[0].Metadata["v"] != "2" {
		t.Errorf("publishers: %+v", st.Publishers)
	}
	sub := st.Subscriptions["s"]
	if cs := sub.Consumers; len(cs) != 1 || cs[0].Metadata["consumer-name"] != "c1" || cs[0].Metadata["role"] != "reader" ||
		!strings.Contains(cs[0].ClientVersion, "Pulsar-Go-version") || cs[0].LastConsumedFlowTimestamp <= 0 {
		t.Errorf("consumers: %+v", cs)
	}
	if sub.ConsumersAfterMarkDeletePosition == nil || sub.SubscriptionProperties == nil {
		t.Errorf("subscription maps null: %+v", sub)
	}
}

// TestTopicStatsTimestamps / TestPartitionedTopicStatsTimestamps: topicCreationTimeStamp is
// set from creation on, lastPublishTimeStamp is 0 until the first message and then set.
func TestStatsTimestamps(t *testing.T) {
	c := client(t)
	start := time.Now().Add(-time.Minute).UnixMilli()
	plain := topicName(t)
	partitioned := plain + "-partitioned"
	restJSON(t, "PUT", "/admin/v2/persistent/"+strings.TrimPrefix(plain, "persistent://"), "", nil)
	restJSON(t, "PUT", "/admin/v2/persistent/"+strings.TrimPrefix(partitioned, "persistent://")+"/partitions", "2", nil)
	get := func(topic string, partitionedStats bool) topicStats {
		var st topicStats
		path := statsPath(topic)
		if partitionedStats {
			path = strings.TrimSuffix(path, "/stats") + "/partitioned-stats?perPartition=true"
		}
		restJSON(t, "GET", path, "", &st)
		return st
	}
	for _, tc := range []struct {
		topic string
		parts bool
	}{{plain, false}, {partitioned, true}} {
		st := get(tc.topic, tc.parts)
		if st.TopicCreationTimeStamp < start || st.LastPublishTimeStamp != 0 {
			t.Errorf("%s before publishing: created %d (want >= %d), last publish %d (want 0)", tc.topic, st.TopicCreationTimeStamp, start, st.LastPublishTimeStamp)
		}
		p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: tc.topic})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Send(longCtx(t), &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		p.Close()
		// The timestamp is set when the entry is stored, before the send's receipt.
		if st := get(tc.topic, tc.parts); st.LastPublishTimeStamp < start {
			t.Errorf("%s after publishing: last publish %d", tc.topic, st.LastPublishTimeStamp)
		}
	}
	// The creation time is ours to keep; Pulsar's partitions metadata does not carry it.
	if _, b := rest(t, "GET", "/admin/v2/persistent/"+strings.TrimPrefix(partitioned, "persistent://")+"/partitions", ""); strings.Contains(string(b), "creation") {
		t.Errorf("partitions metadata shows the creation time: %s", b)
	}
}

// TestDeadLetterTopicWithInitialSubscription: the dead-letter producer's
// initial_subscription_name creates the DLQ's subscription at its earliest message, so the
// dead letters sent before anyone subscribes are kept for it.
func TestDeadLetterTopicWithInitialSubscription(t *testing.T) {
	c := client(t)
	topic := topicName(t)
	dlq := topic + "-DLQ"
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "my-sub", Type: pulsar.Shared,
		NackRedeliveryDelay: 100 * time.Millisecond,
		DLQ:                 &pulsar.DLQPolicy{MaxDeliveries: 1, DeadLetterTopic: dlq, InitialSubscriptionName: "init-sub"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := longCtx(t)
	const n = 5
	for i := range n {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	// Each message once; nacked, its redelivery reaches MaxDeliveries and the client sends
	// it to the DLQ instead of handing it out.
	for range n {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cons.Nack(m)
	}
	// Only now does anyone subscribe to the DLQ, with the default (latest) start.
	dc, err := c.Subscribe(pulsar.ConsumerOptions{Topic: dlq, SubscriptionName: "init-sub"})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	seen := map[string]bool{}
	for len(seen) < n {
		m, err := dc.Receive(ctx)
		if err != nil {
			t.Fatalf("dead letters received: %v: %v", seen, err)
		}
		seen[string(m.Payload())] = true
		_ = dc.Ack(m)
	}
}

// TestBytesSchema / TestTableViewSchemas: the Go client sends its BYTES schema as NONE on
// PRODUCER and stamps its messages with the version answered; the schema is registered so
// that a consumer can look that version up.
func TestBytesSchemaRegistered(t *testing.T) {
	c := client(t)
	topic := topicName(t)
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewBytesSchema(map[string]string{"pulsar": "hello"})})
	if err != nil {
		t.Fatal(err)
	}
	ctx := longCtx(t)
	for _, v := range []string{`{"key": "value"}`, "something else"} {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Schema: pulsar.NewBytesSchema(nil),
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for _, want := range []string{`{"key": "value"}`, "something else"} {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		if err := m.GetSchemaValue(&got); err != nil || string(got) != want {
			t.Fatalf("schema value %q, %v; want %q (schema version %x)", got, err, want, m.SchemaVersion())
		}
	}
}

// TestReaderWithSeekByTime: a reader's SEEK keeps its non-durable subscription, so the
// re-SUBSCRIBE (which names the reader's original start) resumes at the reset position
// instead of starting over, and GET_LAST_MESSAGE_ID answers that position as mark-delete.
func TestReaderWithSeekByTime(t *testing.T) {
	c := client(t)
	topic := topicName(t)
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := longCtx(t)
	send := func(prefix string) {
		for i := range 5 {
			if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("%s-%d", prefix, i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send("before")
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.SeekByTime(time.Now()); err != nil {
		t.Fatal(err)
	}
	if r.HasNext() {
		t.Error("HasNext after seeking to now: the reader would read the old messages again")
	}
	send("after")
	for i := range 5 {
		m, err := r.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("after-%d", i); string(m.Payload()) != want {
			t.Fatalf("read %q, want %q", m.Payload(), want)
		}
	}
}

// TestUpdateDynamicConfiguration / ...WithCustomURL: allowAutoSubscriptionCreation is a
// dynamic key, read as Pulsar reads booleans (any value is accepted); a value holding
// escaped slashes routes, and the values answer it as stored. Off, a consumer cannot create
// a subscription.
func TestDynamicAllowAutoSubscriptionCreation(t *testing.T) {
	const key = "/admin/v2/brokers/configuration/allowAutoSubscriptionCreation/"
	value := `{"key/123":"https://example.com/"}`
	t.Cleanup(func() { rest(t, "DELETE", strings.TrimSuffix(key, "/"), "") })
	if code, b := rest(t, "POST", key+url.QueryEscape(value), ""); code != http.StatusOK {
		t.Fatalf("set: %d %s, want 200 as Pulsar answers", code, b)
	}
	var values map[string]string
	restJSON(t, "GET", "/admin/v2/brokers/configuration/values", "", &values)
	if values["allowAutoSubscriptionCreation"] != value {
		t.Fatalf("stored value %q, want %q", values["allowAutoSubscriptionCreation"], value)
	}
	// That value reads as false: a new subscription is refused, an existing one is not.
	c := client(t)
	topic := topicName(t)
	restJSON(t, "PUT", "/admin/v2/persistent/"+strings.TrimPrefix(topic, "persistent://")+"/subscription/made", "", nil)
	if _, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "new"}); err == nil {
		t.Error("subscribed to a new subscription with allowAutoSubscriptionCreation off")
	}
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "made"})
	if err != nil {
		t.Fatalf("existing subscription refused: %v", err)
	}
	cons.Close()
	restJSON(t, "POST", key+"true", "", nil)
	cons, err = c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "new"})
	if err != nil {
		t.Fatalf("allowAutoSubscriptionCreation back on: %v", err)
	}
	cons.Close()
}
