package sql

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	gms "github.com/dolthub/go-mysql-server/sql"

	"github.com/magnetar-io/magnetar/internal/auth"
)

// The catalog: a database (MySQL's word for Pulsar SQL's schema) per namespace, named
// "tenant/namespace" (quote it: `public/default`), a table per persistent topic, partitioned
// topics as one table. Nothing is cached: SHOW TABLES and each query see the topics and
// schemas as they are now. With authorization on, the listings (SHOW SCHEMAS, SHOW TABLES,
// information_schema) show each role only the topics it may consume and the namespaces
// holding one (or granting consume namespace-wide), as Trino's access control filters
// them; naming a topic it may not consume (SELECT, DESCRIBE) is error 1142, and a namespace it
// may not see is an unknown database (1049), as one that does not exist.

type provider struct{ srv *Server }

var _ gms.DatabaseProvider = provider{}

// Database finds a namespace by its exact name first, then ignoring case. A namespace the
// statement's role may not see (namespaceVisible) is not found, the same error 1049 as a
// namespace that does not exist (USE, SHOW TABLES FROM, SELECT ... FROM ns.t), so that
// names cannot be probed for existence.
func (p provider) Database(ctx *gms.Context, name string) (gms.Database, error) {
	nss, err := p.srv.src.Namespaces(ctx)
	if err != nil {
		return nil, err
	}
	found := ""
	for _, ns := range nss {
		if ns == name {
			found = ns
			break
		}
		if found == "" && strings.EqualFold(ns, name) {
			found = ns
		}
	}
	if found == "" {
		return nil, gms.ErrDatabaseNotFound.New(name)
	}
	ok, err := p.srv.namespaceVisible(ctx, found)
	if err != nil {
		// Fail closed, and with the same answer: an error here would tell the name exists.
		p.srv.log.Warn("sql: reading the permissions of a namespace", "namespace", found, "err", err)
		ok = false
	}
	if !ok {
		return nil, gms.ErrDatabaseNotFound.New(name)
	}
	return &database{srv: p.srv, src: p.srv.src, name: found}, nil
}

func (p provider) HasDatabase(ctx *gms.Context, name string) bool {
	_, err := p.Database(ctx, name)
	return err == nil
}

func (p provider) AllDatabases(ctx *gms.Context) []gms.Database {
	nss, err := p.srv.src.Namespaces(ctx)
	if err != nil {
		p.srv.log.Warn("sql: listing namespaces", "err", err)
		return nil
	}
	sort.Strings(nss)
	out := make([]gms.Database, 0, len(nss))
	for _, ns := range nss {
		ok, err := p.srv.namespaceVisible(ctx, ns)
		if err != nil {
			// Fail closed: a namespace whose permissions cannot be read is not listed.
			p.srv.log.Warn("sql: reading the permissions of a namespace", "namespace", ns, "err", err)
			continue
		}
		if ok {
			out = append(out, &database{srv: p.srv, src: p.srv.src, name: ns})
		}
	}
	return out
}

// database is one namespace.
type database struct {
	srv  *Server
	src  Source
	name string
}

var _ gms.Database = (*database)(nil)

func (d *database) Name() string { return d.name }

func (d *database) GetTableNames(ctx *gms.Context) ([]string, error) {
	names, err := d.src.Topics(ctx, d.name)
	if err != nil {
		return nil, err
	}
	return d.srv.visibleTopics(ctx, d.name, names)
}

// GetTableInsensitive finds a topic by its exact name first, then ignoring case.
func (d *database) GetTableInsensitive(ctx *gms.Context, name string) (gms.Table, bool, error) {
	info, err := d.src.Topic(ctx, d.name, name)
	if errors.Is(err, ErrTopicNotFound) {
		names, lerr := d.src.Topics(ctx, d.name)
		if lerr != nil {
			return nil, false, lerr
		}
		found := ""
		for _, n := range names {
			if strings.EqualFold(n, name) {
				found = n
				break
			}
		}
		if found == "" {
			return nil, false, nil
		}
		name = found
		info, err = d.src.Topic(ctx, d.name, name)
	}
	if errors.Is(err, ErrTopicNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("topic %s/%s: %w", d.name, name, err)
	}
	if err := d.srv.authorize(ctx, d.name, name); err != nil {
		// Planning stops here (DESCRIBE and SELECT alike), with the statement's error 1142.
		return nil, false, queryOf(ctx, d.srv.cfg).fail(err)
	}
	t, err := newTable(d, name, info)
	if err != nil {
		return nil, false, err
	}
	return t, true, nil
}

// visibleTopics keeps the topics of namespace that the statement's role may consume.
func (s *Server) visibleTopics(ctx *gms.Context, namespace string, names []string) ([]string, error) {
	p := principalOf(ctx)
	if !s.authz.Enabled() || s.authz.IsSuperUser(p) {
		return names, nil
	}
	tenant, ns, _ := strings.Cut(namespace, "/")
	out := names[:0:0]
	for _, n := range names {
		ok, err := s.authz.AllowsTopic(ctx, p, auth.Topic{Tenant: tenant, Namespace: ns, Name: "persistent://" + namespace + "/" + n}, auth.TopicConsume)
		if err != nil {
			return nil, fmt.Errorf("reading the permissions of %s: %w", namespace, err)
		}
		if ok {
			out = append(out, n)
		}
	}
	return out, nil
}

// namespaceVisible tells whether SHOW SCHEMAS lists namespace to the statement's role: it
// may consume every topic there (a namespace-wide grant, or an admin of the tenant), or at
// least one of them.
func (s *Server) namespaceVisible(ctx *gms.Context, namespace string) (bool, error) {
	p := principalOf(ctx)
	if !s.authz.Enabled() || s.authz.IsSuperUser(p) {
		return true, nil
	}
	tenant, ns, _ := strings.Cut(namespace, "/")
	// A topic name that no topic grant names: only namespace-wide grants answer for it.
	if ok, err := s.authz.AllowsTopic(ctx, p, auth.Topic{Tenant: tenant, Namespace: ns, Name: "persistent://" + namespace + "/"}, auth.TopicConsume); err != nil || ok {
		return ok, err
	}
	names, err := s.src.Topics(ctx, namespace)
	if err != nil {
		return false, err
	}
	visible, err := s.visibleTopics(ctx, namespace, names)
	return len(visible) > 0, err
}
