package lakehouse

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/offload"
)

// errNotFound marks a table file that is not there.
var errNotFound = errors.New("lakehouse: file not found")

// fileIO reads and writes a warehouse's files by their full locations (s3://bucket/key or
// file:///path), the form table metadata records them in. Files are written whole: a
// reader sees all of a file or nothing (S3 puts; a rename on a file system).
type fileIO interface {
	write(ctx context.Context, loc string, data []byte) error
	read(ctx context.Context, loc string) ([]byte, error)
	remove(ctx context.Context, loc string) error
}

// newFileIO is the IO of a warehouse location's scheme.
func newFileIO(c config.IcebergConfig) (fileIO, error) {
	switch {
	case strings.HasPrefix(c.Warehouse, "s3://"):
		return &s3IO{cfg: c, buckets: map[string]*blob.Bucket{}}, nil
	case strings.HasPrefix(c.Warehouse, "file://"):
		return localIO{}, nil
	}
	return nil, fmt.Errorf("lakehouse: warehouse %q: want s3://bucket/prefix or file:///dir", c.Warehouse)
}

// localIO is a file:// warehouse.
type localIO struct{}

func localPath(loc string) (string, error) {
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != "file" || !filepath.IsAbs(u.Path) {
		return "", fmt.Errorf("lakehouse: %q is not a file:/// location", loc)
	}
	return u.Path, nil
}

func (localIO) write(_ context.Context, loc string, data []byte) error {
	p, err := localPath(loc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("lakehouse: writing %s: %w", loc, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("lakehouse: writing %s: %w", loc, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("lakehouse: writing %s: %w", loc, err)
	}
	return nil
}

func (localIO) read(_ context.Context, loc string) ([]byte, error) {
	p, err := localPath(loc)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", errNotFound, loc)
	}
	if err != nil {
		return nil, fmt.Errorf("lakehouse: reading %s: %w", loc, err)
	}
	return b, nil
}

func (localIO) remove(_ context.Context, loc string) error {
	p, err := localPath(loc)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("lakehouse: removing %s: %w", loc, err)
	}
	return nil
}

// s3IO is an s3:// warehouse (AWS, or an S3-compatible store at icebergS3Endpoint with
// path-style addressing). Buckets are opened on first use.
type s3IO struct {
	cfg     config.IcebergConfig
	mu      sync.Mutex
	buckets map[string]*blob.Bucket
}

func (s *s3IO) bucket(ctx context.Context, loc string) (*blob.Bucket, string, error) {
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return nil, "", fmt.Errorf("lakehouse: %q is not an s3:// location", loc)
	}
	key := strings.TrimPrefix(u.Path, "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.buckets[u.Host]; b != nil {
		return b, key, nil
	}
	b, err := offload.OpenS3Bucket(ctx, offload.S3Bucket{Bucket: u.Host, Region: s.cfg.S3Region, Endpoint: s.cfg.S3Endpoint,
		AccessKey: s.cfg.S3AccessKeyID, Secret: s.cfg.S3SecretAccessKey})
	if err != nil {
		return nil, "", fmt.Errorf("lakehouse: %w", err)
	}
	s.buckets[u.Host] = b
	return b, key, nil
}

func (s *s3IO) write(ctx context.Context, loc string, data []byte) error {
	b, key, err := s.bucket(ctx, loc)
	if err != nil {
		return err
	}
	if err := b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/octet-stream"}); err != nil {
		return fmt.Errorf("lakehouse: writing %s: %w", loc, err)
	}
	return nil
}

func (s *s3IO) read(ctx context.Context, loc string) ([]byte, error) {
	b, key, err := s.bucket(ctx, loc)
	if err != nil {
		return nil, err
	}
	data, err := b.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("%w: %s", errNotFound, loc)
	}
	if err != nil {
		return nil, fmt.Errorf("lakehouse: reading %s: %w", loc, err)
	}
	return data, nil
}

func (s *s3IO) remove(ctx context.Context, loc string) error {
	b, key, err := s.bucket(ctx, loc)
	if err != nil {
		return err
	}
	if err := b.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("lakehouse: removing %s: %w", loc, err)
	}
	return nil
}
