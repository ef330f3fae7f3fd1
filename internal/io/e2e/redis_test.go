package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// TestRedisSink: keyed messages (and tombstones) reach Redis through the redis sink, across
// a Redis restart in the middle of the stream (the sink reconnects by itself); a message
// without a key goes to the dead-letter topic.
func TestRedisSink(t *testing.T) {
	r := testenv.StartRedis(t)
	cli := testenv.DebianProgram(t, "redis-cli", "redis-tools")
	host, port, _ := strings.Cut(r.Addr, ":")
	redisCLI := func(args ...string) (string, error) {
		out, err := exec.Command(cli, append([]string{"-h", host, "-p", port, "--no-raw"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}

	a := admin(t)
	topic := "persistent://public/default/to-redis"
	dlq := topic + "-dlq"
	sink := &utils.SinkConfig{Tenant: "public", Namespace: "default", Name: "redis-out", Archive: "builtin://redis",
		Inputs: []string{topic}, Parallelism: 1, SourceSubscriptionPosition: "Earliest", MaxMessageRetries: 1, DeadLetterTopic: dlq,
		Configs: map[string]any{"redisHosts": r.Addr, "batchSize": 20, "batchTimeMs": 50, "operationTimeout": 2000}}
	if err := a.Sinks().CreateSink(sink, sink.Archive); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Sinks().DeleteSink("public", "default", "redis-out") }()

	c := client(t)
	dlqCons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: dlq, SubscriptionName: "check", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer dlqCons.Close()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	send := func(from, to int, version string) {
		for i := from; i < to; i++ {
			if _, err := p.Send(ctx, &pulsar.ProducerMessage{Key: fmt.Sprintf("k%d", i), Payload: []byte(version + fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(0, 100, "a")
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("no key")}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Key: "k5"}); err != nil { // a tombstone: DEL k5
		t.Fatal(err)
	}
	want := func(key, value string) {
		t.Helper()
		eventually(t, key+" = "+value, func() (bool, error) {
			got, err := redisCLI("GET", key)
			return got == value, fmt.Errorf("GET %s: %q %v", key, got, err)
		})
	}
	want("k99", `"a99"`)
	want("k5", "(nil)")
	// Redis goes away and comes back; the sink resumes by itself.
	r.Stop()
	sendDone := make(chan struct{})
	go func() { defer close(sendDone); send(100, 200, "b") }()
	r.Start()
	<-sendDone
	send(0, 50, "c")
	want("k199", `"b199"`)
	for i := 0; i < 200; i++ {
		v := map[bool]string{true: "c", false: map[bool]string{true: "a", false: "b"}[i < 100]}[i < 50]
		want(fmt.Sprintf("k%d", i), fmt.Sprintf(`"%s%d"`, v, i))
	}
	m, err := dlqCons.Receive(ctx)
	if err != nil || string(m.Payload()) != "no key" {
		t.Fatalf("dead letter: %v %v", m, err)
	}
}

// TestRedisClusterSink: with clientMode Cluster and one seed in redisHosts, keyed messages
// reach the right primaries of a three-node Redis Cluster, also after 2,000 slots moved
// to another node while the sink ran (its slot map is stale: MOVED, reload, resend), and a
// tombstone deletes its key.
func TestRedisClusterSink(t *testing.T) {
	nodes, cli := testenv.StartRedisCluster(t, 3)
	redisCLI := func(addr string, args ...string) (string, error) {
		host, port, _ := strings.Cut(addr, ":")
		out, err := exec.Command(cli, append([]string{"-c", "-h", host, "-p", port, "--no-raw"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	a := admin(t)
	topic := "persistent://public/default/to-redis-cluster"
	sink := &utils.SinkConfig{Tenant: "public", Namespace: "default", Name: "redis-cluster-out", Archive: "builtin://redis",
		Inputs: []string{topic}, Parallelism: 1, SourceSubscriptionPosition: "Earliest",
		Configs: map[string]any{"redisHosts": nodes[0].Addr, "clientMode": "Cluster", "batchSize": 20, "batchTimeMs": 50, "operationTimeout": 2000}}
	if err := a.Sinks().CreateSink(sink, sink.Archive); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Sinks().DeleteSink("public", "default", "redis-cluster-out") }()
	p, err := client(t).CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	const n = 150
	send := func(version string) {
		for i := 0; i < n; i++ {
			if _, err := p.Send(ctx, &pulsar.ProducerMessage{Key: fmt.Sprintf("k%d", i), Payload: []byte(version + fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := func(key, value string) {
		t.Helper()
		eventually(t, key+" = "+value, func() (bool, error) {
			got, err := redisCLI(nodes[2].Addr, "GET", key)
			return got == value, fmt.Errorf("GET %s: %q %v", key, got, err)
		})
	}
	send("a")
	for i := 0; i < n; i++ {
		want(fmt.Sprintf("k%d", i), fmt.Sprintf(`"a%d"`, i))
	}
	// Move 2,000 slots from the first node to the second behind the sink's back.
	id := func(r *testenv.Redis) string {
		out, err := redisCLI(r.Addr, "CLUSTER", "MYID")
		if err != nil {
			t.Fatalf("cluster myid: %v %s", err, out)
		}
		return strings.Trim(out, `"`)
	}
	host, port, _ := strings.Cut(nodes[0].Addr, ":")
	if out, err := exec.Command(cli, "--cluster", "reshard", host+":"+port, "--cluster-from", id(nodes[0]), "--cluster-to", id(nodes[1]),
		"--cluster-slots", "2000", "--cluster-yes").CombinedOutput(); err != nil {
		t.Fatalf("reshard: %v\n%s", err, out)
	}
	send("b")
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Key: "k5"}); err != nil { // a tombstone: DEL k5
		t.Fatal(err)
	}
	want("k5", "(nil)")
	for i := 0; i < n; i++ {
		if i != 5 {
			want(fmt.Sprintf("k%d", i), fmt.Sprintf(`"b%d"`, i))
		}
	}
}
