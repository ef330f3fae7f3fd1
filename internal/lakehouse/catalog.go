package lakehouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// TablesRoot is the metadata-store prefix of table records (doc.go, "Table records").
const TablesRoot = resources.IcebergTablesRoot

// Errors of the catalog; rest.go maps them to the REST protocol's error types.
var (
	ErrNoSuchTable     = errors.New("lakehouse: no such table")
	ErrNoSuchNamespace = errors.New("lakehouse: no such namespace")
	ErrTableExists     = errors.New("lakehouse: table already exists")
	// ErrPositionMoved: another writer committed this partition past the position a commit
	// was built from (an ownership change); the commit is refused and the writer restarts
	// from the table's position.
	ErrPositionMoved = errors.New("lakehouse: the table's position of this partition moved")
	// ErrReadOnly refuses changes by catalog clients: Magnetar owns its tables' contents.
	ErrReadOnly = errors.New("lakehouse: tables are written by Magnetar only")
	// errCommitConflict: the table changed between the read a commit was built on and its
	// compare-and-swap, maxCommitAttempts times over.
	errCommitConflict = errors.New("lakehouse: the table changed meanwhile")
)

// Position is the last entry a commit covers, as (ledger, entry); every message of that
// entry (all batch indexes) is in the table. Entry -1 of ledger -1 means nothing yet.
type Position struct {
	Ledger int64 `json:"ledgerId"`
	Entry  int64 `json:"entryId"`
}

// Before tells whether p is an earlier entry than q.
func (p Position) Before(q Position) bool {
	return p.Ledger < q.Ledger || (p.Ledger == q.Ledger && p.Entry < q.Entry)
}

func (p Position) String() string {
	return strconv.FormatInt(p.Ledger, 10) + ":" + strconv.FormatInt(p.Entry, 10)
}

// none is the position before any entry.
var none = Position{-1, -1}

// tableRecord is the value of a table's key (doc.go, "Table records").
type tableRecord struct {
	MetadataLocation string `json:"metadataLocation"`
	// Topic is the topic the table is written from (the partitioned topic's base name).
	Topic string `json:"topic"`
	// Committed is per partition ("-1" for a non-partitioned topic) the last entry in the
	// table. It changes only together with MetadataLocation, in one compare-and-swap.
	Committed map[string]Position `json:"committed"`
	// Gaps counts per partition the entries trimmed from the topic before the writer got to
	// them (icebergWriterMaxHoldSeconds).
	Gaps map[string]int64 `json:"gaps,omitempty"`
}

// Ident names a table: the Pulsar tenant and namespace are the Iceberg namespace's two
// levels, the topic's local name the table's.
type Ident struct{ Tenant, Namespace, Table string }

func (id Ident) key() string {
	return TablesRoot + "/" + url.PathEscape(id.Tenant) + "/" + url.PathEscape(id.Namespace) + "/" + url.PathEscape(id.Table)
}

func (id Ident) String() string { return id.Tenant + "." + id.Namespace + "." + id.Table }

// Catalog keeps table records in the metadata store and table files in the warehouse.
type Catalog struct {
	store     metadata.Store
	warehouse string // s3://bucket/prefix or file:///dir, no trailing slash
	io        fileIO
}

// NewCatalog returns the catalog of the tables in c's warehouse.
func NewCatalog(store metadata.Store, c config.IcebergConfig) (*Catalog, error) {
	io, err := newFileIO(c)
	if err != nil {
		return nil, err
	}
	return &Catalog{store: store, warehouse: strings.TrimSuffix(c.Warehouse, "/"), io: io}, nil
}

// icebergTable is a table's metadata and the file it was read from.
type icebergTable struct {
	md  *Metadata
	loc string
}

// location is the table's directory.
func (c *Catalog) location(id Ident) string {
	return c.warehouse + "/" + url.PathEscape(id.Tenant) + "/" + url.PathEscape(id.Namespace) + "/" + url.PathEscape(id.Table)
}

func (c *Catalog) record(ctx context.Context, id Ident) (tableRecord, metadata.Version, error) {
	var rec tableRecord
	kv, err := c.store.Get(ctx, id.key())
	if errors.Is(err, metadata.ErrNotFound) {
		return rec, 0, fmt.Errorf("%w: %s", ErrNoSuchTable, id)
	}
	if err != nil {
		return rec, 0, fmt.Errorf("lakehouse: reading table %s: %w", id, err)
	}
	if err := json.Unmarshal(kv.Value, &rec); err != nil {
		return rec, 0, fmt.Errorf("lakehouse: table record %s: %w", id, err)
	}
	return rec, kv.Version, nil
}

