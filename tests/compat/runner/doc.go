// Command gosuite runs the official Go client's own test suites, unchanged, against Magnetar
// and prints a pass/fail table (`make compat`; docs/compatibility.md).
//
// What it does, in order:
//
//  1. Fetches github.com/apache/pulsar-client-go at -version from the Go module proxy
//     (`go mod download`, tests included) and copies it, writable, under
//     ~/.cache/magnetar-compat/ (the module cache is read-only, and some tests write files).
//     Nothing of it is committed.
//  2. Compiles one test binary per suite (`go test -c`): ./pulsar, ./pulsaradmin/pkg/admin,
//     and ./pulsar with -tags clustered.
//  3. Re-executes itself in new network and mount namespaces (we are root). The client's
//     tests dial the default ports (localhost:6650, :6651, :8080, :8443) from constants,
//     and its CI starts Pulsar with a standalone.conf that binds them; a private network
//     namespace has them free without touching anyone else's servers. The mount namespace
//     puts the client's integration-tests files where its CI image has them (/pulsar/certs,
//     /pulsar/tokens, /pulsar/conf: the paths its standalone.conf names) and gives the
//     clustered suite an /etc/hosts with broker-1 and broker-2.
//  4. Starts `magnetar standalone --config /pulsar/conf/standalone.conf` as
//     scripts/pulsar-test-service-start.sh starts Pulsar, waits for /metrics, and applies that
//     script's permissions (tenant public admin role anonymous, produce/consume grants,
//     tenant private, namespace private/auth).
//  5. Runs every top-level test as its own process with a time limit, in the package's
//     directory (the tests read ../integration-tests/...), restarting the server if a test
//     left it dead, and keeps each test's output under -out.
//  6. Prints the table and "N passed, N failed" and writes results.md and results.json.
//
// The clustered suite runs against `magnetar dev-cluster` with its brokers advertised as
// broker-1 and broker-2 on port 6650 of their own loopback addresses, as the client's
// docker-compose cluster has them.
package main
