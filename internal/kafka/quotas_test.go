package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/magnetar-io/magnetar/internal/auth"
)

// Client quotas through kadm on the topic service: set, described by the filters Kafka
// defines, kept across a restart, validated, superusers only.
func TestKafkaClientQuotas(t *testing.T) {
	st := newTopicsStack(t)
	var token func(string) string
	st.authn, st.authz, token = newTestSecurity(t, map[string][]string{"alice": {auth.ActionProduce, auth.ActionConsume}})
	addr, stop := st.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	as := func(addr, role string) *kadm.Client {
		return kadm.NewClient(newKgo(t, addr, kgo.SASL(plain.Auth{User: role, Pass: "token:" + token(role)}.AsMechanism())))
	}
	adm := as(addr, "admin")
	user := func(n *string) kadm.ClientQuotaEntityComponent {
		return kadm.ClientQuotaEntityComponent{Type: "user", Name: n}
	}
	client := func(n *string) kadm.ClientQuotaEntityComponent {
		return kadm.ClientQuotaEntityComponent{Type: "client-id", Name: n}
	}
	set := func(key string, v float64) kadm.AlterClientQuotaOp {
		return kadm.AlterClientQuotaOp{Key: key, Value: v}
	}
	alter := func(adm *kadm.Client, entries ...kadm.AlterClientQuotaEntry) []error {
		t.Helper()
		res, err := adm.AlterClientQuotas(ctx, entries)
		if err != nil {
			return []error{err}
		}
		out := make([]error, len(res))
		for i, r := range res {
			out[i] = r.Err
		}
		return out
	}
	for i, err := range alter(adm,
		kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{user(strPtr("alice"))}, Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1024), set("consumer_byte_rate", 2048)}},
		kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{user(nil)}, Ops: []kadm.AlterClientQuotaOp{set("request_percentage", 12.5)}},
		kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{client(strPtr("app")), user(strPtr("alice"))}, Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 512)}},
		kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{client(strPtr("app"))}, Ops: []kadm.AlterClientQuotaOp{set("consumer_byte_rate", 4096)}},
	) {
		if err != nil {
			t.Fatalf("alter %d: %v", i, err)
		}
	}
	describe := func(adm *kadm.Client, strict bool, comps ...kadm.DescribeClientQuotaComponent) map[string]string {
		t.Helper()
		ds, err := adm.DescribeClientQuotas(ctx, strict, comps)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, d := range ds {
			vals := make([]string, 0, len(d.Values))
			for _, v := range d.Values {
				vals = append(vals, fmt.Sprintf("%s=%v", v.Key, v.Value))
			}
			out[strings.Trim(d.Entity.String(), "{}")] = strings.Join(vals, ", ")
		}
		return out
	}
	exactAlice := kadm.DescribeClientQuotaComponent{Type: "user", MatchName: strPtr("alice"), MatchType: kmsg.QuotasMatchTypeExact}
	anyUser := kadm.DescribeClientQuotaComponent{Type: "user", MatchType: kmsg.QuotasMatchTypeAny}
	defaultUser := kadm.DescribeClientQuotaComponent{Type: "user", MatchType: kmsg.QuotasMatchTypeDefault}
	checks := func(addr string) {
		t.Helper()
		adm := as(addr, "admin")
		for _, c := range []struct {
			name   string
			strict bool
			comps  []kadm.DescribeClientQuotaComponent
			want   map[string]string
		}{
			{"alice strict", true, []kadm.DescribeClientQuotaComponent{exactAlice}, map[string]string{
				"user=alice": "consumer_byte_rate=2048, producer_byte_rate=1024"}},
			{"alice and her clients", false, []kadm.DescribeClientQuotaComponent{exactAlice}, map[string]string{
				"user=alice": "consumer_byte_rate=2048, producer_byte_rate=1024", "client-id=app, user=alice": "producer_byte_rate=512"}},
			{"the default user", true, []kadm.DescribeClientQuotaComponent{defaultUser}, map[string]string{
				"user=<default>": "request_percentage=12.5"}},
			{"any user, strict", true, []kadm.DescribeClientQuotaComponent{anyUser}, map[string]string{
				"user=alice": "consumer_byte_rate=2048, producer_byte_rate=1024", "user=<default>": "request_percentage=12.5"}},
			{"everything", false, nil, map[string]string{
				"user=alice": "consumer_byte_rate=2048, producer_byte_rate=1024", "user=<default>": "request_percentage=12.5",
				"client-id=app, user=alice": "producer_byte_rate=512", "client-id=app": "consumer_byte_rate=4096"}},
		} {
			if got := describe(adm, c.strict, c.comps...); !equalMaps(got, c.want) {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
			}
		}
	}
	checks(addr)
	stop()
	addr, _ = st.start(t)
	checks(addr)
	adm = as(addr, "admin")

	// Removing the last value removes the entity.
	rm := kadm.AlterClientQuotaOp{Key: "request_percentage", Remove: true}
	if errs := alter(adm, kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{user(nil)}, Ops: []kadm.AlterClientQuotaOp{rm}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if got := describe(adm, true, defaultUser); len(got) != 0 {
		t.Fatalf("the default user after its last quota went: %v", got)
	}
	// Refused, each with INVALID_REQUEST: an unknown key, an ip key on a user, a fraction
	// of a byte rate, a negative rate, an ip with a user, a bad ip, an unknown type.
	for i, e := range []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{user(strPtr("bob"))}, Ops: []kadm.AlterClientQuotaOp{set("bogus_rate", 1)}},
		{Entity: kadm.ClientQuotaEntity{user(strPtr("bob"))}, Ops: []kadm.AlterClientQuotaOp{set("connection_creation_rate", 1)}},
		{Entity: kadm.ClientQuotaEntity{user(strPtr("bob"))}, Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1.5)}},
		{Entity: kadm.ClientQuotaEntity{user(strPtr("bob"))}, Ops: []kadm.AlterClientQuotaOp{set("consumer_byte_rate", -1)}},
		{Entity: kadm.ClientQuotaEntity{user(strPtr("bob")), {Type: "ip", Name: strPtr("10.0.0.1")}}, Ops: []kadm.AlterClientQuotaOp{set("connection_creation_rate", 1)}},
		{Entity: kadm.ClientQuotaEntity{{Type: "ip", Name: strPtr("not-an-ip")}}, Ops: []kadm.AlterClientQuotaOp{set("connection_creation_rate", 1)}},
		{Entity: kadm.ClientQuotaEntity{{Type: "group", Name: strPtr("g")}}, Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1)}},
	} {
		if err := alter(adm, e)[0]; !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("refused alter %d: %v, want INVALID_REQUEST", i, err)
		}
	}
	if got := describe(adm, false, kadm.DescribeClientQuotaComponent{Type: "user", MatchName: strPtr("bob"), MatchType: kmsg.QuotasMatchTypeExact}); len(got) != 0 {
		t.Fatalf("a refused alter stored %v", got)
	}
	// An ip quota is its own entity.
	if errs := alter(adm, kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{{Type: "ip", Name: strPtr("10.0.0.1")}},
		Ops: []kadm.AlterClientQuotaOp{set("connection_creation_rate", 5)}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if got := describe(adm, true, kadm.DescribeClientQuotaComponent{Type: "ip", MatchType: kmsg.QuotasMatchTypeAny}); got["ip=10.0.0.1"] != "connection_creation_rate=5" {
		t.Fatalf("ip quotas: %v", got)
	}

	// Not a superuser: CLUSTER_AUTHORIZATION_FAILED both ways, nothing changed.
	alice := as(addr, "alice")
	if err := alter(alice, kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{user(strPtr("alice"))},
		Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1<<30)}})[0]; !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice alters her quota: %v", err)
	}
	if _, err := alice.DescribeClientQuotas(ctx, false, nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice describes quotas: %v", err)
	}
	if got := describe(adm, true, exactAlice); got["user=alice"] != "consumer_byte_rate=2048, producer_byte_rate=1024" {
		t.Fatalf("alice's quota after her refused alter: %v", got)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// throttleHook records the largest throttle time brokers sent a client.
type throttleHook struct {
	mu  sync.Mutex
	max time.Duration
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.max = max(h.max, d)
}

func (h *throttleHook) get() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.max
}

