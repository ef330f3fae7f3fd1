package offload

import (
	"errors"
	"path/filepath"
	"testing"
)

func fileConfig(dir string) Config {
	c := DefaultConfig()
	c.Driver = DriverFilesystem
	c.FileSystemURI = "file://" + dir
	c.MaxBlockSize, c.ReadBufferSize = 64<<10, 16<<10
	return c
}

// The pool shares one offloader per distinct configuration, closes it with its last lease,
// stays within its bound and serves recorded locations from a live offloader.
func TestPool(t *testing.T) {
	ctx := testCtx(t)
	root := t.TempDir()
	a, b := fileConfig(filepath.Join(root, "a")), fileConfig(filepath.Join(root, "b"))
	p := NewPool(Options{}, 2)
	defer p.Close()

	la1, err := p.Acquire(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	la2, err := p.Acquire(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if la1.Offloader() != la2.Offloader() {
		t.Fatal("two offloaders for one configuration")
	}
	lb, err := p.Acquire(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if lb.Offloader() == la1.Offloader() || p.Len() != 2 {
		t.Fatalf("b shares a's offloader (pool has %d)", p.Len())
	}
	c := fileConfig(filepath.Join(root, "c"))
	if _, err := p.Acquire(ctx, c); !errors.Is(err, ErrTooManyOffloaders) {
		t.Fatalf("third configuration past a bound of 2: %v", err)
	}
	bad := a
	bad.FileSystemURI = "ftp://x"
	if _, err := p.Acquire(ctx, bad); !errors.Is(err, ErrConfig) {
		t.Fatalf("invalid configuration: %v", err)
	}

	// A ledger offloaded by a is read through a's offloader, whatever the fallback.
	src := newSource(1, 50, 1, 2000, 9)
	ref := Ref{LedgerID: 1, UUID: NewUUID()}
	if _, err := la1.Offloader().Offload(ctx, src, ref, nil); err != nil {
		t.Fatal(err)
	}
	ref.Driver, ref.Metadata = la1.Offloader().DriverName(), la1.Offloader().DriverMetadata()
	lr, err := p.AcquireAt(ctx, ref.Driver, ref.Metadata, b)
	if err != nil {
		t.Fatal(err)
	}
	if lr.Offloader() != la1.Offloader() {
		t.Fatal("AcquireAt of a's location did not find a's offloader")
	}
	h, err := lr.Offloader().Open(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	checkRead(t, h, src, 0, 49)
	h.Close()
	lr.Release()

	// Released to the last lease, a is closed and gone; its ledger is still readable through
	// an offloader opened at the recorded place with b's settings.
	first := la1.Offloader()
	la1.Release()
	la1.Release() // idempotent
	if p.Len() != 2 {
		t.Fatalf("pool has %d after one of two leases of a ended", p.Len())
	}
	la2.Release()
	if p.Len() != 1 {
		t.Fatalf("pool has %d after a's last lease ended", p.Len())
	}
	if _, err := first.Open(ctx, ref); !errors.Is(err, errClosed) {
		t.Fatalf("a's offloader still open after its last lease: %v", err)
	}
	lr, err = p.AcquireAt(ctx, ref.Driver, ref.Metadata, b)
	if err != nil {
		t.Fatal(err)
	}
	if lr.Offloader() == lb.Offloader() || lr.Offloader().DriverMetadata()["fileSystemURI"] != a.FileSystemURI {
		t.Fatalf("recorded location served by %v", lr.Offloader().DriverMetadata())
	}
	h, err = lr.Offloader().Open(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	checkRead(t, h, src, 0, 49)
	h.Close()
	lr.Release()

	// A pinned offloader is never closed by the pool and does not count against the bound.
	pinned := newFileOffloader(t, filepath.Join(root, "pinned"), nil)
	pc := fileConfig(filepath.Join(root, "pinned"))
	p.Pin(pc, pinned)
	lp, err := p.Acquire(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	if lp.Offloader() != pinned {
		t.Fatal("pinned configuration got another offloader")
	}
	lp.Release()
	if err := pinned.Check(ctx); err != nil {
		t.Fatalf("pinned offloader closed by the pool: %v", err)
	}
	lc, err := p.Acquire(ctx, c)
	if err != nil {
		t.Fatalf("second unpinned configuration next to a pinned one: %v", err)
	}
	lc.Release()
	lb.Release()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Acquire(ctx, a); !errors.Is(err, errClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
}
