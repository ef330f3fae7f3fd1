package e2e

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/testenv"
)

var kafkaTestSecret = []byte("0123456789abcdef0123456789abcdef")

// kafkaToken makes a token for role under kafkaTestSecret ("admin" is the superuser).
func kafkaToken(t *testing.T, role string) string {
	t.Helper()
	tok, err := auth.CreateToken(kafkaTestSecret, "HS256", auth.TokenSpec{Subject: role})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// startSecureKafkaOn runs a standalone on dir with the Kafka listener on kafkaPort (0: any)
// and token authentication and authorization on; it returns the process and its HTTP and
// Kafka addresses.
func startSecureKafkaOn(t *testing.T, dir string, kafkaPort int) (*proc, string, string) {
	t.Helper()
	p, _, httpAddr, kafkaAddr := startKafkaStandalone(t, dir, kafkaPort,
		"--authentication-enabled", "--authentication-providers", "token",
		"--token-secret-key", "data:;base64,"+base64.StdEncoding.EncodeToString(kafkaTestSecret),
		"--authorization-enabled", "--super-user-roles", "admin",
		"--broker-client-authentication-plugin", "org.apache.pulsar.client.impl.auth.AuthenticationToken",
		"--broker-client-authentication-parameters", "token:"+kafkaToken(t, "admin"))
	return p, httpAddr, kafkaAddr
}

// grantKafkaRoles grants "writer" produce, "reader" consume and "alice" both on
// public/default.
func grantKafkaRoles(t *testing.T, httpAddr string) {
	t.Helper()
	for role, actions := range map[string]string{"writer": `["produce"]`, "reader": `["consume"]`, "alice": `["produce","consume"]`} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+httpAddr+"/admin/v2/namespaces/public/default/permissions/"+role, strings.NewReader(actions))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+kafkaToken(t, "admin"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode/100 != 2 {
			t.Fatalf("grant %s: %v %v", role, resp, err)
		}
		resp.Body.Close()
	}
}

// startSecureKafka is startSecureKafkaOn on a fresh directory with the roles granted; it
// returns the Kafka address and the token maker.
func startSecureKafka(t *testing.T) (string, func(role string) string) {
	t.Helper()
	_, httpAddr, kafkaAddr := startSecureKafkaOn(t, t.TempDir(), 0)
	grantKafkaRoles(t, httpAddr)
	return kafkaAddr, func(role string) string { return kafkaToken(t, role) }
}

// SCRAM credentials are metadata records: a standalone SIGKILLed after alice's credentials
// were created and restarted on the same data still logs alice in with SCRAM-SHA-512 (and
// refuses a wrong password), and what she produced before the kill is there.
func TestKafkaSCRAMCredentialsSurviveSIGKILL(t *testing.T) {
	dir := t.TempDir()
	port := testenv.FreePort(t)
	p, httpAddr, kafkaAddr := startSecureKafkaOn(t, dir, port)
	grantKafkaRoles(t, httpAddr)
	ctx := ctxFor(t, 3*time.Minute)
	admin := kadm.NewClient(kafkaClient(t, kafkaAddr, kgo.SASL(plain.Auth{User: "admin", Pass: "token:" + kafkaToken(t, "admin")}.AsMechanism())))
	res, err := admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-secret"}})
	if err != nil || res.Error() != nil {
		t.Fatalf("creating alice's credentials: %v %v", err, res.Error())
	}
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, "scram-restart"); err != nil {
		t.Fatal(err)
	}
	alice := func(pass string, opts ...kgo.Opt) *kgo.Client {
		return kafkaClient(t, kafkaAddr, append([]kgo.Opt{kgo.SASL(scram.Auth{User: "alice", Pass: pass}.AsSha512Mechanism()),
			kgo.RetryTimeout(10 * time.Second)}, opts...)...)
	}
	if err := alice("alice-secret", kgo.DefaultProduceTopic("scram-restart")).ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatalf("alice producing before the kill: %v", err)
	}

	p.kill()
	_, _, kafkaAddr = startSecureKafkaOn(t, dir, port)

	cons := alice("alice-secret", kgo.ConsumeTopics("scram-restart"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if got := consumeKafka(t, cons, 1); string(got[0].Value) != "before" {
		t.Fatalf("alice after the restart read %q, want %q", got[0].Value, "before")
	}
	// A request, not a produce: the producer retries a refused login until its deadline.
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, alice("wrong")); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a wrong password after the restart: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}
