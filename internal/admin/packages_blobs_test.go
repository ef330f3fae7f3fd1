package admin_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	paconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"

	"github.com/magnetar-io/magnetar/internal/admin"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// failingBlobs keeps packages in memory; failAfter >= 0 makes WriteTo fail after that many
// bytes.
type failingBlobs struct {
	mu        sync.Mutex
	data      map[int64][]byte
	next      int64
	failAfter int
}

func (b *failingBlobs) Put(_ context.Context, r io.Reader, limit int64, _ map[string]string) ([]int64, int64, string, error) {
	d, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, 0, "", err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	b.data[b.next] = d
	return []int64{b.next}, int64(len(d)), "digest", nil
}

func (b *failingBlobs) WriteTo(_ context.Context, ids []int64, w io.Writer) error {
	b.mu.Lock()
	d, fail := b.data[ids[0]], b.failAfter
	b.mu.Unlock()
	if fail < 0 {
		_, err := w.Write(d)
		return err
	}
	if _, err := w.Write(d[:fail]); err != nil {
		return err
	}
	return errors.New("bookies unreachable")
}

func (b *failingBlobs) Delete(context.Context, []int64) error { return nil }

func (b *failingBlobs) setFail(n int) {
	b.mu.Lock()
	b.failAfter = n
	b.mu.Unlock()
}

// TestPackageDownloadFailures: storage failing before any byte is sent is a 500 with a
// reason; failing midway cuts the connection, so the client never takes a short body for
// the package.
func TestPackageDownloadFailures(t *testing.T) {
	blobs := &failingBlobs{data: map[int64][]byte{}, failAfter: -1}
	srv := httptest.NewServer(admin.Handler(admin.Config{Resources: resources.New(memstore.New(memstore.DefaultOptions())), Packages: blobs}))
	t.Cleanup(srv.Close)
	c, err := pa.New(&paconfig.Config{WebServiceURL: srv.URL, PulsarAPIVersion: paconfig.V3})
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("package "), 4096)
	if err := c.Packages().Upload("sink://t/ns/s@1", writeFile(t, "s.nar", data), "", "", nil); err != nil {
		t.Fatal(err)
	}
	get := func() (int, []byte, error) {
		resp, err := http.Get(srv.URL + "/admin/v3/packages/sink/t/ns/s/1")
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	if code, b, err := get(); code != 200 || err != nil || !bytes.Equal(b, data) {
		t.Fatalf("download: %d %d bytes %v", code, len(b), err)
	}
	blobs.setFail(0)
	if code, b, err := get(); code != 500 || err != nil || !strings.Contains(string(b), "bookies unreachable") {
		t.Fatalf("failure before any byte: %d %s %v, want 500 with the reason", code, b, err)
	}
	blobs.setFail(1000)
	if code, b, err := get(); err == nil { // the headers may or may not have gone out
		t.Fatalf("failure midway: %d, %d bytes and no error: want the connection cut", code, len(b))
	}
}
