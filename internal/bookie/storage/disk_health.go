package storage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
)

// health is the read-only state machine. The bookie turns read-only when a directory's
// disk passes diskUsageThreshold or a journal/entry-log/index write fails (Pebble's
// background work included); it turns writable again when usage is under
// diskUsageLwmThreshold (after a usage trip) and a probe write with sync succeeds in every
// directory (after a write error). A background failure Pebble cannot recover from
// (index.Options.OnBackgroundError with fatal) keeps it read-only until a restart.
type health struct {
	d        *Disk
	readOnly atomic.Bool

	mu         sync.Mutex
	byUsage    bool // tripped by the usage threshold
	byError    bool // tripped by a write error
	byFatal    bool // the index's background work failed for good: until a restart
	lastReason string
}

func (h *health) init(d *Disk) { h.d = d }

// indexWritable tells whether the Pebble index may be written. Pebble treats a failed
// commit as fatal (it cannot continue with a broken commit pipeline), so after a write
// error on our files, which on a full disk would likely hit Pebble's WAL next, the index
// is left alone until the disk checker's probe succeeds.
func (h *health) indexWritable() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byFatal {
		return fmt.Errorf("%w: the index takes no writes until the bookie restarts (%s)", ErrReadOnly, h.lastReason)
	}
	if h.byError {
		return fmt.Errorf("%w: index writes wait for the disk to recover (%s)", ErrReadOnly, h.lastReason)
	}
	return nil
}

// writeFailed is called from the journal writer and the flusher on any write error.
func (h *health) writeFailed(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.byError = true
	h.setLocked(true, "write error: "+err.Error())
}

// indexFailed is the index's OnBackgroundError: Pebble's failed flush or compaction.
func (h *health) indexFailed(err error, fatal bool) {
	if !fatal {
		h.writeFailed(fmt.Errorf("index background work: %w", err))
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.byFatal = true
	reason := "index background work failed, restart the bookie: " + err.Error()
	if h.readOnly.Load() { // already read-only for another reason: this one outlasts it
		h.d.log.Error("bookie storage stays read-only until it restarts", "reason", reason)
		h.lastReason = reason
		return
	}
	h.setLocked(true, reason)
}

// setLocked switches the state and logs transitions. Caller holds h.mu.
func (h *health) setLocked(ro bool, reason string) {
	if h.readOnly.Swap(ro) == ro {
		return
	}
	if ro {
		h.d.m.serverStatus.Set(0)
		h.d.log.Warn("bookie storage is read-only: adds are rejected, reads are served", "reason", reason)
	} else {
		h.d.m.serverStatus.Set(1)
		h.d.log.Info("bookie storage is writable again", "was", h.lastReason)
	}
	h.lastReason = reason
}

func (h *health) loop() {
	defer h.d.wg.Done()
	ticker := time.NewTicker(h.d.cfg.DiskCheckInterval)
	defer ticker.Stop()
	for {
		select {
		case <-h.d.closeCh:
			return
		case <-ticker.C:
		}
		h.check()
	}
}

// check runs one disk check.
func (h *health) check() {
	d := h.d
	var usage float64
	for _, dir := range []string{d.jdir, d.ldir} {
		u, err := d.fs.Usage(dir)
		if err != nil {
			d.log.Warn("disk usage check failed", "dir", dir, "err", err)
			continue
		}
		usage = max(usage, u)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byFatal {
		return
	}
	if usage >= d.cfg.DiskUsageThreshold {
		h.byUsage = true
		h.setLocked(true, fmt.Sprintf("disk usage %.3f >= diskUsageThreshold %.3f", usage, d.cfg.DiskUsageThreshold))
		return
	}
	if h.byUsage && usage < d.cfg.DiskUsageLwmThreshold {
		h.byUsage = false
	}
	if h.byError {
		if err := h.probe(); err != nil {
			return
		}
		h.byError = false
	}
	if !h.byUsage && !h.byError && h.readOnly.Load() {
		h.setLocked(false, "")
		select { // a flush may have failed: retry it now
		case d.retryCh <- struct{}{}:
		default:
		}
	}
}

// probe writes, syncs and removes a small file in every directory, the index's included
// (Pebble ignores files it does not name).
func (h *health) probe() error {
	for _, dir := range []string{h.d.jdir, h.d.ldir, h.d.indexDir()} {
		name := filepath.Join(dir, ".probe")
		if err := h.d.fs.WriteFileAtomic(name, []byte("probe")); err != nil {
			return err
		}
		_ = h.d.fs.Remove(name)
	}
	return nil
}

// cookieFile is the instance identity file in each directory.
const cookieFile = "COOKIE"

// checkCookies makes sure the journal and ledger directories belong to one instance and
// returns its id. Fresh directories (no cookie, no data) get a new instance id (fresh is
// then true); anything else without a cookie, or with cookies that disagree, is refused
// with ErrCookie.
func checkCookies(fsys vfs.FS, jdir, ldir string, log *slog.Logger) (id string, fresh bool, err error) {
	dirs := []string{jdir, ldir}
	ids := make([]string, len(dirs))
	var have, empty int
	for i, dir := range dirs {
		b, err := fsys.ReadFile(filepath.Join(dir, cookieFile))
		switch {
		case err == nil:
			id, perr := parseCookie(b)
			if perr != nil {
				return "", false, fmt.Errorf("%w: %s: %w", ErrCookie, filepath.Join(dir, cookieFile), perr)
			}
			ids[i] = id
			have++
		case errors.Is(err, fs.ErrNotExist):
			names, lerr := fsys.List(dir)
			if lerr != nil {
				return "", false, fmt.Errorf("storage: list %s: %w", dir, lerr)
			}
			if len(names) > 0 {
				return "", false, fmt.Errorf("%w: %s holds data (%d files) but no cookie; refusing to guess whose it is", ErrCookie, dir, len(names))
			}
			empty++
		default:
			return "", false, fmt.Errorf("storage: read cookie in %s: %w", dir, err)
		}
	}
	if have == 0 {
		buf := make([]byte, 16)
		_, _ = rand.Read(buf)
		id = hex.EncodeToString(buf)
		for _, dir := range dirs {
			data := fmt.Sprintf("magnetar-bookie-cookie 1\ninstance=%s\njournal=%s\nledgers=%s\n", id, jdir, ldir)
			if err := fsys.WriteFileAtomic(filepath.Join(dir, cookieFile), []byte(data)); err != nil {
				return "", false, fmt.Errorf("storage: write cookie in %s: %w", dir, err)
			}
		}
		log.Info("new bookie storage instance", "instance", id)
		return id, true, nil
	}
	if empty > 0 {
		for i, dir := range dirs {
			if ids[i] == "" {
				return "", false, fmt.Errorf("%w: %s has no cookie while the other directory belongs to instance %s: it was wiped or is new; restore it or reformat both",
					ErrCookie, dir, ids[1-i])
			}
		}
	}
	if ids[0] != ids[1] {
		return "", false, fmt.Errorf("%w: %s belongs to instance %s, %s to instance %s", ErrCookie, jdir, ids[0], ldir, ids[1])
	}
	return ids[0], false, nil
}

func parseCookie(b []byte) (string, error) {
	lines := strings.Split(string(b), "\n")
	if len(lines) < 2 || lines[0] != "magnetar-bookie-cookie 1" {
		return "", errors.New("not a cookie file")
	}
	for _, l := range lines[1:] {
		if id, ok := strings.CutPrefix(l, "instance="); ok && id != "" {
			return id, nil
		}
	}
	return "", errors.New("cookie has no instance id")
}
