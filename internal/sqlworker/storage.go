package sqlworker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/schema"
	sqlfe "github.com/magnetar-io/magnetar/internal/sql"
	"github.com/magnetar-io/magnetar/internal/txn"
)

// storage is the SQL front end's Source: the catalog from resources (namespaces,
// partitioned topics) and the managed-ledger list (topics that store something), schemas
// from the registry, and reads through the managed ledger's read-only snapshots, with the
// transaction view of each (internal/txn.ReadView) marking what consumers are not given.
type storage struct {
	res     *resources.Resources
	schemas *schema.Registry
	logs    *managedledger.Factory
}

const domain = "persistent"

func (s *storage) Namespaces(ctx context.Context) ([]string, error) {
	tenants, err := s.res.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range tenants {
		nss, err := s.res.Namespaces(ctx, t)
		if err != nil {
			return nil, err
		}
		for _, ns := range nss {
			if !strings.Contains(ns, "/") {
				ns = t + "/" + ns
			}
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	return out, nil
}

func splitNS(namespace string) (string, string, error) {
	t, ns, ok := strings.Cut(namespace, "/")
	if !ok || t == "" || ns == "" || strings.Contains(ns, "/") {
		return "", "", fmt.Errorf("%w: %q is not tenant/namespace", sqlfe.ErrTopicNotFound, namespace)
	}
	return t, ns, nil
}

const partitionSuffix = "-partition-"

func (s *storage) Topics(ctx context.Context, namespace string) ([]string, error) {
	tenant, ns, err := splitNS(namespace)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	parted, err := s.res.PartitionedTopics(ctx, tenant, ns)
	if err != nil {
		return nil, err
	}
	partitioned := map[string]bool{}
	for _, full := range parted {
		if rest, ok := strings.CutPrefix(full, domain+"://"+namespace+"/"); ok {
			partitioned[rest] = true
			seen[rest] = true
		}
	}
	prefix := namespace + "/" + domain + "/"
	names, err := s.logs.ListPrefix(ctx, prefix)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		local := strings.TrimPrefix(n, prefix)
		if base, _, ok := cutPartition(local); ok && partitioned[base] {
			continue
		}
		seen[local] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// cutPartition splits "t-partition-3" into ("t", 3).
func cutPartition(local string) (string, int, bool) {
	i := strings.LastIndex(local, partitionSuffix)
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(local[i+len(partitionSuffix):])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return local[:i], n, true
}

func (s *storage) Topic(ctx context.Context, namespace, topic string) (sqlfe.TopicInfo, error) {
	tenant, ns, err := splitNS(namespace)
	if err != nil {
		return sqlfe.TopicInfo{}, err
	}
	info := sqlfe.TopicInfo{Schema: schema.Schema{Type: schema.Bytes}}
	pm, err := s.res.PartitionedTopic(ctx, domain, tenant, ns, topic)
	switch {
	case err == nil && pm.Partitions > 0:
		info.Partitions = pm.Partitions
	case err != nil && !errors.Is(err, resources.ErrNotFound):
		return info, err
	default:
		name := namespace + "/" + domain + "/" + topic
		names, err := s.logs.ListPrefix(ctx, name)
		if err != nil {
			return info, err
		}
		found := false
		for _, n := range names {
			found = found || n == name
		}
		if !found {
			return info, fmt.Errorf("%w: persistent://%s/%s", sqlfe.ErrTopicNotFound, namespace, topic)
		}
	}
	latest, err := s.schemas.Latest(ctx, schema.ID{Tenant: tenant, Namespace: ns, Topic: topic})
	switch {
	case err == nil && !latest.Deleted:
		info.Schema = latest.Schema
	case err != nil && !errors.Is(err, schema.ErrNotFound):
		return info, err
	}
	return info, nil
}

func (s *storage) SchemaVersion(ctx context.Context, namespace, topic string, version int64) (schema.Schema, error) {
	tenant, ns, err := splitNS(namespace)
	if err != nil {
		return schema.Schema{}, err
	}
	e, err := s.schemas.Get(ctx, schema.ID{Tenant: tenant, Namespace: ns, Topic: topic}, version)
	if errors.Is(err, schema.ErrNotFound) || (err == nil && e.Deleted) {
		return schema.Schema{}, sqlfe.ErrSchemaNotFound
	}
	return e.Schema, err
}

func (s *storage) Open(ctx context.Context, namespace, topic string, partition int) (sqlfe.Log, error) {
	name := namespace + "/" + domain + "/" + topic
	if partition >= 0 {
		name += partitionSuffix + strconv.Itoa(partition)
	}
	snap, err := s.logs.OpenSnapshot(ctx, name)
	if errors.Is(err, managedledger.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", sqlfe.ErrTopicNotFound, name)
	}
	if err != nil {
		return nil, err
	}
	// A table holds what a consumer would read: the transaction view hides markers and the
	// entries of aborted and still open transactions.
	view, err := txn.ReadView(ctx, s.logs, snap)
	if err != nil {
		_ = snap.Close()
		return nil, err
	}
	return snapshotLog{snap, view}, nil
}

type snapshotLog struct {
	s    *managedledger.Snapshot
	view *txn.View // nil: the topic never saw a transaction
}

// Ledgers ends the snapshot where an open transaction's first entry hides the rest.
func (l snapshotLog) Ledgers() []sqlfe.Ledger {
	lim, limited := l.view.Limit()
	var out []sqlfe.Ledger
	for _, sl := range l.s.Ledgers() {
		n := sl.Entries
		if limited {
			if sl.ID > lim.LedgerID {
				break
			}
			if sl.ID == lim.LedgerID && lim.EntryID < n {
				n = max(lim.EntryID, 0)
			}
		}
		size := sl.Size
		if n != sl.Entries && sl.Entries > 0 {
			size = sl.Size / sl.Entries * n
		}
		out = append(out, sqlfe.Ledger{ID: sl.ID, Entries: n, Size: size, Offloaded: sl.Offloaded})
	}
	return out
}

func (l snapshotLog) Read(ctx context.Context, ledgerID, first, last int64) ([]sqlfe.Entry, error) {
	es, err := l.s.Read(ctx, ledgerID, first, last)
	if err != nil {
		return nil, err
	}
	out := make([]sqlfe.Entry, len(es))
	for i, e := range es {
		out[i] = sqlfe.Entry{LedgerID: e.Position.LedgerID, EntryID: e.Position.EntryID, Data: e.Data}
		if l.view != nil {
			out[i].Hidden = l.view.Hidden(e.Position, txn.ParseEntryInfo(e.Data))
		}
	}
	return out, nil
}

func (l snapshotLog) Close() error { return l.s.Close() }
