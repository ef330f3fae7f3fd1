package functions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/magnetar-io/magnetar/internal/resources"
)

// Blobs stores package bytes durably; pkgstore.Ledgers keeps them in ledgers. The
// composition root passes one in, so the worker itself never reaches below the topic
// service.
type Blobs interface {
	Put(ctx context.Context, r io.Reader, limit int64, meta map[string]string) (ids []int64, size int64, digest string, err error)
	WriteTo(ctx context.Context, ids []int64, w io.Writer) error
	Delete(ctx context.Context, ids []int64) error
}

var errTooLarge = errors.New("functions: too large")

// packageStore keeps packages in Blobs and a cache of them in files on the worker's disk.
type packageStore struct {
	blobs Blobs
	dir   string // cache directory
}

func (p *packageStore) put(ctx context.Context, r io.Reader, limit int64, fileName string) (PackageRef, error) {
	if p.blobs == nil {
		return PackageRef{}, errors.New("functions: no package storage")
	}
	ids, size, digest, err := p.blobs.Put(ctx, r, limit, map[string]string{"component": "function-package", "fileName": fileName})
	if err != nil {
		if errors.Is(err, errTooLargeBlob) {
			return PackageRef{}, fmt.Errorf("%w: package larger than %d bytes (functionsMaxPackageSizeMB)", errTooLarge, limit)
		}
		if errors.Is(err, errEmptyBlob) {
			return PackageRef{}, badField("data", "the package is empty")
		}
		return PackageRef{}, err
	}
	return PackageRef{Ledgers: ids, Size: size, SHA256: digest, FileName: fileName}, nil
}

func (p *packageStore) write(ctx context.Context, ref PackageRef, w io.Writer) error {
	if p.blobs == nil {
		return errors.New("functions: no package storage")
	}
	return p.blobs.WriteTo(ctx, ref.Ledgers, w)
}

// local returns a file holding the package, downloading it into the cache when needed and
// checking its digest, so a torn or stale cache file is never run.
func (p *packageStore) local(ctx context.Context, ref PackageRef) (string, error) {
	name := ref.FileName
	if name == "" {
		name = "package"
	}
	dir := filepath.Join(p.dir, "packages", ref.SHA256)
	path := filepath.Join(dir, filepath.Base(name))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".download-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	err = p.write(ctx, ref, io.MultiWriter(tmp, h))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != ref.SHA256 {
		return "", fmt.Errorf("functions: package %s: digest %s, want %s", name, got, ref.SHA256)
	}
	if err := os.Chmod(tmp.Name(), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

// remove deletes a package's blobs (after its function is gone or replaced).
func (p *packageStore) remove(ctx context.Context, ref PackageRef) error {
	if p.blobs == nil || len(ref.Ledgers) == 0 {
		return nil
	}
	return p.blobs.Delete(ctx, ref.Ledgers)
}

// packageURL opens a package of the packages API (function://tenant/namespace/name@version,
// Pulsar's package URLs for functions) straight from its ledgers. The caller needs the
// packages permission on the package's namespace (Options.AuthorizePackage): Pulsar's
// worker downloads it with its own credentials and checks nothing, which would let anyone
// who may create a function read any tenant's packages. The function gets a copy of its
// own (storePackage), so deleting the package later leaves the function running.
func (w *Worker) packageURL(ctx context.Context, raw string) (io.ReadCloser, string, error) {
	n, err := resources.ParsePackageName(raw)
	if err != nil {
		return nil, "", badField("url", "%v", err)
	}
	if n.Type != "function" {
		return nil, "", badField("url", "%q: a function runs a function:// package", raw)
	}
	if w.opts.Resources == nil || w.pkgs.blobs == nil {
		return nil, "", badField("url", "%q: no packages on this worker", raw)
	}
	if w.opts.AuthorizePackage != nil {
		if err := w.opts.AuthorizePackage(ctx, n.Tenant, n.Namespace); err != nil {
			return nil, "", fmt.Errorf("%w: package %s: %w", ErrForbidden, n, err)
		}
	}
	rec, err := w.opts.Resources.Package(ctx, n)
	if errors.Is(err, resources.ErrNotFound) {
		return nil, "", badField("url", "package %s does not exist", n)
	}
	if err != nil {
		return nil, "", err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(w.pkgs.blobs.WriteTo(ctx, rec.Ledgers, pw)) }()
	name := rec.FileName
	if name == "" {
		name = n.Name
	}
	return pr, filepath.Base(name), nil
}
