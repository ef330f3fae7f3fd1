package sql

import (
	"errors"
	"fmt"
	"strings"

	gms "github.com/dolthub/go-mysql-server/sql"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/columns"
)

// table is one topic (all its partitions) as a table: the value columns of its latest
// schema, then the internal columns. It takes projections (only the columns a query uses
// are decoded) and filters on internal columns (constraints.go).
type table struct {
	db     *database
	name   string
	info   TopicInfo
	layout *columns.Layout
	cols   []columns.Column
	schema gms.Schema

	proj    []string         // nil: every column
	filters []gms.Expression // conjuncts on internal columns the scan narrows by
}

var (
	_ gms.Table          = (*table)(nil)
	_ gms.ProjectedTable = (*table)(nil)
	_ gms.CommentedTable = (*table)(nil)
)

func newTable(db *database, name string, info TopicInfo) (*table, error) {
	layout, err := columns.FromSchema(info.Schema)
	if err != nil {
		return nil, fmt.Errorf("topic %s/%s: its schema has no table form: %w", db.name, name, err)
	}
	t := &table{db: db, name: name, info: info, layout: layout}
	t.cols = append(append(t.cols, layout.Columns...), columns.Internal()...)
	for _, c := range t.cols {
		t.schema = append(t.schema, &gms.Column{Name: c.Name, Type: sqlType(c), Nullable: c.Nullable, Source: name,
			DatabaseSource: db.name, Comment: c.Comment})
	}
	return t, nil
}

func (t *table) Name() string               { return t.name }
func (t *table) String() string             { return t.db.name + "." + t.name }
func (t *table) Collation() gms.CollationID { return gms.Collation_Default }
func (t *table) Comment() string            { return "topic persistent://" + t.db.name + "/" + t.name }
func (t *table) Projections() []string      { return t.proj }
func (t *table) Partitions(*gms.Context) (gms.PartitionIter, error) {
	return gms.PartitionsToPartitionIter(scanPartition{}), nil
}

// scanPartition is the one engine partition of a table: the scan parallelizes by itself
// over the topic's partitions and ledgers (the engine would read partitions one by one).
type scanPartition struct{}

func (scanPartition) Key() []byte { return []byte("scan") }

// Schema is every column. Rows have every column too, but only the projected ones (those
// the statement uses, WithProjections) are decoded; the others are NULL. The engine's
// execution indexes address the full schema whatever the projection.
func (t *table) Schema() gms.Schema { return t.schema }

// projected is the indexes (into cols) of the projected columns.
func (t *table) projected() []int {
	if t.proj == nil {
		all := make([]int, len(t.cols))
		for i := range all {
			all[i] = i
		}
		return all
	}
	out := make([]int, 0, len(t.proj))
	for _, p := range t.proj {
		for i, c := range t.cols {
			if strings.EqualFold(c.Name, p) {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

func (t *table) WithProjections(cols []string) gms.Table {
	c := *t
	c.proj = append([]string{}, cols...)
	return &c
}

// withFilters returns the table with the conjuncts its scan narrows by (analyzer.go).
func (t *table) withFilters(filters []gms.Expression) *table {
	c := *t
	c.filters = filters
	return &c
}

func (t *table) PartitionRows(ctx *gms.Context, _ gms.Partition) (gms.RowIter, error) {
	q := queryOf(ctx, t.db.srv.cfg)
	if err := q.failure(); err != nil {
		return nil, err
	}
	if err := t.db.srv.authorize(ctx, t.db.name, t.name); err != nil {
		return nil, q.fail(err)
	}
	// Constant filters were evaluated when the plan was built; NOW() and parameters are
	// evaluated again here, in the statement's own context.
	cons := openConstraints()
	for _, f := range t.filters {
		cons.handle(ctx, f)
	}
	s, err := t.newScanner(ctx, q, cons)
	if err != nil {
		return nil, err
	}
	s.start(ctx)
	return &rowIter{s: s}, nil
}

// DataLength and RowCount let the planner size joins: entries are known, messages are not.
func (t *table) DataLength(*gms.Context) (uint64, error) { return 0, nil }

// authorize checks that the statement's user may consume the topic.
func (s *Server) authorize(ctx *gms.Context, namespace, topic string) error {
	if !s.authz.Enabled() {
		return nil
	}
	tenant, ns, _ := strings.Cut(namespace, "/")
	p := principalOf(ctx)
	err := s.authz.Topic(ctx, p, auth.Topic{Tenant: tenant, Namespace: ns, Name: "persistent://" + namespace + "/" + topic}, auth.TopicConsume, "")
	if err != nil {
		if !errors.Is(err, auth.ErrAuthorization) {
			return err // the permissions could not be read
		}
		return fmt.Errorf("%w: role %q may not read persistent://%s/%s (consume permission needed)", ErrPermission, p.Role, namespace, topic)
	}
	return nil
}
