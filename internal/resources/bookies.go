package resources

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Bookie records. A bookie writes its registration (session-bound) and its cookie
// (internal/bookie); ledger clients watch the registrations to place ensembles and the
// decommission marks to avoid bookies (internal/ledger); the admin API lists them. The key
// layouts and JSON shapes are here, once.

// Bookie states in a BookieRegistration.
const (
	BookieWritable = "writable"
	BookieReadOnly = "readonly"
)

// BookieRegistration is the value of a bookie's registration key
// (BookieRegistrationsPrefix + "host:port"): which address clients dial, its rack and
// whether it takes new ledgers.
type BookieRegistration struct {
	Address string `json:"address"`        // host:port clients dial
	Rack    string `json:"rack,omitempty"` // e.g. "/rack-a"; empty means the default rack
	State   string `json:"state"`          // BookieWritable or BookieReadOnly
	// InstanceID is the storage instance behind the address (its cookie's id), so a
	// bookie whose disk was replaced is told apart from the one it replaced.
	InstanceID string `json:"instanceId,omitempty"`
}

// BookieRegistrationKey is the registration key of the bookie at addr.
func BookieRegistrationKey(addr string) string { return BookieRegistrationsPrefix + addr }

// ParseBookieRegistration decodes a registration stored under key. A registration without
// an address takes the one its key names; an unreadable one is an error (ErrInvalid), never
// trusted.
func ParseBookieRegistration(key string, value []byte) (BookieRegistration, error) {
	var r BookieRegistration
	if err := json.Unmarshal(value, &r); err != nil {
		return BookieRegistration{}, fmt.Errorf("%w: bookie registration %s: %w", ErrInvalid, key, err)
	}
	if r.Address == "" {
		r.Address = strings.TrimPrefix(key, BookieRegistrationsPrefix)
	}
	if r.Address == "" {
		return BookieRegistration{}, fmt.Errorf("%w: bookie registration %s names no address", ErrInvalid, key)
	}
	return r, nil
}

// BookieCookie is the value of a bookie's cookie key (BookieCookiesPrefix + "host:port"):
// the cluster-wide identity of every bookie that ever joined (BookKeeper's cookies in
// ZooKeeper), written once when a bookie first registers and kept after it stops. A bookie
// whose storage instance differs from the cookie of its address (a wiped or replaced disk,
// another bookie's disk) is refused: ledgers name bookies by address, and an empty bookie
// answering "no such entry" for entries its predecessor held would let ledger recovery
// truncate acknowledged data.
type BookieCookie struct {
	Address    string `json:"address"`
	InstanceID string `json:"instanceId"`
	JournalDir string `json:"journalDir,omitempty"`
	LedgerDir  string `json:"ledgerDir,omitempty"`
	// CreatedMillis is when the instance first joined (Unix milliseconds).
	CreatedMillis int64 `json:"createdMillis,omitempty"`
}

// BookieCookieKey is the cookie key of the bookie at addr.
func BookieCookieKey(addr string) string { return BookieCookiesPrefix + addr }

// DecommissionedBookieKey is the decommission mark of the bookie at addr (its value is "{}").
func DecommissionedBookieKey(addr string) string { return DecommissionedBookiesPrefix + addr }

// Bookies lists the registered bookies (writable and read-only), sorted by address; a
// registration that cannot be read is listed with the address its key names.
func (r *Resources) Bookies(ctx context.Context) ([]BookieRegistration, error) {
	kvs, err := r.store.List(ctx, BookieRegistrationsPrefix)
	if err != nil {
		return nil, err
	}
	out := make([]BookieRegistration, 0, len(kvs))
	for _, kv := range kvs {
		reg, err := ParseBookieRegistration(kv.Key, kv.Value)
		if err != nil {
			reg = BookieRegistration{Address: strings.TrimPrefix(kv.Key, BookieRegistrationsPrefix)}
		}
		out = append(out, reg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, nil
}
