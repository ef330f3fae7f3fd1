//go:build hdfs

package offload

import (
	"context"
	"testing"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// TestHDFSDriver runs the driver suite against a real namenode and datanode (Hadoop's
// MiniDFSCluster from Maven Central, testenv.StartHDFS): `make offload-hdfs`. Not in make
// test: the cluster's JVM alone takes longer to start than the CI budget of this package.
func TestHDFSDriver(t *testing.T) {
	h := testenv.StartHDFS(t)
	c := DefaultConfig()
	c.Driver = DriverFilesystem
	c.FileSystemURI = h.URI + "/pulsar/offload"
	c.MaxBlockSize, c.ReadBufferSize = 64<<10, 16<<10
	o, err := New(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	runSuite(t, o, 64<<10)
}
