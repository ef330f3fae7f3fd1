package kafka

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677; Kafka's KIP-84), server side. Two
// SaslAuthenticate round trips:
//
//	client-first  gs2-header client-first-bare
//	              gs2-header = ("n" | "y") "," ["a=" authzid] ","   (no channel binding: "p=" is refused)
//	              client-first-bare = "n=" saslname ",r=" c-nonce ["," extensions]
//	server-first  "r=" c-nonce s-nonce ",s=" base64(salt) ",i=" iterations
//	client-final  "c=" base64(gs2-header) ",r=" c-nonce s-nonce ["," extensions] ",p=" base64(ClientProof)
//	server-final  "v=" base64(ServerSignature)
//
// saslname escapes "," as "=2C" and "=" as "=3D". The server keeps only StoredKey and
// ServerKey (resources.KafkaScramCredential); it checks H(ClientProof XOR
// HMAC(StoredKey, AuthMessage)) == StoredKey, where AuthMessage = client-first-bare ","
// server-first "," client-final-without-proof. Like Kafka, names are not SASLprep-ed
// (clients send them as typed), and an unknown user fails at client-first with the same
// message as a wrong password, so the answer does not tell which users exist.

// scramMech is one SCRAM mechanism.
type scramMech struct {
	name string
	code int8 // Kafka's ScramMechanism in the admin APIs
	hash func() hash.Hash
}

var scramMechs = []scramMech{
	{name: "SCRAM-SHA-256", code: 1, hash: sha256.New},
	{name: "SCRAM-SHA-512", code: 2, hash: sha512.New},
}

// Kafka's bounds on a credential's iteration count (AlterUserScramCredentials).
const (
	scramMinIterations = 4096
	scramMaxIterations = 16384
)

func scramMechByName(name string) (scramMech, bool) {
	for _, m := range scramMechs {
		if m.name == name {
			return m, true
		}
	}
	return scramMech{}, false
}

func scramMechByCode(code int8) (scramMech, bool) {
	for _, m := range scramMechs {
		if m.code == code {
			return m, true
		}
	}
	return scramMech{}, false
}

func (m scramMech) hmac(key []byte, parts ...string) []byte {
	h := hmac.New(m.hash, key)
	for _, p := range parts {
		h.Write([]byte(p))
	}
	return h.Sum(nil)
}

func (m scramMech) sum(b []byte) []byte {
	h := m.hash()
	h.Write(b)
	return h.Sum(nil)
}

// credential derives what is stored from SaltedPassword = Hi(password, salt, i), which the
// admin client computes (AlterUserScramCredentials carries it, not the password).
func (m scramMech) credential(saltedPassword, salt []byte, iterations int) resources.KafkaScramCredential {
	return resources.KafkaScramCredential{
		Salt:       salt,
		Iterations: iterations,
		StoredKey:  m.sum(m.hmac(saltedPassword, "Client Key")),
		ServerKey:  m.hmac(saltedPassword, "Server Key"),
	}
}

// errScramCredentials is the one answer to an unknown user and to a wrong password.
var errScramCredentials = errors.New("invalid user credentials")

// scramServer is the server side of one SCRAM exchange. lookup returns the user's
// credential for the mechanism, ok false if there is none; nonce makes the server's part
// of the nonce (tests fix it).
type scramServer struct {
	mech   scramMech
	lookup func(user string) (cred resources.KafkaScramCredential, ok bool, err error)
	nonce  func() string

	step            int // 0: want client-first, 1: want client-final, 2: done
	user            string
	cred            resources.KafkaScramCredential
	gs2Header       string
	clientFirstBare string
	serverFirst     string
	fullNonce       string
}

func newScramServer(m scramMech, lookup func(string) (resources.KafkaScramCredential, bool, error)) *scramServer {
	return &scramServer{mech: m, lookup: lookup, nonce: randomNonce}
}

// randomNonce is 24 random bytes in base64: printable, no ",".
func randomNonce() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawStdEncoding.EncodeToString(b)
}

// next takes the client's next message and returns the server's answer; done is true
// after the client-final message verified. Any error ends the exchange.
func (s *scramServer) next(msg []byte) (reply []byte, done bool, err error) {
	switch s.step {
	case 0:
		reply, err = s.clientFirst(string(msg))
	case 1:
		reply, err = s.clientFinal(string(msg))
		done = err == nil
	default:
		err = errors.New("the exchange is over")
	}
	if err != nil {
		s.step = 2
		return nil, false, fmt.Errorf("%s: %w", s.mech.name, err)
	}
	s.step++
	return reply, done, nil
}

