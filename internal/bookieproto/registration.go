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
}
