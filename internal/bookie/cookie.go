package bookie

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// ErrCookieMismatch: the metadata store's cookie for this bookie's address names another
// storage instance. It wraps storage.ErrCookie.
var ErrCookieMismatch = fmt.Errorf("%w (cluster-wide)", storage.ErrCookie)

// cookieKey is the metadata key of addr's cookie.
func cookieKey(addr string) string { return resources.BookieCookieKey(addr) }

// verifyCookie checks the cluster-wide cookie of addr against the storage's instance: an
// absent cookie is written (first join, or a bookie from before cookies were kept in the
// store), a matching one passes, and another instance's is ErrCookieMismatch, which names
// what to do. It returns the store's error when the store does not answer.
func verifyCookie(ctx context.Context, store metadata.Store, addr string, id storage.Identity, jdir, ldir string) error {
	want := resources.BookieCookie{Address: addr, InstanceID: id.InstanceID(), JournalDir: jdir, LedgerDir: ldir, CreatedMillis: time.Now().UnixMilli()}
	for {
		kv, err := store.Get(ctx, cookieKey(addr))
		if errors.Is(err, metadata.ErrNotFound) {
			val, _ := json.Marshal(want)
			_, err = store.Put(ctx, cookieKey(addr), val, metadata.NotExists)
			if errors.Is(err, metadata.ErrBadVersion) {
				continue // another process of this address wrote one meanwhile: compare with it
			}
			if err != nil {
				return fmt.Errorf("bookie: write cookie %s: %w", cookieKey(addr), err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("bookie: read cookie %s: %w", cookieKey(addr), err)
		}
		var have resources.BookieCookie
		if err := json.Unmarshal(kv.Value, &have); err != nil || have.InstanceID == "" {
			return fmt.Errorf("%w: cookie %s is unreadable (%v); delete it if this bookie's data is the one the cluster knows",
				ErrCookieMismatch, cookieKey(addr), err)
		}
		if have.InstanceID == id.InstanceID() {
			return nil
		}
		what := "its storage is another instance (another bookie's disk, or two bookies on one address)"
		if id.NewInstance() {
			what = "its storage is new and empty: the disk was wiped or replaced, and the entries the old instance held are not here"
		}
		return fmt.Errorf("%w: address %s belongs to storage instance %s (joined %s) in the metadata store, but %s (instance %s). "+
			"Ledgers still name this address, so serving would answer \"no such entry\" for acknowledged data. "+
			"Restore the old disk; or decommission the address, let the auditor re-replicate its ledgers, then delete the cookie "+
			"(magnetar bookie delete-cookie --address %s) and start again",
			ErrCookieMismatch, addr, have.InstanceID, time.UnixMilli(have.CreatedMillis).UTC().Format(time.RFC3339), what, id.InstanceID(), addr)
	}
}

// DeleteCookie removes addr's cluster-wide cookie, so a new storage instance may join at
// that address (BookKeeper's cookie delete). Only for an address no ledger needs any more.
func DeleteCookie(ctx context.Context, store metadata.Store, addr string) error {
	if err := store.Delete(ctx, cookieKey(addr), metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
		return fmt.Errorf("bookie: delete cookie %s: %w", cookieKey(addr), err)
	}
	return nil
}
