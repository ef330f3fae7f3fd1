// Package pkgstore keeps function packages in ledgers: durable and replicated like topic
// data, readable from every worker. A package is one ledger of entries of at most ChunkBytes,
// in order; the ledger ids are recorded in the function's metadata by the worker.
//
// It is the one part of the functions worker below the topic service: package bytes are not
// topic data, and a ledger is the cluster's durable blob.
package pkgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/magnetar-io/magnetar/internal/ledger"
)

// ChunkBytes is the size of one package entry: well under the bookies' frame limit, large
// enough that a 100 MiB binary is 100 entries.
const ChunkBytes = 1 << 20

// password guards package ledgers from being opened by accident as topic ledgers.
var password = []byte("magnetar-functions-package")

// ErrTooLarge is a package over the limit given to Put.
var ErrTooLarge = errors.New("pkgstore: package too large")

// ErrEmpty is a package of no bytes.
var ErrEmpty = errors.New("pkgstore: package is empty")

// Ledgers stores packages in ledgers of replicas bookies.
type Ledgers struct {
	Client   ledger.Client
	Replicas int
}

// Put stores what r yields (at most limit bytes) and returns its ledgers, size and SHA-256.
func (l *Ledgers) Put(ctx context.Context, r io.Reader, limit int64, meta map[string]string) (ids []int64, size int64, digest string, err error) {
	reps := max(l.Replicas, 1)
	w, err := l.Client.Create(ctx, ledger.CreateOptions{
		EnsembleSize: reps, WriteQuorum: reps, AckQuorum: min(reps, 2), Password: password, CustomMetadata: meta,
	})
	if err != nil {
		return nil, 0, "", fmt.Errorf("pkgstore: creating a ledger: %w", err)
	}
	fail := func(err error) ([]int64, int64, string, error) {
		_ = w.Close(context.Background())
		_ = l.Client.Delete(context.Background(), w.ID())
		return nil, 0, "", err
	}
	h := sha256.New()
	buf := make([]byte, ChunkBytes)
	lr := &io.LimitedReader{R: r, N: limit + 1}
	for {
		n, rerr := io.ReadFull(lr, buf)
		if n > 0 {
			size += int64(n)
			if size > limit {
				return fail(fmt.Errorf("%w: over %d bytes", ErrTooLarge, limit))
			}
			h.Write(buf[:n])
			if _, err := w.Append(ctx, append([]byte(nil), buf[:n]...)); err != nil {
				return fail(fmt.Errorf("pkgstore: writing: %w", err))
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return fail(fmt.Errorf("pkgstore: reading the upload: %w", rerr))
		}
	}
	if size == 0 {
		return fail(ErrEmpty)
	}
	if err := w.Close(ctx); err != nil {
		return fail(fmt.Errorf("pkgstore: closing the ledger: %w", err))
	}
	return []int64{w.ID()}, size, hex.EncodeToString(h.Sum(nil)), nil
}

// WriteTo copies the package held by ids to out.
func (l *Ledgers) WriteTo(ctx context.Context, ids []int64, out io.Writer) error {
	for _, id := range ids {
		r, err := l.Client.Open(ctx, id, ledger.OpenOptions{Password: password})
		if err != nil {
			return fmt.Errorf("pkgstore: ledger %d: %w", id, err)
		}
		lac := r.LastAddConfirmed()
		for first := int64(0); first <= lac; first += 16 {
			entries, err := r.Read(ctx, first, min(first+15, lac))
			if err != nil {
				_ = r.Close()
				return fmt.Errorf("pkgstore: reading ledger %d: %w", id, err)
			}
			for _, e := range entries {
				if _, err := out.Write(e.Data); err != nil {
					_ = r.Close()
					return err
				}
			}
		}
		_ = r.Close()
	}
	return nil
}

// Delete removes the package's ledgers.
func (l *Ledgers) Delete(ctx context.Context, ids []int64) error {
	var errs []error
	for _, id := range ids {
		if err := l.Client.Delete(ctx, id); err != nil && !errors.Is(err, ledger.ErrNoSuchLedger) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