// The byte-rate quotas are enforced: a client id over its producer_byte_rate and
// consumer_byte_rate gets throttle times (and its data goes through: franz-go waits them
// out), another client id without a quota none; a /users/<default> quota reaches an
// unauthenticated connection (Kafka's ANONYMOUS user).
func TestKafkaClientQuotasThrottle(t *testing.T) {
	st := newTopicsStack(t)
	addr, _ := st.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(newKgo(t, addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "tq"); err != nil {
		t.Fatal(err)
	}
	const rate = 20_000
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: strPtr("slow")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: rate}, {Key: "consumer_byte_rate", Value: rate}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	value := make([]byte, 10_000)
	produce := func(clientID string, n int) time.Duration {
		t.Helper()
		h := &throttleHook{}
		cl := newKgo(t, addr, kgo.ClientID(clientID), kgo.WithHooks(h), kgo.ProducerBatchCompression(kgo.NoCompression()))
		defer cl.Close()
		for i := 0; i < n; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "tq", Value: value}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		return h.get()
	}
	// Two seconds' worth (four records of 10 kB at 20 kB/s) is over the one second a
	// quota lets through at once.
	if d := produce("slow", 4); d <= 0 || d > maxThrottle {
		t.Fatalf("slow producer throttled for %v, want some, at most %v", d, maxThrottle)
	}
	if d := produce("fast", 4); d != 0 {
		t.Fatalf("a client id without a quota was throttled for %v", d)
	}
	h := &throttleHook{}
	cons := newKgo(t, addr, kgo.ClientID("slow"), kgo.WithHooks(h), kgo.ConsumeTopics("tq"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < 8 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if d := h.get(); d <= 0 {
		t.Fatalf("a consumer over its consumer_byte_rate was not throttled (read %d records)", got)
	}

	res, err = adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "user"}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: rate}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	if d := produce("fast", 4); d <= 0 {
		t.Fatal("the default user's quota did not reach an unauthenticated producer")
	}
}
