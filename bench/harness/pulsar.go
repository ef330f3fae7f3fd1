package harness

import (
	"context"
	"path/filepath"
	"strconv"
)

// The Apache Pulsar peer (issue 25): `pulsar standalone` (testenv.PulsarVersion from Maven
// Central: RocksDB metadata, one bookie, the broker, in one JVM) started through the
// repository's pulsar-server helper, which writes conf/standalone.conf and becomes the JVM.
// It is driven exactly as Magnetar is, with pulsar-client-go and the same batching, so the
// two rows differ only in the server.

// EnsurePulsarServer builds internal/testenv/cmd/pulsar-server into cacheDir, has it fetch
// Apache Pulsar, and returns its path and the Pulsar version it runs.
func EnsurePulsarServer(ctx context.Context, repo, cacheDir string) (bin, version string, err error) {
	return ensureHelper(ctx, repo, cacheDir, "pulsar-server")
}

// pulsarSystem runs Apache Pulsar standalone.
type pulsarSystem struct {
	bin          string
	heap, direct string
	window       int
}

func (p *pulsarSystem) Name() string { return "pulsar" }

func (p *pulsarSystem) Start(ctx context.Context, d Durability, dir string) (*Instance, error) {
	ports, err := freePorts()
	if err != nil {
		return nil, err
	}
	args := []string{"-dir", filepath.Join(dir, "pulsar"), "-heap", p.heap, "-direct-memory", p.direct,
		"-port", ports["port"], "-http-port", ports["http"], "-bookie-port", ports["bookie"],
		"-journal-sync-data=" + strconv.FormatBool(d == D1)}
	return startPulsarProtocol(ctx, p.bin, args, nil, dir, "pulsar://127.0.0.1:"+ports["port"], "", ports, p.window)
}

// pulsarEnv is the report's line for the Pulsar peer.
func pulsarEnv(version, heap, direct string) string {
	return "Apache Pulsar " + version + " standalone (pulsar-broker from Maven Central; RocksDB metadata, one bookie, broker in one JVM; -Xms" +
		heap + " -Xmx" + heap + " -XX:MaxDirectMemorySize=" + direct + ", G1 as conf/pulsar_env.sh)"
}
