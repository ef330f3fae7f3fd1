package regression

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/logging"
	"github.com/magnetar-io/magnetar/internal/standalone"
)

// One standalone for the package, on free loopback ports, made on first use and closed by
// TestMain.
var shared struct {
	once sync.Once
	err  error
	dir  string
	sa   *standalone.Standalone
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.sa != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_ = shared.sa.Close(ctx)
		cancel()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// server returns the shared standalone's binary and admin URLs.
func server(t *testing.T) (serviceURL, adminURL string) {
	t.Helper()
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "compat-regression-"); shared.err != nil {
			return
		}
		cfg := config.DefaultStandaloneConfig()
		cfg.DataDir = filepath.Join(shared.dir, "data")
		cfg.MetadataListenClient = "http://127.0.0.1:0"
		cfg.MetadataListenPeer = "http://127.0.0.1:0"
		cfg.BookieAddress = "127.0.0.1:0"
		cfg.Broker.BindAddress = "127.0.0.1"
		cfg.Broker.ServicePort = 0
		cfg.Broker.WebServicePort = 0
		if shared.err = cfg.Validate(); shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.sa, shared.err = standalone.Start(ctx, cfg, logging.Discard())
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return "pulsar://" + shared.sa.BrokerAddr(), "http://" + shared.sa.HTTPAddr()
}

// client is an official Go client of the shared standalone, closed with the test.
func client(t *testing.T) pulsar.Client {
	t.Helper()
	u, _ := server(t)
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: u, OperationTimeout: time.Minute, ConnectionTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// topicName is a fresh persistent topic of public/default.
func topicName(t *testing.T) string {
	return "persistent://public/default/" + filepath.Base(t.Name()) + "-" + time.Now().Format("150405.000000000")
}

// longCtx bounds a test's waits: long enough to only catch hangs on a loaded machine.
func longCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
