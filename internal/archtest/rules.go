package archtest

// Layers, lowest first. A package may import packages of strictly lower layers (and, within
// its own part, anything); a part may import a part of the same or a higher layer only
// through an allow entry. The gaps leave room for new layers without renumbering.
const (
	layerBase      = 0  // config, logging: imported by everything, import nothing of ours
	layerCodec     = 10 // wire formats and the metadata Store interface with its backends
	layerSecurity  = 12 // auth: identities, authorization, TLS config shared by every role
	layerRecords   = 15 // resources: the one owner of every metadata key layout (and auth's policy source)
	layerStorage   = 20 // the BookKeeper client, the bookie server
	layerTier      = 25 // tiered storage under the managed ledger
	layerLog       = 30 // the managed ledger: a topic's log
	layerDomain    = 35 // schema registry, bundle ownership, transactions
	layerColumns   = 37 // a schema's values as typed columns, for every reader of topic data
	layerTopics    = 40 // the topic service every front end uses
	layerOnTopics  = 45 // services built on topics that several front ends share
	layerFront     = 50 // protocol front ends, REST, gateways, tools
	layerWorker    = 55 // runtimes that host front-end-level parts (the functions worker runs io)
	layerCompose   = 60 // composition roots: build a role's process from the parts
	layerCLI       = 70 // the cobra tree
	layerMain      = 80 // cmd/: main only wires
	layerTestSuite = 90 // tests/: suites over real processes
)

// part is one line of the rules: a package and its subpackages (the longest matching path
// wins, so a subpackage may have a line of its own).
type part struct {
	path  string
	layer int
	// testOnly parts may be imported only by _test.go files and by tests/.
	testOnly bool
	// onlyFrom, when set, lists the only parts (besides tests) that may import this one.
	onlyFrom []string
	// deny lists lower parts this one must not import although the layers would allow it
	// (front ends reach storage through the topic service, never around it).
	deny []string
	// allow lists parts of the same or a higher layer this one may import.
	allow []string
}

// frontEndDeny is what a front end must not import: it goes through internal/topics.
var frontEndDeny = []string{"internal/managedledger", "internal/ledger", "internal/bookieproto", "internal/bookie"}

// parts is the rules table; docs/ARCHITECTURE.md §3 shows the same table. One line per part.
var parts = []part{
	{path: "internal/config", layer: layerBase},
	{path: "internal/logging", layer: layerBase},
	// Reading a length-prefixed frame's body as its bytes arrive, for every protocol reader.
	{path: "internal/framebuf", layer: layerBase},
	{path: "internal/framebuf/framebuftest", layer: layerBase, testOnly: true},
	// The time seam of TTL, retention, transaction timeouts and delayed delivery.
	{path: "internal/clock", layer: layerBase},
	// The public SDKs linked into users' functions: they import nothing of ours but themselves.
	{path: "pkg/pf", layer: layerBase},
	{path: "pkg/pfwasm", layer: layerBase},

	{path: "internal/wire", layer: layerCodec},
	{path: "internal/bookieproto", layer: layerCodec},
	{path: "internal/metadata", layer: layerCodec},
	{path: "internal/metadata/storetest", layer: layerCodec, testOnly: true},
	{path: "internal/metadata/registrationtest", layer: layerCodec, testOnly: true},

	{path: "internal/auth", layer: layerSecurity},
	{path: "internal/resources", layer: layerRecords},

	{path: "internal/ledger", layer: layerStorage},
	{path: "internal/ledger/memledger", layer: layerStorage, testOnly: true},
	{path: "internal/bookie", layer: layerStorage, onlyFrom: []string{"internal/standalone", "internal/cli"}},
	{path: "internal/bookie/storage/storagetest", layer: layerStorage, testOnly: true},

	{path: "internal/offload", layer: layerTier},

	{path: "internal/managedledger", layer: layerLog},
	{path: "internal/managedledger/realtest", layer: layerLog, testOnly: true},

	{path: "internal/schema", layer: layerDomain},
	{path: "internal/ownership", layer: layerDomain},
	// Transactions live on managed ledgers (the coordinator's log, each topic's buffer and
	// state log); the topic service calls them for every transactional publish and ack.
	{path: "internal/txn", layer: layerDomain},

	// Topic schemas as typed columns, shared by the SQL front end and the lakehouse writer.
	{path: "internal/columns", layer: layerColumns},

	{path: "internal/topics", layer: layerTopics},

	{path: "internal/lakehouse", layer: layerOnTopics},

	{path: "internal/broker", layer: layerFront, deny: frontEndDeny},
	{path: "internal/admin", layer: layerFront, deny: frontEndDeny},
	{path: "internal/kafka", layer: layerFront, deny: frontEndDeny},
	{path: "internal/sql", layer: layerFront, deny: frontEndDeny},
	{path: "internal/io", layer: layerFront, deny: frontEndDeny},
	{path: "internal/console", layer: layerFront, deny: frontEndDeny},
	{path: "internal/proxy", layer: layerFront, deny: frontEndDeny},
	// perf's bookie load generator speaks the bookie protocol on purpose.
	{path: "internal/perf", layer: layerFront},

	{path: "internal/functions", layer: layerWorker, deny: frontEndDeny},
	// Function packages are blobs in ledgers, not topic data; only the worker's compositions use it.
	{path: "internal/functions/pkgstore", layer: layerDomain, onlyFrom: []string{"internal/standalone", "internal/brokerd", "internal/cli", "internal/functions"}},

	{path: "internal/brokerd", layer: layerCompose},
	{path: "internal/standalone", layer: layerCompose, allow: []string{"internal/brokerd", "internal/sqlworker"}},
	// The SQL server's process: reads storage through managed-ledger snapshots; shares the
	// broker's offloader construction.
	{path: "internal/sqlworker", layer: layerCompose, allow: []string{"internal/brokerd"}},
	{path: "internal/devcluster", layer: layerCompose},

	{path: "internal/cli", layer: layerCLI},
	{path: "cmd", layer: layerMain},

	{path: "internal/archtest", layer: layerTestSuite, testOnly: true},
	// testenv fetches and starts third-party servers (PostgreSQL, Kafka, ...) for tests.
	{path: "internal/testenv", layer: layerTestSuite, testOnly: true},
	// testbin builds the magnetar binary for process tests (with -race under -race).
	{path: "internal/testbin", layer: layerTestSuite, testOnly: true},
	{path: "tests", layer: layerTestSuite},
}

// knownViolations are imports that break the rules today and are being removed (issue 15).
// The test fails when one of them no longer occurs, so the list only shrinks: delete the
// line in the change that removes the import.
var knownViolations = []struct{ from, to string }{}

// forbiddenModules are third-party modules non-test code of the module must not import
// (tests may, e.g. as an independent reader of what the product writes), with the reason.
var forbiddenModules = []struct{ path, why string }{
	// Its table package links substrait-go, whose package init loads an extension
	// collection: ~60 ms and 32 MB in every magnetar process before main (issue 24).
	// internal/lakehouse writes the Iceberg format itself; its tests read tables back with
	// iceberg-go.
	{"github.com/apache/iceberg-go", "its package init costs every process tens of milliseconds (issue 24); internal/lakehouse writes Iceberg itself"},
}
