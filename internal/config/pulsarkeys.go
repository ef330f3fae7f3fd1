package config

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
)

//go:embed pulsar_keys.txt
var pulsarKeysText string

var (
	pulsarKeysOnce sync.Once
	pulsarKeys     map[string]bool
)

// IsPulsarKey reports whether key is a configuration key Pulsar or BookKeeper reads (in
// pulsar_keys.txt), or one of a family Pulsar passes through by prefix (bookkeeper_* to its
// BookKeeper client, managedLedgerOffload*/s3ManagedLedgerOffload* to offloaders).
func IsPulsarKey(key string) bool {
	pulsarKeysOnce.Do(func() {
		pulsarKeys = map[string]bool{}
		for _, l := range strings.Split(pulsarKeysText, "\n") {
			if l = strings.TrimSpace(l); l != "" && l[0] != '#' {
				pulsarKeys[l] = true
			}
		}
	})
	if pulsarKeys[key] {
		return true
	}
	for _, p := range []string{"bookkeeper_", "brokerClient_", "managedLedgerOffload", "s3ManagedLedgerOffload", "gcsManagedLedgerOffload", "fileSystemManagedLedgerOffload"} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// securityGate lists Pulsar keys that turn on a protection. While no Magnetar config binds
// one (the security issue binds them when it lands), a file or environment that turns it on
// is refused rather than listed as not applying: running without the authentication or TLS
// an operator asked for would be worse than not starting. Each value says what "on" is.
var securityGate = map[string]func(v string) bool{
	"authenticationEnabled":                isTrue,
	"authorizationEnabled":                 isTrue,
	"tlsEnabled":                           isTrue,
	"tlsRequireTrustedClientCertOnConnect": isTrue,
	"brokerServicePortTls":                 notBlank,
	"webServicePortTls":                    notBlank,
	"servicePortTls":                       notBlank, // proxy.conf
	"tlsEnabledInProxy":                    isTrue,
	"tlsEnabledWithBroker":                 isTrue,
}

func isTrue(v string) bool   { return strings.EqualFold(strings.TrimSpace(v), "true") }
func notBlank(v string) bool { return strings.TrimSpace(v) != "" }

// checkSecurityGate returns an error when an unbound key of securityGate is turned on.
func checkSecurityGate(key, value string) error {
	on, ok := securityGate[key]
	if !ok || !on(value) {
		return nil
	}
	return fmt.Errorf("%s=%s: not available in this build of Magnetar (no TLS or authentication yet); remove the key or turn it off to run without", key, value)
}

// suggest returns the bound key closest to an unknown one when it is close enough to be a
// typo of it (same letters ignoring case, or at most two edits apart on a long key).
func suggest(key string, bound []string) string {
	best, bestD := "", 3
	for _, k := range bound {
		if strings.EqualFold(k, key) {
			return k
		}
		if len(key) < 8 {
			continue
		}
		if d := editDistance(strings.ToLower(k), strings.ToLower(key), bestD); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or limit when it is at least limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
