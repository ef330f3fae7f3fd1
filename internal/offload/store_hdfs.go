package offload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"sync"
	"time"

	"github.com/colinmarc/hdfs/v2"
)

// hdfsStore keeps objects as files under one HDFS directory. An object is written to
// "<key>.tmp-<n>" and renamed on commit, so a reader never sees a partial file under its
// real name.
type hdfsStore struct {
	c    *hdfs.Client
	dir  string
	name string

	mu  sync.Mutex
	seq int
}

// hdfsOpTimeout bounds one namenode or datanode exchange: the client has no contexts, so
// deadlines keep a lost connection from hanging an offload forever.
const hdfsOpTimeout = 2 * time.Minute

func openHDFS(addr, dir, user string) (*hdfsStore, error) {
	if user == "" {
		user = os.Getenv("HADOOP_USER_NAME")
	}
	if user == "" {
		user = "root"
	}
	dial := (&net.Dialer{Timeout: 30 * time.Second}).DialContext
	c, err := hdfs.NewClient(hdfs.ClientOptions{
		Addresses:        []string{addr},
		User:             user,
		NamenodeDialFunc: dial,
		DatanodeDialFunc: dial,
	})
	if err != nil {
		return nil, fmt.Errorf("offload: connecting to hdfs://%s: %w", addr, err)
	}
	if dir == "" {
		dir = "/"
	}
	s := &hdfsStore{c: c, dir: dir, name: "hdfs://" + addr + dir}
	if err := c.MkdirAll(dir, 0o755); err != nil {
		c.Close()
		return nil, fmt.Errorf("offload: creating %s: %w", s.name, err)
	}
	return s, nil
}

func (s *hdfsStore) describe() string { return s.name }

func (s *hdfsStore) path(key string) string { return path.Join(s.dir, key) }

func (s *hdfsStore) create(ctx context.Context, key string, _, _ int) (objectWriter, error) {
	s.mu.Lock()
	s.seq++
	tmp := fmt.Sprintf("%s.tmp-%d-%d", s.path(key), os.Getpid(), s.seq)
	s.mu.Unlock()
	_ = s.c.Remove(tmp)
	f, err := s.c.Create(tmp)
	if err != nil {
		return nil, s.wrap("create", key, err)
	}
	return &hdfsWriter{s: s, ctx: ctx, key: key, tmp: tmp, f: f}, nil
}

type hdfsWriter struct {
	s    *hdfsStore
	ctx  context.Context
	key  string
	tmp  string
	f    *hdfs.FileWriter
	done bool
}

func (w *hdfsWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	_ = w.f.SetDeadline(time.Now().Add(hdfsOpTimeout))
	n, err := w.f.Write(p)
	if err != nil {
		return n, w.s.wrap("write", w.key, err)
	}
	return n, nil
}

func (w *hdfsWriter) commit() error {
	w.done = true
	if err := w.ctx.Err(); err != nil {
		w.f.Close()
		_ = w.s.c.Remove(w.tmp)
		return err
	}
	if err := closeHDFSFile(w.ctx, w.f); err != nil {
		_ = w.s.c.Remove(w.tmp)
		return w.s.wrap("commit", w.key, err)
	}
	// Rename does not replace an existing file on HDFS; keys are unique per uuid, so an
	// existing one is a leftover of an earlier attempt with this uuid.
	_ = w.s.c.Remove(w.s.path(w.key))
	if err := w.s.c.Rename(w.tmp, w.s.path(w.key)); err != nil {
		_ = w.s.c.Remove(w.tmp)
		return w.s.wrap("commit", w.key, err)
	}
	return nil
}

// closeHDFSFile closes a written file. The namenode completes a file only once its last
// block is minimally replicated; until then Close reports ErrReplicating with all data
// acknowledged, and closing again (as the Java client does, with backoff) completes it.
// A file left uncompleted keeps its lease and could not be renamed into place.
func closeHDFSFile(ctx context.Context, f *hdfs.FileWriter) error {
	deadline := time.Now().Add(hdfsOpTimeout)
	delay := 20 * time.Millisecond
	for {
		_ = f.SetDeadline(time.Now().Add(hdfsOpTimeout))
		err := f.Close()
		if !hdfs.IsErrReplicating(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
		delay = min(2*delay, 2*time.Second)
	}
}

func (w *hdfsWriter) abort() {
	if w.done {
		return
	}
	w.done = true
	_ = w.f.Close()
	_ = w.s.c.Remove(w.tmp)
}

func (s *hdfsStore) readAt(ctx context.Context, key string, off int64, p []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := s.c.Open(s.path(key))
	if err != nil {
		return s.wrap("read", key, err)
	}
	defer f.Close()
	_ = f.SetDeadline(time.Now().Add(hdfsOpTimeout))
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return corruptf("%s: %s is shorter than %d bytes at %d", s.name, key, len(p), off)
	}
	return s.wrap("read", key, err)
}

func (s *hdfsStore) size(_ context.Context, key string) (int64, error) {
	fi, err := s.c.Stat(s.path(key))
	if err != nil {
		return 0, s.wrap("stat", key, err)
	}
	return fi.Size(), nil
}

func (s *hdfsStore) remove(_ context.Context, key string) error {
	err := s.c.Remove(s.path(key))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return s.wrap("delete", key, err)
	}
	return nil
}

func (s *hdfsStore) close() error { return s.c.Close() }

func (s *hdfsStore) wrap(op, key string, err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s %s/%s: %w", ErrNotFound, op, s.name, key, err)
	}
	return fmt.Errorf("offload: %s %s/%s: %w", op, s.name, key, err)
}
