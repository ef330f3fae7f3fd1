package lakehouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3:// for LoadFS
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

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

func (id Ident) iceberg() table.Identifier {
	return table.Identifier{id.Tenant, id.Namespace, id.Table}
}

func (id Ident) String() string { return id.Tenant + "." + id.Namespace + "." + id.Table }

func identOf(ti table.Identifier) (Ident, error) {
	if len(ti) != 3 {
		return Ident{}, fmt.Errorf("%w: %q: a table is tenant.namespace.table", ErrNoSuchTable, strings.Join(ti, "."))
	}
	return Ident{ti[0], ti[1], ti[2]}, nil
}

// Catalog keeps table records in the metadata store and table files in the warehouse. It
// implements iceberg-go's table.CatalogIO, so transactions commit through it.
type Catalog struct {
	store     metadata.Store
	warehouse string // s3://bucket/prefix or file:///dir, no trailing slash
	props     iceberg.Properties
}

// NewCatalog returns a catalog of tables under warehouse; props configure the file IO
// (iceberg-go's s3.* keys).
func NewCatalog(store metadata.Store, warehouse string, props iceberg.Properties) *Catalog {
	return &Catalog{store: store, warehouse: strings.TrimSuffix(warehouse, "/"), props: props}
}

func (c *Catalog) fs(ctx context.Context) (icebergio.IO, error) {
	return icebergio.LoadFS(ctx, c.props, c.warehouse)
}

func (c *Catalog) wfs(ctx context.Context) (icebergio.WriteFileIO, error) {
	fs, err := c.fs(ctx)
	if err != nil {
		return nil, err
	}
	w, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("lakehouse: the warehouse %s cannot be written", c.warehouse)
	}
	return w, nil
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

// LoadTable implements table.CatalogIO.
func (c *Catalog) LoadTable(ctx context.Context, ti table.Identifier) (*table.Table, error) {
	id, err := identOf(ti)
	if err != nil {
		return nil, err
	}
	t, _, err := c.load(ctx, id)
	return t, err
}

func (c *Catalog) load(ctx context.Context, id Ident) (*table.Table, tableRecord, error) {
	rec, _, err := c.record(ctx, id)
	if err != nil {
		return nil, rec, err
	}
	t, err := c.open(ctx, id, rec.MetadataLocation)
	return t, rec, err
}

func (c *Catalog) open(ctx context.Context, id Ident, loc string) (*table.Table, error) {
	fs, err := c.fs(ctx)
	if err != nil {
		return nil, err
	}
	t, err := table.NewFromLocation(ctx, id.iceberg(), loc, func(context.Context) (icebergio.IO, error) { return fs, nil }, c)
	if err != nil {
		return nil, fmt.Errorf("lakehouse: reading %s of %s: %w", loc, id, err)
	}
	return t, nil
}

// tableOf is the table of metadata md at loc.
func (c *Catalog) tableOf(id Ident, md table.Metadata, loc string) *table.Table {
	return table.New(id.iceberg(), md, loc, func(ctx context.Context) (icebergio.IO, error) { return c.fs(ctx) }, c)
}

// Create makes a table written from topic, with schema sc and partition spec spec; it is
// ErrTableExists if the table is there already.
func (c *Catalog) Create(ctx context.Context, id Ident, topic string, sc *iceberg.Schema, spec iceberg.PartitionSpec, props iceberg.Properties) (*table.Table, error) {
	loc := c.location(id)
	if props == nil {
		props = iceberg.Properties{}
	}
	props[table.PropertyFormatVersion] = "2"
	md, err := table.NewMetadata(sc, &spec, table.UnsortedSortOrder, loc, props)
	if err != nil {
		return nil, fmt.Errorf("lakehouse: new table %s: %w", id, err)
	}
	mloc, err := c.writeMetadata(ctx, md, loc, 0)
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
	return c.open(ctx, id, mloc)
}

// Drop forgets a table and, with purge, deletes its files' directory entries known to the
// current metadata (data files stay with a plain drop, as in Iceberg).
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
func (c *Catalog) writeMetadata(ctx context.Context, md table.Metadata, loc string, seq int) (string, error) {
	b, err := json.Marshal(md)
	if err != nil {
		return "", fmt.Errorf("lakehouse: encoding table metadata: %w", err)
	}
	fs, err := c.wfs(ctx)
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s/metadata/%05d-%s.metadata.json", loc, seq, uuid.NewString())
	if err := fs.WriteFile(name, b); err != nil {
		return "", fmt.Errorf("lakehouse: writing %s: %w", name, err)
	}
	return name, nil
}

func (c *Catalog) removeQuietly(ctx context.Context, name string) {
	if fs, err := c.fs(ctx); err == nil {
		_ = fs.Remove(name)
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

// commitKey carries a writer's position change through iceberg-go's commit into
// CommitTable.
type commitKey struct{}

// positionChange is what a writer's commit claims: partition part was at from and is now at to.
type positionChange struct {
	part     string
	from, to Position
	gap      int64 // entries trimmed before they were written (added to Gaps)
}

// withPosition returns ctx carrying the position change of the commit made with it.
func withPosition(ctx context.Context, pc positionChange) context.Context {
	return context.WithValue(ctx, commitKey{}, pc)
}

// CommitTable implements table.CatalogIO: it checks the requirements against the current
// metadata, applies the updates, writes the new metadata file and swaps the record to it,
// with the position change of the context if any, in one compare-and-swap. A lost race is
// table.ErrCommitFailed (iceberg-go refreshes and replays); a moved position is
// ErrPositionMoved.
func (c *Catalog) CommitTable(ctx context.Context, ti table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	id, err := identOf(ti)
	if err != nil {
		return nil, "", err
	}
	rec, ver, err := c.record(ctx, id)
	if err != nil {
		return nil, "", err
	}
	cur, err := c.open(ctx, id, rec.MetadataLocation)
	if err != nil {
		return nil, "", err
	}
	base := cur.Metadata()
	for _, r := range reqs {
		if err := r.Validate(base); err != nil {
			return nil, "", fmt.Errorf("%w: %w", table.ErrCommitFailed, err)
		}
	}
	pc, hasPos := ctx.Value(commitKey{}).(positionChange)
	if hasPos {
		at, ok := rec.Committed[pc.part]
		if !ok {
			at = none
		}
		if at != pc.from {
			return nil, "", fmt.Errorf("%w: partition %s is at %s, the commit starts at %s", ErrPositionMoved, pc.part, at, pc.from)
		}
	}
	md, err := table.UpdateTableMetadata(base, updates, rec.MetadataLocation)
	if err != nil {
		return nil, "", fmt.Errorf("lakehouse: applying updates to %s: %w", id, err)
	}
	mloc, err := c.writeMetadata(ctx, md, md.Location(), metadataSeq(rec.MetadataLocation)+1)
	if err != nil {
		return nil, "", err
	}
	rec.MetadataLocation = mloc
	if hasPos {
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
			c.removeQuietly(ctx, mloc)
			return nil, "", fmt.Errorf("%w: %s changed meanwhile", table.ErrCommitFailed, id)
		}
		// The put may or may not have happened (a timeout): the caller must reload.
		return nil, "", fmt.Errorf("lakehouse: recording commit of %s: %w", id, err)
	}
	return md, mloc, nil
}
