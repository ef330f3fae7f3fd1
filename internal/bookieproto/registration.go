package bookieproto

// RegistrationPrefix is where bookies register in the metadata store, one session-bound key
// per bookie: RegistrationPrefix + "host:port", with a JSON-encoded Registration as value.
// Ledger clients watch the prefix to learn which bookies are writable.
const RegistrationPrefix = "/bookies/available/"

// Bookie states in a Registration.
const (
	StateWritable = "writable"
	StateReadOnly = "readonly"
)

// Registration is the value of a bookie's registration key.
type Registration struct {
	Address string `json:"address"`        // host:port clients dial
	Rack    string `json:"rack,omitempty"` // e.g. "/rack-a"; empty means the default rack
	State   string `json:"state"`          // StateWritable or StateReadOnly
	// InstanceID is the storage instance behind the address (its cookie's id), so a
	// bookie whose disk was replaced is told apart from the one it replaced.
	InstanceID string `json:"instanceId,omitempty"`
}

// CookiePrefix holds the cluster-wide identity of every bookie that ever joined (BookKeeper's
// cookies in ZooKeeper): CookiePrefix + "host:port" = a JSON Cookie, written once when a
// bookie first registers and kept after it stops. A bookie whose storage instance differs
// from the cookie of its address (a wiped or replaced disk, another bookie's disk) is
// refused: ledgers name bookies by address, and an empty bookie answering "no such entry"
// for entries its predecessor held would let ledger recovery truncate acknowledged data.
const CookiePrefix = "/bookies/cookies/"

// Cookie is the value of a bookie's cookie key.
type Cookie struct {
	Address    string `json:"address"`
	InstanceID string `json:"instanceId"`
	JournalDir string `json:"journalDir,omitempty"`
	LedgerDir  string `json:"ledgerDir,omitempty"`
	// CreatedMillis is when the instance first joined (Unix milliseconds).
	CreatedMillis int64 `json:"createdMillis,omitempty"`
}
