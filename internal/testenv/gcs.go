package testenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// fake-gcs-server, a Google Cloud Storage emulator, from the Go module proxy.
const (
	fakeGCSPkg     = "github.com/fsouza/fake-gcs-server"
	fakeGCSVersion = "v1.56.1"
)

// GCSServer is a running GCS emulator; point a client at Endpoint without authentication.
type GCSServer struct {
	Endpoint string // http://127.0.0.1:port
	Proc     *Process
}

// StartGCS builds fake-gcs-server (once) and starts it on a free loopback port.
func StartGCS(t testing.TB) *GCSServer {
	t.Helper()
	bin := GoBinary(t, "fake-gcs-server", fakeGCSPkg, fakeGCSVersion)
	dir := filepath.Join(t.TempDir(), "gcs")
	mkdir(t, dir)
	port := FreePort(t)
	addr := hostPort(port)
	p := Start(t, bin, []string{"-scheme", "http", "-host", "127.0.0.1", "-port", strconv.Itoa(port),
		"-backend", "filesystem", "-filesystem-root", dir, "-public-host", addr,
		"-external-url", "http://" + addr, "-log-level", "error"}, nil, "")
	WaitTCP(t, p, "fake-gcs-server", addr)
	return &GCSServer{Endpoint: "http://" + addr, Proc: p}
}

// CreateBucket creates a bucket through the JSON API.
func (s *GCSServer) CreateBucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	body := fmt.Sprintf(`{"name":%q}`, name)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.Endpoint+"/storage/v1/b?project=test", bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("testenv: creating gcs bucket %s: %v", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("testenv: creating gcs bucket %s: %s %s", name, resp.Status, b)
	}
}