// Tables lists the tables of a namespace.
func (c *Catalog) Tables(ctx context.Context, tenant, ns string) ([]Ident, error) {
	prefix := TablesRoot + "/" + url.PathEscape(tenant) + "/" + url.PathEscape(ns) + "/"
	kvs, err := c.store.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("lakehouse: listing tables: %w", err)
	}
	var out []Ident
	for _, kv := range kvs {
		name, err := url.PathUnescape(strings.TrimPrefix(kv.Key, prefix))
		if err != nil || strings.Contains(name, "/") {
			continue
		}
		out = append(out, Ident{tenant, ns, name})
	}
	return out, nil
}

// Namespaces lists the (tenant, namespace) pairs that have tables.
func (c *Catalog) Namespaces(ctx context.Context) ([][2]string, error) {
	kvs, err := c.store.List(ctx, TablesRoot+"/")
	if err != nil {
		return nil, fmt.Errorf("lakehouse: listing tables: %w", err)
	}
	var out [][2]string
	for _, kv := range kvs {
		parts := strings.Split(strings.TrimPrefix(kv.Key, TablesRoot+"/"), "/")
		if len(parts) != 3 {
			continue
		}
		t, err1 := url.PathUnescape(parts[0])
		n, err2 := url.PathUnescape(parts[1])
		if err1 != nil || err2 != nil {
			continue
		}
		if p := [2]string{t, n}; !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (c *Catalog) load(ctx context.Context, id Ident) (*icebergTable, tableRecord, error) {
	rec, _, err := c.record(ctx, id)
	if err != nil {
		return nil, rec, err
	}
	md, err := c.open(ctx, rec.MetadataLocation)
	if err != nil {
		return nil, rec, fmt.Errorf("lakehouse: table %s: %w", id, err)
	}
	return &icebergTable{md: md, loc: rec.MetadataLocation}, rec, nil
}

// open reads the metadata file at loc.
func (c *Catalog) open(ctx context.Context, loc string) (*Metadata, error) {
	b, err := c.io.read(ctx, loc)
	if err != nil {
		return nil, err
	}
	md, err := parseMetadata(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return md, nil
}

// Create makes a table written from topic, with schema sc and partition spec spec; it is
// ErrTableExists if the table is there already.
func (c *Catalog) Create(ctx context.Context, id Ident, topic string, sc Schema, spec PartitionSpec, props map[string]string) (*icebergTable, error) {
	md := newMetadata(sc, spec, c.location(id), props)
	mloc, err := c.writeMetadata(ctx, md, 0)
	if err != nil {
		return nil, err
	}
	rec := tableRecord{MetadataLocation: mloc, Topic: topic, Committed: map[string]Position{}}
	b, _ := json.Marshal(rec)
	if _, err := c.store.Put(ctx, id.key(), b, metadata.NotExists); err != nil {
		c.removeQuietly(ctx, mloc)
		if errors.Is(err, metadata.ErrBadVersion) {
			return nil, fmt.Errorf("%w: %s", ErrTableExists, id)
		}
		return nil, fmt.Errorf("lakehouse: recording table %s: %w", id, err)
	}
	return &icebergTable{md: md, loc: mloc}, nil
}

// Drop forgets a table; its files stay (as a plain drop in Iceberg).
func (c *Catalog) Drop(ctx context.Context, id Ident) error {
	if err := c.store.Delete(ctx, id.key(), metadata.AnyVersion); err != nil {
		if errors.Is(err, metadata.ErrNotFound) {
			return fmt.Errorf("%w: %s", ErrNoSuchTable, id)
		}
		return fmt.Errorf("lakehouse: dropping %s: %w", id, err)
	}
	return nil
}

// writeMetadata writes md as the table's metadata file number seq.
func (c *Catalog) writeMetadata(ctx context.Context, md *Metadata, seq int) (string, error) {
	b, err := md.marshal()
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s/metadata/%05d-%s.metadata.json", md.Location, seq, uuid.NewString())
	if err := c.io.write(ctx, name, b); err != nil {
		return "", err
	}
	return name, nil
}

func (c *Catalog) removeQuietly(ctx context.Context, names ...string) {
	for _, n := range names {
		_ = c.io.remove(ctx, n)
	}
}

// metadataSeq is the number in a metadata file's name (00042-<uuid>.metadata.json), or -1.
func metadataSeq(loc string) int {
	base := loc[strings.LastIndexByte(loc, '/')+1:]
	n, err := strconv.Atoi(strings.SplitN(base, "-", 2)[0])
	if err != nil {
		return -1
	}
	return n
}

// positionChange is what a writer's commit claims: partition part was at from and is now at to.
type positionChange struct {
	part     string
	from, to Position
	gap      int64 // entries trimmed before they were written (added to Gaps)
}

// changeFiles are the files of a commit besides its metadata file: written ones, deleted
// when the commit does not happen, and obsolete ones, deleted once it has.
type changeFiles struct {
	written, obsolete []string
}

// maxCommitAttempts bounds the retries of a commit that lost the race for the table to
// another writer (the partitions of a topic share a table; maintenance commits too).
const maxCommitAttempts = 20

// propDeleteOldMetadata is Iceberg's write.metadata.delete-after-commit.enabled.
const propDeleteOldMetadata = "write.metadata.delete-after-commit.enabled"

// commit changes table id: build gets the current metadata (its own copy) and returns the
// next; the new metadata file is written and the record swapped to it, with the position
// change pc if any, in one compare-and-swap. A lost race rebuilds on the new metadata
// (build runs again; its written files of the lost attempt are deleted), up to
// maxCommitAttempts; a moved position is ErrPositionMoved, an error of build is returned
// as is.
func (c *Catalog) commit(ctx context.Context, id Ident, pc *positionChange, build func(base *Metadata) (*Metadata, changeFiles, error)) (*icebergTable, error) {
	for attempt := 1; ; attempt++ {
		t, err := c.commitOnce(ctx, id, pc, build)
		if !errors.Is(err, errCommitConflict) || attempt == maxCommitAttempts {
			return t, err
		}
		// Jittered, so that the partitions' writers do not meet again at once.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(rand.Int64N(int64(50*time.Millisecond) * int64(attempt)))):
		}
	}
}

func (c *Catalog) commitOnce(ctx context.Context, id Ident, pc *positionChange, build func(base *Metadata) (*Metadata, changeFiles, error)) (*icebergTable, error) {
	rec, ver, err := c.record(ctx, id)
	if err != nil {
		return nil, err
	}
	base, err := c.open(ctx, rec.MetadataLocation)
	if err != nil {
		return nil, fmt.Errorf("lakehouse: table %s: %w", id, err)
	}
	if pc != nil {
		at, ok := rec.Committed[pc.part]
		if !ok {
			at = none
		}
		if at != pc.from {
			return nil, fmt.Errorf("%w: partition %s is at %s, the commit starts at %s", ErrPositionMoved, pc.part, at, pc.from)
		}
	}
	prevMs := base.LastUpdatedMs
	md, files, err := build(base)
	if err != nil {
		c.removeQuietly(ctx, files.written...)
		return nil, err
	}
	oldMeta := md.succeed(rec.MetadataLocation, prevMs)
	mloc, err := c.writeMetadata(ctx, md, metadataSeq(rec.MetadataLocation)+1)
	if err != nil {
		c.removeQuietly(ctx, files.written...)
		return nil, err
	}
	rec.MetadataLocation = mloc
	if pc != nil {
		if rec.Committed == nil {
			rec.Committed = map[string]Position{}
		}
		rec.Committed[pc.part] = pc.to
		if pc.gap > 0 {
			if rec.Gaps == nil {
				rec.Gaps = map[string]int64{}
			}
			rec.Gaps[pc.part] += pc.gap
		}
	}
	b, _ := json.Marshal(rec)
	if _, err := c.store.Put(ctx, id.key(), b, ver); err != nil {
		if errors.Is(err, metadata.ErrBadVersion) {
			c.removeQuietly(ctx, append(files.written, mloc)...)
			return nil, fmt.Errorf("%w: %s", errCommitConflict, id)
		}
		// The put may or may not have happened (a timeout): the caller must reload, and the
		// files stay (they may be referenced now).
		return nil, fmt.Errorf("lakehouse: recording commit of %s: %w", id, err)
	}
	if md.Properties[propDeleteOldMetadata] == "true" {
		c.removeQuietly(ctx, oldMeta...)
	}
	c.removeQuietly(ctx, files.obsolete...)
	return &icebergTable{md: md, loc: mloc}, nil
}
