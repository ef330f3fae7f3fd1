package offload

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

func newFileOffloader(t *testing.T, dir string, mutate func(*Config)) Offloader {
	t.Helper()
	c := DefaultConfig()
	c.Driver = DriverFilesystem
	c.FileSystemURI = "file://" + dir
	c.MaxBlockSize = 64 << 10
	c.ReadBufferSize = 16 << 10
	if mutate != nil {
		mutate(&c)
	}
	o, err := New(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

func TestFilesystemDriver(t *testing.T) {
	runSuite(t, newFileOffloader(t, t.TempDir(), nil), 64<<10)
}

func s3Config(s *testenv.S3Server, bucket string) Config {
	c := DefaultConfig()
	c.Driver = DriverS3
	c.Bucket = bucket
	c.ServiceEndpoint = s.Endpoint
	c.Region = s.Region
	c.CredentialID, c.CredentialSecret = s.AccessKey, s.SecretKey
	c.MaxBlockSize = 5 << 20
	c.ReadBufferSize = 256 << 10
	return c
}

func TestS3Driver(t *testing.T) {
	s := testenv.StartS3(t)
	s.CreateBucket(t, "offload")
	o, err := New(context.Background(), s3Config(s, "offload"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	runSuite(t, o, 5<<20)
	if keys := s.Keys(t, "offload"); len(keys) != 0 {
		t.Fatalf("objects left after the suite: %v", keys)
	}

	t.Run("WrongCredentials", func(t *testing.T) {
		c := s3Config(s, "offload")
		c.CredentialSecret = "wrong"
		o, err := New(context.Background(), c, Options{Retry: Retry{Attempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		err = o.Check(testCtx(t))
		if err == nil || !strings.Contains(err.Error(), "check of") {
			t.Fatalf("Check with a wrong secret: %v", err)
		}
		t.Logf("wrong credentials: %v", err)
		src := newSource(40, 10, 1, 100, 1)
		if _, err := o.Offload(testCtx(t), src, Ref{LedgerID: 40, UUID: NewUUID()}, nil); err == nil {
			t.Fatal("Offload with a wrong secret succeeded")
		}
	})
	t.Run("MissingBucket", func(t *testing.T) {
		o, err := New(context.Background(), s3Config(s, "no-such-bucket"), Options{Retry: Retry{Attempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		err = o.Check(testCtx(t))
		if err == nil {
			t.Fatal("Check of a missing bucket succeeded")
		}
		t.Logf("missing bucket: %v", err)
	})
	t.Run("NetworkLossMidUpload", func(t *testing.T) {
		p := testenv.StartProxy(t, strings.TrimPrefix(s.Endpoint, "http://"))
		c := s3Config(s, "offload")
		c.ServiceEndpoint = "http://" + p.Addr
		o, err := New(context.Background(), c, Options{Retry: Retry{Attempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		// 12 MiB: the first part is uploaded, then the connection is cut.
		src := newSource(41, 600, 20000, 20000, 9)
		src.before = func(n int) {
			if n == 2 {
				p.Cut()
			}
		}
		ref := Ref{LedgerID: 41, UUID: NewUUID()}
		if _, err := o.Offload(testCtx(t), src, ref, nil); err == nil {
			t.Fatal("Offload succeeded through a cut connection")
		} else {
			t.Logf("network loss: %v", err)
		}
		p.Restore()
		if _, err := o.Open(testCtx(t), ref); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a cut offload left an object: %v", err)
		}
		src.before = nil
		ref2 := Ref{LedgerID: 41, UUID: NewUUID()}
		if _, err := o.Offload(testCtx(t), src, ref2, nil); err != nil {
			t.Fatalf("retry after the network came back: %v", err)
		}
		h, err := o.Open(testCtx(t), ref2)
		if err != nil {
			t.Fatal(err)
		}
		checkRead(t, h, src, 0, 599)
		if err := o.Delete(testCtx(t), ref2); err != nil {
			t.Fatal(err)
		}
		for _, k := range s.Keys(t, "offload") {
			if strings.Contains(k, ref.UUID) {
				t.Fatalf("object %s of the failed attempt left", k)
			}
		}
	})
}

// TestCorruptObjects flips, truncates and replaces bytes of the objects on disk: each is an
// ErrCorrupt, never fewer entries.
func TestCorruptObjects(t *testing.T) {
	dir := t.TempDir()
	o := newFileOffloader(t, dir, func(c *Config) { c.ReadCacheSize = 0 })
	ctx := testCtx(t)
	src := newSource(50, 400, 10, 3000, 11)
	offload := func() Ref {
		ref := Ref{LedgerID: 50, UUID: NewUUID()}
		if _, err := o.Offload(ctx, src, ref, nil); err != nil {
			t.Fatal(err)
		}
		return ref
	}
	edit := func(ref Ref, name string, f func([]byte) []byte) {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	ref := offload()
	edit(ref, DataKey(ref.UUID, 50), func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b })
	h, err := o.Open(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Read(ctx, 0, 399); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("flipped byte: %v", err)
	}

	ref = offload()
	edit(ref, DataKey(ref.UUID, 50), func(b []byte) []byte { return b[:len(b)-100] })
	if _, err := o.Open(ctx, ref); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated data: %v", err)
	}

	ref = offload()
	edit(ref, IndexKey(ref.UUID, 50), func(b []byte) []byte { b[20] ^= 1; return b })
	if _, err := o.Open(ctx, ref); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt index: %v", err)
	}

	ref = offload()
	edit(ref, IndexKey(ref.UUID, 50), func(b []byte) []byte { return b[:len(b)/2] })
	if _, err := o.Open(ctx, ref); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated index: %v", err)
	}
}

// TestReadAheadAndCache: a sequential reader finds the next chunk already loaded, the
// cache never passes its bound, and a cache of 0 still reads correctly.
func TestReadAheadAndCache(t *testing.T) {
	cache := NewChunkCache(256 << 10)
	o := newFileOffloader(t, t.TempDir(), func(c *Config) { c.PrefetchRounds = 2 })
	o.(*blobOffloader).opts.Cache = cache
	ctx := testCtx(t)
	src := newSource(60, 2000, 100, 1000, 12) // ~1.1 MiB in 16 KiB chunks
	ref := Ref{LedgerID: 60, UUID: NewUUID()}
	if _, err := o.Offload(ctx, src, ref, nil); err != nil {
		t.Fatal(err)
	}
	h, err := o.Open(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	rh := h.(*readHandle)
	checkRead(t, h, src, 0, 0)
	next := chunkKey{object: rh.key.object, store: rh.key.store, seq: 1}
	waitFor(t, func() bool { return cache.contains(next) })
	for e := int64(0); e < 2000; e += 37 {
		checkRead(t, h, src, e, min(1999, e+36))
		if st := cache.Stats(); st.Size > st.Max {
			t.Fatalf("cache holds %d bytes, bound %d", st.Size, st.Max)
		}
	}
	if st := cache.Stats(); st.Hits == 0 {
		t.Fatalf("no cache hits: %+v", st)
	}
	o.(*blobOffloader).opts.Cache = NewChunkCache(0)
	checkRead(t, h, src, 0, 1999)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	ctx := testCtx(t)
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition not reached")
		case <-waitTick():
		}
	}
}

func TestAzureDriver(t *testing.T) {
	s := testenv.StartAzurite(t)
	c := DefaultConfig()
	c.Driver = DriverAzure
	c.Bucket = "offload"
	c.ServiceEndpoint = s.Endpoint
	c.CredentialID, c.CredentialSecret = s.Account, s.Key
	c.MaxBlockSize = 256 << 10
	c.ReadBufferSize = 64 << 10
	createAzureContainer(t, c)
	o, err := New(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	runSuite(t, o, c.MaxBlockSize)

	c.CredentialSecret = base64.StdEncoding.EncodeToString(make([]byte, 64))
	bad, err := New(context.Background(), c, Options{Retry: Retry{Attempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if err := bad.Check(testCtx(t)); err == nil {
		t.Fatal("Check with a wrong key succeeded")
	}
}

func TestGCSDriver(t *testing.T) {
	s := testenv.StartGCS(t)
	s.CreateBucket(t, "offload")
	c := DefaultConfig()
	c.Driver = DriverGCS
	c.Bucket = "offload"
	c.ServiceEndpoint = s.Endpoint
	c.MaxBlockSize = 256 << 10
	c.ReadBufferSize = 64 << 10
	o, err := New(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	runSuite(t, o, c.MaxBlockSize)

	c.Bucket = "no-such-bucket"
	bad, err := New(context.Background(), c, Options{Retry: Retry{Attempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if err := bad.Check(testCtx(t)); err == nil {
		t.Fatal("Check of a missing bucket succeeded")
	}
}

func createAzureContainer(t *testing.T, c Config) {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(c.CredentialID, c.CredentialSecret)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := container.NewClientWithSharedKeyCredential(c.ServiceEndpoint+"/"+c.Bucket, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cc.Create(testCtx(t), nil); err != nil {
		t.Fatalf("creating container: %v", err)
	}
}
