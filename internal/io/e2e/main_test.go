// Package e2e tests Pulsar IO on Magnetar end to end: a real standalone (etcd, bookie,
// broker, functions worker) driven through the official pulsaradmin and Go clients, against
// real databases and servers started by internal/testenv.
package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	paconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/standalone"
)

var (
	sa      *standalone.Standalone
	testDir string
)

// workerConfig makes failures visible within seconds instead of Pulsar's minutes.
func workerConfig() config.FunctionsWorkerConfig {
	c := config.DefaultFunctionsWorkerConfig()
	c.RescheduleTimeoutMs = 4000
	c.FailureCheckFreqMs = 250
	c.InstanceLivenessCheckFreqMs = 1000
	c.SessionTimeoutMs = 2000
	c.MaxRestartBackoffMs = 2000
	return c
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "io-e2e-")
	if err != nil {
		panic(err)
	}
	testDir = dir
	cfg := config.DefaultStandaloneConfig()
	cfg.DataDir = filepath.Join(dir, "standalone")
	cfg.MetadataListenClient = "http://127.0.0.1:0"
	cfg.MetadataListenPeer = "http://127.0.0.1:0"
	cfg.BookieAddress = "127.0.0.1:0"
	cfg.Broker.BindAddress = "127.0.0.1"
	cfg.Broker.ServicePort = 0
	cfg.Broker.WebServicePort = 0
	cfg.Functions = workerConfig()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	var logger *slog.Logger
	if os.Getenv("IO_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	sa, err = standalone.Start(ctx, cfg, logger)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start standalone:", err)
		os.Exit(1)
	}
	if err := waitLeader(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	_ = sa.Close(ctx)
	cancel()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// waitLeader waits for the functions worker to lead (admin writes go to the leader).
func waitLeader() error {
	deadline := time.Now().Add(hangLimit)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + sa.HTTPAddr() + "/admin/v2/worker/cluster/leader")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("no functions worker leader after %s", hangLimit)
}

func admin(t testing.TB) pa.Client {
	t.Helper()
	c, err := pa.New(&paconfig.Config{WebServiceURL: "http://" + sa.HTTPAddr()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func client(t testing.TB) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + sa.BrokerAddr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// hangLimit only catches hangs: every wait is on a condition.
var hangLimit = func() time.Duration {
	if os.Getenv("IO_TEST_HANG") != "" {
		return 30 * time.Second
	}
	return 4 * time.Minute
}()

// eventually polls cond until it holds.
func eventually(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(hangLimit)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s (last: %v)", what, last)
}