func (s *scramServer) clientFirst(msg string) ([]byte, error) {
	// gs2-header: cbind flag, authzid, both followed by ",".
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return nil, errors.New("client-first message: no GS2 header")
	}
	switch {
	case flag == "n", flag == "y":
	case strings.HasPrefix(flag, "p="):
		return nil, errors.New("client-first message: channel binding is not supported")
	default:
		return nil, fmt.Errorf("client-first message: bad channel binding flag %q", flag)
	}
	authzField, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, errors.New("client-first message: GS2 header not closed")
	}
	var authzid string
	if authzField != "" {
		v, ok := strings.CutPrefix(authzField, "a=")
		if !ok {
			return nil, fmt.Errorf("client-first message: bad authzid field %q", authzField)
		}
		if authzid, ok = decodeSaslname(v); !ok {
			return nil, errors.New("client-first message: bad escaping in authzid")
		}
	}
	s.gs2Header = msg[:len(msg)-len(bare)]
	s.clientFirstBare = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 {
		return nil, errors.New("client-first message: want n=user,r=nonce")
	}
	if strings.HasPrefix(attrs[0], "m=") {
		return nil, errors.New("client-first message: mandatory extensions (m=) are not supported")
	}
	name, ok := strings.CutPrefix(attrs[0], "n=")
	if !ok {
		return nil, fmt.Errorf("client-first message: want n=user, got %q", attrs[0])
	}
	if s.user, ok = decodeSaslname(name); !ok || s.user == "" {
		return nil, errors.New("client-first message: empty user or bad escaping in it")
	}
	cnonce, ok := strings.CutPrefix(attrs[1], "r=")
	if !ok || cnonce == "" || !printable(cnonce) {
		return nil, errors.New("client-first message: want r=nonce of printable characters")
	}
	for _, ext := range attrs[2:] {
		// Kafka's only extension is tokenauth (delegation tokens), which Magnetar has not.
		if k, v, _ := strings.Cut(ext, "="); k == "tokenauth" && strings.EqualFold(v, "true") {
			return nil, errors.New("delegation tokens (tokenauth) are not supported")
		}
	}
	if authzid != "" && authzid != s.user {
		return nil, fmt.Errorf("authzid %q differs from user %q (acting for another user is not supported)", authzid, s.user)
	}
	cred, ok, err := s.lookup(s.user)
	if err != nil {
		return nil, fmt.Errorf("reading the credentials of %q: %w", s.user, err)
	}
	if !ok {
		return nil, errScramCredentials
	}
	s.cred = cred
	s.fullNonce = cnonce + s.nonce()
	s.serverFirst = "r=" + s.fullNonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(cred.Iterations)
	return []byte(s.serverFirst), nil
}

func (s *scramServer) clientFinal(msg string) ([]byte, error) {
	withoutProof, proofField, ok := cutLast(msg, ",")
	if !ok {
		return nil, errors.New("client-final message: want c=...,r=...,p=proof")
	}
	proofB64, ok := strings.CutPrefix(proofField, "p=")
	if !ok {
		return nil, errors.New("client-final message: the proof (p=) must come last")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != s.mech.hash().Size() {
		return nil, errors.New("client-final message: the proof is not base64 of one hash")
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 {
		return nil, errors.New("client-final message: want c=...,r=... before the proof")
	}
	cb, ok := strings.CutPrefix(attrs[0], "c=")
	if !ok {
		return nil, fmt.Errorf("client-final message: want c=channel-binding, got %q", attrs[0])
	}
	if cbData, err := base64.StdEncoding.DecodeString(cb); err != nil || string(cbData) != s.gs2Header {
		return nil, errors.New("client-final message: channel binding does not repeat the GS2 header")
	}
	if n, ok := strings.CutPrefix(attrs[1], "r="); !ok || n != s.fullNonce {
		return nil, errors.New("client-final message: nonce differs from the server's")
	}
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + withoutProof
	if len(s.cred.StoredKey) != len(proof) {
		return nil, errScramCredentials // a credential of another mechanism's size: corrupt
	}
	clientKey := s.mech.hmac(s.cred.StoredKey, authMessage)
	for i := range clientKey {
		clientKey[i] ^= proof[i]
	}
	if subtle.ConstantTimeCompare(s.mech.sum(clientKey), s.cred.StoredKey) != 1 {
		return nil, errScramCredentials
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(s.mech.hmac(s.cred.ServerKey, authMessage))), nil
}

// decodeSaslname undoes RFC 5802's escaping: "=2C" is ",", "=3D" is "="; any other "=" is
// malformed.
func decodeSaslname(s string) (string, bool) {
	if !strings.Contains(s, "=") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// printable is RFC 5802's nonce alphabet: %x21-7E except ",".
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e || s[i] == ',' {
			return false
		}
	}
	return true
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
