package auth

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"
)

// basicProvider is AuthenticationProviderBasic: users and password hashes from an htpasswd
// file. Hashes may be $apr1$ (htpasswd -m, Apache MD5) and DES crypt (htpasswd -d), the two
// Pulsar accepts, plus $1$ (MD5 crypt) and bcrypt $2a$/$2b$/$2y$ (htpasswd -B).
//
// Verifying a hash costs up to a bcrypt round, and HTTP clients send the password on every
// request, so successful checks are remembered (by a SHA-256 of user, password and hash:
// never the password itself) in a bounded set.
type basicProvider struct {
	users map[string]string

	mu   sync.Mutex
	good map[[32]byte]struct{}
}

// maxBcryptCost bounds the bcrypt cost of a hash accepted from the htpasswd file.
const maxBcryptCost = 14

// maxBasicCache bounds the remembered successful checks.
const maxBasicCache = 4096

func newBasicProvider(conf string) (*basicProvider, error) {
	if conf == "" {
		conf = systemPropertyFromEnv("pulsar.auth.basic.conf")
	}
	if conf == "" {
		return nil, fmt.Errorf("%w: the basic provider needs basicAuthConf (an htpasswd file)", ErrBadConfig)
	}
	b, err := ReadValue(conf, true)
	if err != nil {
		return nil, fmt.Errorf("%w: basicAuthConf: %w", ErrBadConfig, err)
	}
	users, err := parseHtpasswd(b)
	if err != nil {
		return nil, fmt.Errorf("%w: basicAuthConf: %w", ErrBadConfig, err)
	}
	return &basicProvider{users: users, good: map[[32]byte]struct{}{}}, nil
}

// parseHtpasswd reads "user:hash" lines; blank lines and # comments are skipped.
func parseHtpasswd(b []byte) (map[string]string, error) {
	users := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" || hash == "" || strings.Contains(hash, ":") {
			return nil, fmt.Errorf("line %d: want user:hash", n)
		}
		if !knownHash(hash) {
			return nil, fmt.Errorf("line %d: user %s: unsupported hash (want $apr1$, $1$, bcrypt or DES crypt)", n, user)
		}
		users[user] = hash
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("no users")
	}
	return users, nil
}

func knownHash(h string) bool {
	switch {
	case strings.HasPrefix(h, "$apr1$"), strings.HasPrefix(h, "$1$"):
		return strings.Count(h, "$") == 3
	case strings.HasPrefix(h, "$2a$"), strings.HasPrefix(h, "$2b$"), strings.HasPrefix(h, "$2y$"):
		// A cost above 14 would make every login take seconds: a file mistake, refused.
		cost, err := bcrypt.Cost([]byte(h))
		return err == nil && cost <= maxBcryptCost
	}
	return len(h) == 13 && strings.Trim(h, cryptAlphabet) == ""
}

func (p *basicProvider) Method() string { return MethodBasic }

func (p *basicProvider) Authenticate(_ context.Context, c Credentials) (Identity, error) {
	var userPass string
	if c.HTTP {
		scheme, enc, ok := strings.Cut(strings.TrimSpace(c.Authorization), " ")
		if !ok || !strings.EqualFold(scheme, "Basic") {
			return Identity{}, fmt.Errorf("%w: basic: want an Authorization: Basic header", ErrAuthentication)
		}
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
		if err != nil {
			return Identity{}, fmt.Errorf("%w: basic: the Authorization header is not base64", ErrAuthentication)
		}
		userPass = string(b)
	} else {
		userPass = string(c.Data)
	}
	user, pass, ok := strings.Cut(userPass, ":")
	if !ok || user == "" {
		return Identity{}, fmt.Errorf("%w: basic: want user:password", ErrAuthentication)
	}
	hash, known := p.users[user]
	if !known || !p.verify(user, pass, hash) {
		return Identity{}, fmt.Errorf("%w: basic: unknown user or wrong password", ErrAuthentication)
	}
	return Identity{Role: user, Method: MethodBasic}, nil
}

func (p *basicProvider) verify(user, pass, hash string) bool {
	key := sha256.Sum256([]byte(user + "\x00" + pass + "\x00" + hash))
	p.mu.Lock()
	_, seen := p.good[key]
	p.mu.Unlock()
	if seen {
		return true
	}
	if !checkPassword(pass, hash) {
		return false
	}
	p.mu.Lock()
	if len(p.good) >= maxBasicCache {
		clear(p.good)
	}
	p.good[key] = struct{}{}
	p.mu.Unlock()
	return true
}

// checkPassword compares pass against an htpasswd hash, in constant time for the result.
func checkPassword(pass, hash string) bool {
	var got string
	switch {
	case strings.HasPrefix(hash, "$apr1$"):
		got = md5Crypt(pass, saltOf(hash, "$apr1$"), "$apr1$")
	case strings.HasPrefix(hash, "$1$"):
		got = md5Crypt(pass, saltOf(hash, "$1$"), "$1$")
	case strings.HasPrefix(hash, "$2"):
		return bcrypt.CompareHashAndPassword([]byte(hash), []byte(pass)) == nil
	default:
		if len(hash) != 13 {
			return false
		}
		got = desCrypt(pass, hash[:2])
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(hash)) == 1
}

func saltOf(hash, magic string) string {
	s := strings.TrimPrefix(hash, magic)
	s, _, _ = strings.Cut(s, "$")
	return s
}

// systemPropertyFromEnv finds -Dname=value in PULSAR_EXTRA_OPTS, where Pulsar's images pass
// system properties such as pulsar.auth.basic.conf.
func systemPropertyFromEnv(name string) string {
	for _, f := range strings.Fields(os.Getenv("PULSAR_EXTRA_OPTS")) {
		if v, ok := strings.CutPrefix(f, "-D"+name+"="); ok {
			return v
		}
	}
	return ""
}
