package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
)

// TestSCRAMOverTheListener: the superuser creates SCRAM credentials with kadm
// (AlterUserScramCredentials); franz-go's SCRAM-SHA-256 and -512 clients then log in as
// that user, whose Pulsar grants decide what it may do; wrong passwords, unknown users and
// deleted credentials are refused with SASL_AUTHENTICATION_FAILED; a non-superuser may not
// manage credentials; bad credentials are refused with Kafka's error codes.
func TestSCRAMOverTheListener(t *testing.T) {
	addr, token := startSecureMem(t, map[string][]string{"alice": {auth.ActionProduce, auth.ActionConsume}})
	ctx := testCtx(t)
	adminCl := newClient(t, addr, kgo.SASL(plain.Auth{User: "admin", Pass: "token:" + token("admin")}.AsMechanism()))
	admin := kadm.NewClient(adminCl)
	altered, err := admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-pw"},
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-pw"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-pw"},
	})
	if err == nil {
		err = altered.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	described, err := admin.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a := described["alice"]; a.Err != nil || len(a.CredInfos) != 2 || a.CredInfos[1] != (kadm.CredInfo{Mechanism: kadm.ScramSha512, Iterations: 8192}) {
		t.Fatalf("alice described as %+v", a)
	}
	if len(described) != 2 {
		t.Fatalf("described %d users, want alice and bob", len(described))
	}

	as := func(m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
		return newClient(t, addr, append([]kgo.Opt{kgo.SASL(m), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)}, opts...)...)
	}
	alice := scram.Auth{User: "alice", Pass: "alice-pw"}
	// alice produces over SCRAM-SHA-256 and consumes over SCRAM-SHA-512: her grants apply.
	prod := as(alice.AsSha256Mechanism(), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("scram"))
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("alice produce over SCRAM-SHA-256: %v", err)
	}
	cons := as(alice.AsSha512Mechanism(), kgo.ConsumeTopics("scram"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := cons.PollFetches(ctx)
	if err := fs.Err0(); err != nil || len(fs.Records()) != 1 || string(fs.Records()[0].Value) != "hello" {
		t.Fatalf("alice fetch over SCRAM-SHA-512: %v, %d records", err, len(fs.Records()))
	}
	// bob authenticates but has no grant: the principal is his name, not a superuser.
	bob := as(scram.Auth{User: "bob", Pass: "bob-pw"}.AsSha512Mechanism(), kgo.DefaultProduceTopic("scram"))
	if err := bob.ProduceSync(ctx, &kgo.Record{Value: []byte("b")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// alice is no superuser either: managing credentials is refused.
	if _, err := kadm.NewClient(prod).DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice describing credentials: %v", err)
	}
	res, err := kadm.NewClient(prod).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Password: "x"}})
	if err == nil { // kadm turns an authorization error of a result into its own error
		err = res["alice"].Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice altering credentials: %v %+v", err, res)
	}

	// kafka-configs describes users' quotas with their credentials: none for anyone, and
	// only superusers may ask.
	quotas := kmsg.NewPtrDescribeClientQuotasRequest()
	quotas.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 0, Match: kmsg.StringPtr("alice")}}
	if qr, err := quotas.RequestWith(ctx, adminCl); err != nil || qr.ErrorCode != 0 || qr.Entries == nil || len(qr.Entries) != 0 {
		t.Fatalf("admin describing quotas: %v %+v", err, qr)
	}
	if qr, err := quotas.RequestWith(ctx, prod); err != nil || qr.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice describing quotas: %v %+v", err, qr)
	}

	refused := func(what string, m sasl.Mechanism) {
		t.Helper()
		if _, err := kadmMetadata(ctx, as(m)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("%s: %v, want SASL_AUTHENTICATION_FAILED", what, err)
		}
	}
	refused("wrong password", scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism())
	refused("unknown user", scram.Auth{User: "carol", Pass: "alice-pw"}.AsSha256Mechanism())
	refused("bob over the mechanism he has no credential for", scram.Auth{User: "bob", Pass: "bob-pw"}.AsSha256Mechanism())

	// Deleting alice's SHA-256 credential: that mechanism stops working, SHA-512 does not.
	if res, err := admin.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}}, nil); err != nil || res.Error() != nil {
		t.Fatalf("delete: %v %v", err, res.Error())
	}
	refused("a deleted credential", alice.AsSha256Mechanism())
	if _, err := kadmMetadata(ctx, as(alice.AsSha512Mechanism())); err != nil {
		t.Fatalf("alice over SCRAM-SHA-512 after the SHA-256 deletion: %v", err)
	}

	// Validation, with raw requests since kadm checks some of it client-side.
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := func(user string, mech int8, iters int32, salted int) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		return kmsg.AlterUserSCRAMCredentialsRequestUpsertion{Name: user, Mechanism: mech, Iterations: iters, Salt: []byte("salt"), SaltedPassword: make([]byte, salted)}
	}
	alter.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		up("few", 1, 4095, 32), up("many", 2, 16385, 64), up("mech", 3, 4096, 32), up("short", 1, 4096, 31),
		up("", 1, 4096, 32), up("twice", 1, 4096, 32), up("twice", 1, 4096, 32), up("ok", 1, 16384, 32),
	}
	alter.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "nobody", Mechanism: 1}}
	aresp, err := alter.RequestWith(ctx, adminCl)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*kerr.Error{"few": kerr.UnacceptableCredential, "many": kerr.UnacceptableCredential,
		"mech": kerr.UnsupportedSaslMechanism, "short": kerr.UnacceptableCredential, "": kerr.UnacceptableCredential,
		"twice": kerr.DuplicateResource, "nobody": kerr.ResourceNotFound, "ok": nil}
	if len(aresp.Results) != len(want) {
		t.Fatalf("%d results, want %d", len(aresp.Results), len(want))
	}
	for _, r := range aresp.Results {
		if w := want[r.User]; (w == nil) != (r.ErrorCode == 0) || w != nil && w.Code != r.ErrorCode {
			t.Errorf("user %q: error %d (%v), want %v", r.User, r.ErrorCode, r.ErrorMessage, w)
		}
	}
	d, err := admin.DescribeUserSCRAMs(ctx, "nobody", "ok")
	if err != nil || !errors.Is(d["nobody"].Err, kerr.ResourceNotFound) || d["ok"].Err != nil || d["ok"].CredInfos[0].Iterations != 16384 {
		t.Fatalf("describe nobody, ok: %v %+v", err, d)
	}
}

// TestSASLAllowedMechanisms: only the configured mechanisms are offered.
func TestSASLAllowedMechanisms(t *testing.T) {
	addr, token := startSecureMem(t, nil, func(c *config.KafkaConfig) { c.SASLAllowedMechanisms = []string{"SCRAM-SHA-512"} })
	ctx, cancel := context.WithTimeout(testCtx(t), 30*time.Second)
	defer cancel()
	cl := newClient(t, addr, kgo.SASL(plain.Auth{User: "admin", Pass: "token:" + token("admin")}.AsMechanism()), kgo.RequestRetries(0))
	if _, err := kadmMetadata(ctx, cl); !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Fatalf("PLAIN with only SCRAM-SHA-512 allowed: %v", err)
	}
}
