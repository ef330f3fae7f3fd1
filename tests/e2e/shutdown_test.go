package e2e

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/devcluster"
)

// TestSIGTERMIsBoundedWithMetadataStoreGone: the metadata store dies under a running bookie
// and broker; both keep serving, the bookie's session is lost and it keeps retrying its
// registration (and its auditor its election). SIGTERM must still end each process within its
// configured bound (bookieShutdownTimeoutMs, brokerShutdownTimeoutMs: 3 s here); before the
// bound existed the bookie ignored SIGTERM for good. The wait below only catches a hang.
func TestSIGTERMIsBoundedWithMetadataStoreGone(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := devcluster.Start(ctx, devcluster.Options{
		Binary: binary, Dir: dir, Metadata: 1, Bookies: 1, Brokers: 1, NoProxy: true,
		BrokerArgs: []string{"--metadata-store-session-timeout-millis", "2000", "--broker-shutdown-timeout-ms", "3000"},
		BookieArgs: []string{"--metadata-store-session-timeout-millis", "2000", "--bookie-shutdown-timeout-ms", "3000"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(10 * time.Second)
	c.Metadata[0].Kill()
	bookie, broker := c.Bookies[0], c.Brokers[0]
	waitFor(t, "the bookie losing its metadata session", func() (bool, error) {
		b, err := os.ReadFile(bookie.Log())
		return strings.Contains(string(b), "metadata session lost"), err
	})
	for _, p := range []*devcluster.Proc{bookie, broker} {
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*devcluster.Proc{bookie, broker} {
		if !p.Wait(time.Minute) {
			b, _ := os.ReadFile(p.Log())
			lines := strings.Split(string(b), "\n")
			t.Fatalf("%s still runs a minute after SIGTERM with a 3 s bound:\n%s", p.Name, strings.Join(lines[max(0, len(lines)-30):], "\n"))
		}
	}
}
