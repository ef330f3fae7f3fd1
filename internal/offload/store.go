package offload

import (
	"context"
	"errors"
	"fmt"
	"io"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// ErrNotFound marks a missing object.
var ErrNotFound = errors.New("offload: object not found")

// store is the seam between the offloader and a storage system: whole-object writes that
// become visible only on commit, range reads, size and delete. Implementations: bucketStore
// (gocloud.dev/blob: S3, GCS, Azure, file://) and hdfsStore.
type store interface {
	// create starts writing key. partSize is the multipart part (block) size and
	// concurrency the parts uploaded at once; a store without parts ignores both.
	create(ctx context.Context, key string, partSize, concurrency int) (objectWriter, error)
	// readAt fills p from offset off of key, or fails (a short object is ErrCorrupt).
	readAt(ctx context.Context, key string, off int64, p []byte) error
	// size returns the length of key (ErrNotFound when missing).
	size(ctx context.Context, key string) (int64, error)
	// remove deletes key; a missing key is not an error.
	remove(ctx context.Context, key string) error
	// describe names the store for logs and errors ("s3://bucket", "hdfs://nn/dir").
	describe() string
	close() error
}

// objectWriter writes one object.
type objectWriter interface {
	io.Writer
	// commit finishes the object; it is visible (whole) only if commit returns nil.
	commit() error
	// abort discards what was written; nothing becomes visible.
	abort()
}

// bucketStore is a store over a gocloud.dev bucket.
type bucketStore struct {
	b    *blob.Bucket
	name string
}

func (s *bucketStore) describe() string { return s.name }

func (s *bucketStore) create(ctx context.Context, key string, partSize, concurrency int) (objectWriter, error) {
	wctx, cancel := context.WithCancel(ctx)
	w, err := s.b.NewWriter(wctx, key, &blob.WriterOptions{
		ContentType:    "application/octet-stream",
		BufferSize:     partSize,
		MaxConcurrency: concurrency,
	})
	if err != nil {
		cancel()
		return nil, s.wrap("create", key, err)
	}
	return &bucketWriter{s: s, key: key, w: w, cancel: cancel}, nil
}

type bucketWriter struct {
	s      *bucketStore
	key    string
	w      *blob.Writer
	cancel context.CancelFunc
	done   bool
}

func (w *bucketWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		return n, w.s.wrap("write", w.key, err)
	}
	return n, nil
}

func (w *bucketWriter) commit() error {
	w.done = true
	defer w.cancel()
	if err := safeClose(w.w); err != nil {
		return w.s.wrap("commit", w.key, err)
	}
	return nil
}

// safeClose closes a gocloud writer, turning a panic into an error: gocloud's azureblob
// writer (v0.47) dereferences a pipe its upload goroutine has cleared when the upload
// failed, so a network error or an abort would otherwise crash the broker.
func safeClose(w *blob.Writer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("offload: closing a failed upload: %v", r)
		}
	}()
	return w.Close()
}

// abort cancels the writer's context first: gocloud then aborts the multipart upload
// instead of completing it on Close.
func (w *bucketWriter) abort() {
	if w.done {
		return
	}
	w.done = true
	w.cancel()
	_ = safeClose(w.w)
}

func (s *bucketStore) readAt(ctx context.Context, key string, off int64, p []byte) error {
	r, err := s.b.NewRangeReader(ctx, key, off, int64(len(p)), nil)
	if err != nil {
		return s.wrap("read", key, err)
	}
	defer r.Close()
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return corruptf("%s: %s is shorter than %d bytes at %d", s.name, key, len(p), off)
		}
		return s.wrap("read", key, err)
	}
	return nil
}

func (s *bucketStore) size(ctx context.Context, key string) (int64, error) {
	a, err := s.b.Attributes(ctx, key)
	if err != nil {
		return 0, s.wrap("stat", key, err)
	}
	return a.Size, nil
}

func (s *bucketStore) remove(ctx context.Context, key string) error {
	err := s.b.Delete(ctx, key)
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return s.wrap("delete", key, err)
	}
	return nil
}

func (s *bucketStore) close() error { return s.b.Close() }

// wrap adds the store and key, and maps gocloud's not-found onto ErrNotFound.
func (s *bucketStore) wrap(op, key string, err error) error {
	if errors.Is(err, ErrCorrupt) {
		return err
	}
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("%w: %s %s/%s: %w", ErrNotFound, op, s.name, key, err)
	}
	return fmt.Errorf("offload: %s %s/%s: %w", op, s.name, key, err)
}
