package kafka

import (
	"context"
	"crypto/pbkdf2"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// testScramCred derives the stored credential of password as an admin client would.
func testScramCred(t testing.TB, m scramMech, password string, salt []byte, iterations int) resources.KafkaScramCredential {
	t.Helper()
	salted, err := pbkdf2.Key(m.hash, password, salt, iterations, m.hash().Size())
	if err != nil {
		t.Fatal(err)
	}
	return m.credential(salted, salt, iterations)
}

func lookupOne(user string, cred resources.KafkaScramCredential) func(string) (resources.KafkaScramCredential, bool, error) {
	return func(u string) (resources.KafkaScramCredential, bool, error) {
		if u != user {
			return resources.KafkaScramCredential{}, false, nil
		}
		return cred, true, nil
	}
}

// TestScramRFC7677Vector runs RFC 7677 section 3's SCRAM-SHA-256 exchange (user "user",
// password "pencil") byte for byte, with the RFC's server nonce.
func TestScramRFC7677Vector(t *testing.T) {
	m, _ := scramMechByName("SCRAM-SHA-256")
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	s := newScramServer(m, lookupOne("user", testScramCred(t, m, "pencil", salt, 4096)))
	s.nonce = func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" }

	first, done, err := s.next([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil || done {
		t.Fatalf("client-first: %v done=%v", err, done)
	}
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; string(first) != want {
		t.Fatalf("server-first %q, want %q", first, want)
	}
	final, done, err := s.next([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil || !done {
		t.Fatalf("client-final: %v done=%v", err, done)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; string(final) != want {
		t.Fatalf("server-final %q, want %q", final, want)
	}
	if _, _, err := s.next([]byte("again")); err == nil {
		t.Fatal("a third message was accepted")
	}
}

// TestScramWithFranzGoClient runs franz-go's SCRAM client against the server for both
// mechanisms: the right password logs in (and the client accepts the server's signature),
// a wrong one and an unknown user fail with the same message.
func TestScramWithFranzGoClient(t *testing.T) {
	for _, m := range scramMechs {
		t.Run(m.name, func(t *testing.T) {
			cred := testScramCred(t, m, "s3cret", []byte("0123456789abcdef"), 4096)
			run := func(user, pass string) error {
				a := scram.Auth{User: user, Pass: pass}
				mech := a.AsSha256Mechanism()
				if m.name == "SCRAM-SHA-512" {
					mech = a.AsSha512Mechanism()
				}
				sess, msg, err := mech.Authenticate(context.Background(), "host")
				if err != nil {
					return err
				}
				s := newScramServer(m, lookupOne("alice,=x", cred))
				for {
					reply, serverDone, err := s.next(msg)
					if err != nil {
						return err
					}
					clientDone, out, err := sess.Challenge(reply)
					if err != nil {
						return err
					}
					if serverDone != clientDone {
						return errors.New("client and server disagree on the end of the exchange")
					}
					if clientDone {
						return nil
					}
					msg = out
				}
			}
			// The name needs escaping both ways (",", "=").
			if err := run("alice,=x", "s3cret"); err != nil {
				t.Fatalf("right password: %v", err)
			}
			errBad := run("alice,=x", "wrong")
			errUnknown := run("bob", "s3cret")
			if !errors.Is(errBad, errScramCredentials) || !errors.Is(errUnknown, errScramCredentials) {
				t.Fatalf("wrong password: %v; unknown user: %v", errBad, errUnknown)
			}
		})
	}
}

// TestScramMalformed: each malformed or refused message ends the exchange with an error
// naming the problem.
func TestScramMalformed(t *testing.T) {
	m, _ := scramMechByName("SCRAM-SHA-256")
	cred := testScramCred(t, m, "pw", []byte("salt"), 4096)
	const first = "n,,n=u,r=abc"
	cases := []struct {
		name       string
		msgs       []string
		wantSubstr string
	}{
		{"empty", []string{""}, "GS2 header"},
		{"channel binding", []string{"p=tls-unique,,n=u,r=abc"}, "channel binding is not supported"},
		{"bad flag", []string{"x,,n=u,r=abc"}, "flag"},
		{"no user", []string{"n,,r=abc"}, "n=user"},
		{"mandatory ext", []string{"n,,m=x,n=u,r=abc"}, "mandatory"},
		{"bad escape", []string{"n,,n=u=2X,r=abc"}, "escaping"},
		{"no nonce", []string{"n,,n=u"}, "n=user,r=nonce"},
		{"empty nonce", []string{"n,,n=u,r="}, "r=nonce"},
		{"token auth", []string{"n,,n=u,r=abc,tokenauth=true"}, "delegation tokens"},
		{"other authzid", []string{"n,a=admin,n=u,r=abc"}, "authzid"},
		{"unknown user", []string{"n,,n=nobody,r=abc"}, "invalid user credentials"},
		{"final without proof", []string{first, "c=biws,r=abc"}, "proof"},
		{"proof not last", []string{first, "c=biws,p=AAAA,r=abc"}, "proof"},
		{"proof not base64", []string{first, "c=biws,r=abc,p=!!"}, "base64"},
		{"wrong binding", []string{first, "c=eSws,r=abcX,p=" + strings.Repeat("A", 43) + "="}, "channel binding"},
		{"wrong nonce", []string{first, "c=biws,r=abc,p=" + strings.Repeat("A", 43) + "="}, "nonce"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScramServer(m, lookupOne("u", cred))
			s.nonce = func() string { return "X" }
			var err error
			for _, msg := range tc.msgs {
				if _, _, err = s.next([]byte(msg)); err != nil {
					break
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantSubstr) {
				t.Fatalf("err %v, want one containing %q", err, tc.wantSubstr)
			}
			if _, _, err := s.next([]byte(first)); err == nil {
				t.Fatal("the exchange went on after an error")
			}
		})
	}
}

// FuzzScramServer feeds arbitrary client messages to both steps of the exchange: no panic,
// and no input completes it without the proof only the password gives.
func FuzzScramServer(f *testing.F) {
	m, _ := scramMechByName("SCRAM-SHA-256")
	cred := testScramCred(f, m, "pw", []byte("salt"), 4096)
	f.Add([]byte("n,,n=u,r=abc"), []byte("c=biws,r=abcX,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	f.Add([]byte("y,a=u,n=u=2C=3D,r=abc,ext=1"), []byte("c=eSxhPXUs,r=abcX,e=1,p=AAAA"))
	f.Add([]byte("n,,n=u,r=abc"), []byte(""))
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := newScramServer(m, lookupOne("u", cred))
		s.nonce = func() string { return "X" }
		if _, done, err := s.next(first); err != nil || done {
			return
		}
		if _, done, err := s.next(final); err == nil || done {
			t.Fatalf("client-final %q completed without the password", final)
		}
	})
}
