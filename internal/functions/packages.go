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

	"github.com/magnetar-io/magnetar/internal/ledger"
)

// packageChunkBytes is the size of one package entry: well under the bookies' frame limit,
// large enough that a 100 MiB binary is 100 entries.
const packageChunkBytes = 1 << 20

// packagePassword guards package ledgers from being opened by accident as topic ledgers.
var packagePassword = []byte("magnetar-functions-package")

// packageStore keeps packages in ledgers (durable and replicated like topic data) and a
// cache of them in files on the worker's disk.
type packageStore struct {
	ledgers  ledger.Client
	replicas int
	dir      string // cache directory
}

// put stores the package read from r (at most limit bytes) in a new ledger.
func (p *packageStore) put(ctx context.Context, r io.Reader, limit int64, fileName string) (PackageRef, error) {
	if p.ledgers == nil {
		return PackageRef{}, errors.New("functions: no ledger storage for packages")
	}
	ack := min(p.replicas, 2)
	w, err := p.ledgers.Create(ctx, ledger.CreateOptions{
		EnsembleSize: p.replicas, WriteQuorum: p.replicas, AckQuorum: ack, Password: packagePassword,
		CustomMetadata: map[string]string{"component": "function-package", "fileName": fileName},
	})
	if err != nil {
		return PackageRef{}, fmt.Errorf("functions: package ledger: %w", err)
	}
	ref := PackageRef{Ledgers: []int64{w.ID()}, FileName: fileName}
	fail := func(err error) (PackageRef, error) {
		_ = w.Close(context.Background())
		_ = p.ledgers.Delete(context.Background(), w.ID())
		return PackageRef{}, err
	}
	h := sha256.New()
	buf := make([]byte, packageChunkBytes)
	lr := &io.LimitedReader{R: r, N: limit + 1}
	for {
		n, rerr := io.ReadFull(lr, buf)
		if n > 0 {
			ref.Size += int64(n)
			if ref.Size > limit {
				return fail(fmt.Errorf("%w: package larger than %d bytes (functionsMaxPackageSizeMB)", errTooLarge, limit))
			}
			h.Write(buf[:n])
			if _, err := w.Append(ctx, append([]byte(nil), buf[:n]...)); err != nil {
				return fail(fmt.Errorf("functions: writing package: %w", err))
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return fail(fmt.Errorf("functions: reading package: %w", rerr))
		}
	}
	if ref.Size == 0 {
		return fail(badField("data", "the package is empty"))
	}
	if err := w.Close(ctx); err != nil {
		return fail(fmt.Errorf("functions: closing package ledger: %w", err))
	}
	ref.SHA256 = hex.EncodeToString(h.Sum(nil))
	return ref, nil
}

var errTooLarge = errors.New("functions: too large")

// write copies the package to w.
func (p *packageStore) write(ctx context.Context, ref PackageRef, w io.Writer) error {
	if p.ledgers == nil {
		return errors.New("functions: no ledger storage for packages")
	}
	for _, id := range ref.Ledgers {
		r, err := p.ledgers.Open(ctx, id, ledger.OpenOptions{Password: packagePassword})
		if err != nil {
			return fmt.Errorf("functions: package ledger %d: %w", id, err)
		}
		lac := r.LastAddConfirmed()
		for first := int64(0); first <= lac; first += 16 {
			entries, err := r.Read(ctx, first, min(first+15, lac))
			if err != nil {
				_ = r.Close()
				return fmt.Errorf("functions: reading package ledger %d: %w", id, err)
			}
			for _, e := range entries {
				if _, err := w.Write(e.Data); err != nil {
					_ = r.Close()
					return err
				}
			}
		}
		_ = r.Close()
	}
	return nil
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

// remove deletes a package's ledgers (after its function is gone).
func (p *packageStore) remove(ctx context.Context, ref PackageRef) error {
	var errs []error
	for _, id := range ref.Ledgers {
		if err := p.ledgers.Delete(ctx, id); err != nil && !errors.Is(err, ledger.ErrNoSuchLedger) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
