//go:build kafkacompat

package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// SASL on the Kafka listener of a standalone with token authentication and authorization:
// PLAIN carrying a Pulsar token as its password and OAUTHBEARER authenticate against the
// broker's providers, and each request is authorized with the role's Pulsar permissions.
func TestKafkaSASLOnStandalone(t *testing.T) {
	kafkaAddr, token := startSecureKafka(t)
	ctx := ctxFor(t, 3*time.Minute)
	asPlain := func(role, password string, opts ...kgo.Opt) *kgo.Client {
		return kafkaClient(t, kafkaAddr, append([]kgo.Opt{kgo.SASL(plain.Auth{User: role, Pass: password}.AsMechanism()),
			kgo.RetryTimeout(5 * time.Second)}, opts...)...)
	}
	admin := kadm.NewClient(asPlain("admin", "token:"+token("admin")))
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, "sec"); err != nil {
		t.Fatal(err)
	}

	// The writer may produce, the reader may not.
	if err := asPlain("writer", token("writer"), kgo.DefaultProduceTopic("sec")).ProduceSync(ctx, &kgo.Record{Value: []byte("ok")}).FirstErr(); err != nil {
		t.Fatalf("writer: %v", err)
	}
	if err := asPlain("reader", "token:"+token("reader"), kgo.DefaultProduceTopic("sec")).ProduceSync(ctx, &kgo.Record{Value: []byte("no")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("reader producing: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// The reader consumes, over OAUTHBEARER with its token, in a group.
	bearer := oauth.Auth{Token: token("reader")}.AsMechanism()
	cons := kafkaClient(t, kafkaAddr, kgo.SASL(bearer), kgo.ConsumeTopics("sec"), kgo.ConsumerGroup("readers"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if recs := consumeKafka(t, cons, 1); string(recs[0].Value) != "ok" {
		t.Fatalf("reader got %q", recs[0].Value)
	}
	// A bad token and no SASL at all are refused.
	short, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := asPlain("writer", "token:"+token("writer")[:30], kgo.DefaultProduceTopic("sec")).ProduceSync(short, &kgo.Record{Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("a bad token produced")
	}
	if err := kafkaClient(t, kafkaAddr, kgo.DefaultProduceTopic("sec"), kgo.RetryTimeout(5*time.Second)).ProduceSync(short, &kgo.Record{Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("a client without SASL produced")
	}
}

// Sarama over SASL PLAIN (SaslHandshake v1 + SaslAuthenticate) with Pulsar tokens as the
// password: the superuser creates the topic, the writer produces (idempotent, acks=all), the
// reader consumes in a group that restarts at its committed offset; the reader may not
// produce and a bad password is refused.
func TestKafkaSaramaSASLPlainOnStandalone(t *testing.T) {
	addr, token := startSecureKafka(t)
	ctx := ctxFor(t, 4*time.Minute)
	as := func(role, password string) *sarama.Config {
		cfg := saramaConfig()
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
		cfg.Net.SASL.User = role
		cfg.Net.SASL.Password = password
		return cfg
	}
	admin, err := sarama.NewClusterAdmin([]string{addr}, as("admin", "token:"+token("admin")))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.CreateTopic("sec-sarama", &sarama.TopicDetail{NumPartitions: clientPartitions, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	saramaProduce(t, addr, as("writer", token("writer")), "sec-sarama")
	reader := as("reader", "token:"+token("reader"))
	first := saramaConsume(t, ctx, addr, reader, "sec-sarama", clientStopAt)
	second := saramaConsume(t, ctx, addr, reader, "sec-sarama", clientRecords-clientStopAt)
	checkResumed(t, first, second)

	plainCfg := as("reader", "token:"+token("reader"))
	plainCfg.Producer.Idempotent = false
	plainCfg.Producer.Retry.Max = 1
	p, err := sarama.NewSyncProducer([]string{addr}, plainCfg)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: "sec-sarama", Value: sarama.StringEncoder("no")})
	_ = p.Close()
	if !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Fatalf("reader producing: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	bad := as("writer", "token:"+token("writer")[:30])
	bad.Metadata.Retry.Max = 1
	if c, err := sarama.NewClient([]string{addr}, bad); err == nil {
		c.Close()
		t.Fatal("a bad token connected")
	}
}

// SCRAM with Kafka's own Java tools on a standalone with authentication and authorization:
// kafka-configs (the Java admin client, AlterUserScramCredentials over PLAIN as the
// superuser) creates alice's SCRAM-SHA-256 and -512 credentials, the console producer logs
// in with SCRAM-SHA-256 and the console consumer, in a group, with SCRAM-SHA-512; both run
// under alice's Pulsar grants. A wrong password is refused.
func TestKafkaSCRAMJavaToolsOnStandalone(t *testing.T) {
	addr, token := startSecureKafka(t)
	cli := testenv.NewKafkaCLI(t)
	dir := t.TempDir()
	props := func(name, mech, module, user, pass string) string {
		f := filepath.Join(dir, name)
		body := "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=" + mech + "\n" +
			"sasl.jaas.config=" + module + " required username=\"" + user + "\" password=\"" + pass + "\";\n"
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	const scramModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
	admin := props("admin.properties", "PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule", "admin", "token:"+token("admin"))
	run := func(main, stdin string, args ...string) (string, error) {
		t.Helper()
		return cli.Run(main, 3*time.Minute, []byte(stdin), append([]string{"--bootstrap-server", addr}, args...)...)
	}
	must := func(out string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return out
	}
	must(run(testenv.KafkaConfigsMain, "", "--command-config", admin, "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]"))
	out := must(run(testenv.KafkaConfigsMain, "", "--command-config", admin, "--describe", "--entity-type", "users", "--entity-name", "alice"))
	if !strings.Contains(out, "SCRAM-SHA-256=iterations=8192") || !strings.Contains(out, "SCRAM-SHA-512=iterations=4096") {
		t.Fatalf("kafka-configs --describe: %s", out)
	}
	// Client quotas: stored and described, by user, by client id and for the default
	// user (removed again, so that the rest runs unthrottled).
	must(run(testenv.KafkaConfigsMain, "", "--command-config", admin, "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152"))
	must(run(testenv.KafkaConfigsMain, "", "--command-config", admin, "--alter", "--entity-type", "clients", "--entity-name", "app",
		"--add-config", "request_percentage=25"))
	must(run(testenv.KafkaConfigsMain, "", "--command-config", admin, "--alter", "--entity-type", "users", "--entity-default",
		"--add-config", "producer_byte_rate=4096"))
	out = must(run(testenv.KafkaConfigsMain, "", "--command-config", admin, "--describe", "--entity-type", "users", "--entity-name", "alice"))
	if !strings.Contains(out, "producer_byte_rate=1048576") || !strings.Contains(out, "consumer_byte_rate=2097152") || !strings.Contains(out, "SCRAM-SHA-256=iterations=8192") {
		t.Fatalf("kafka-configs --describe of alice's quotas: %s", out)
	}
	out = must(run(testenv.KafkaConfigsMain, "", "--command-config", admin, "--describe", "--entity-type", "clients"))
	if !strings.Contains(out, "'app'") || !strings.Contains(out, "request_percentage=25") {
		t.Fatalf("kafka-configs --describe of the clients' quotas: %s", out)
	}
	out = must(run(testenv.KafkaConfigsMain, "", "--command-config", admin, "--describe", "--entity-type", "users", "--entity-default"))
	if !strings.Contains(out, "producer_byte_rate=4096") {
		t.Fatalf("kafka-configs --describe of the default user's quotas: %s", out)
	}
	must(run(testenv.KafkaConfigsMain, "", "--command-config", admin, "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--delete-config", "producer_byte_rate,consumer_byte_rate"))
	out = must(run(testenv.KafkaConfigsMain, "", "--command-config", admin, "--describe", "--entity-type", "users", "--entity-name", "alice"))
	if strings.Contains(out, "producer_byte_rate") {
		t.Fatalf("alice's quotas after --delete-config: %s", out)
	}
	must(run(testenv.KafkaConfigsMain, "", "--command-config", admin, "--alter", "--entity-type", "users", "--entity-default",
		"--delete-config", "producer_byte_rate"))
	must(run(testenv.KafkaTopicsMain, "", "--command-config", admin, "--create", "--topic", "scram", "--partitions", "2", "--replication-factor", "1"))

	lines := []string{"one", "two", "three"}
	must(run(testenv.KafkaConsoleProducerMain, strings.Join(lines, "\n")+"\n", "--topic", "scram",
		"--producer.config", props("alice256.properties", "SCRAM-SHA-256", scramModule, "alice", "alice-secret"), "--producer-property", "acks=all"))
	out = must(run(testenv.KafkaConsoleConsumerMain, "", "--topic", "scram", "--group", "alice-group", "--from-beginning",
		"--max-messages", "3", "--timeout-ms", "60000", "--consumer.config", props("alice512.properties", "SCRAM-SHA-512", scramModule, "alice", "alice-secret")))
	for _, l := range lines {
		if !strings.Contains(out, l+"\n") {
			t.Fatalf("the console consumer did not read %q:\n%s", l, out)
		}
	}
	// A wrong password: the producer gives up on authentication (max.block.ms bounds its
	// wait for metadata) and says why.
	out, _ = run(testenv.KafkaConsoleProducerMain, "x\n", "--topic", "scram",
		"--producer.config", props("bad.properties", "SCRAM-SHA-256", scramModule, "alice", "wrong"), "--producer-property", "max.block.ms=15000")
	if !strings.Contains(out, "SaslAuthenticationException") || !strings.Contains(out, "invalid user credentials") {
		t.Fatalf("a wrong password: %s", out)
	}
}
