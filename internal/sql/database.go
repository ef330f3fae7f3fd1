package sql

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	gms "github.com/dolthub/go-mysql-server/sql"
)

// The catalog: a database (MySQL's word for Pulsar SQL's schema) per namespace, named
// "tenant/namespace" (quote it: `public/default`), a table per persistent topic, partitioned
// topics as one table. Nothing is cached: SHOW TABLES and each query see the topics and
// schemas as they are now.

type provider struct{ srv *Server }

var _ gms.DatabaseProvider = provider{}

func (p provider) Database(ctx *gms.Context, name string) (gms.Database, error) {
	nss, err := p.srv.src.Namespaces(ctx)
	if err != nil {
		return nil, err
	}
	for _, ns := range nss {
		if ns == name {
			return &database{srv: p.srv, src: p.srv.src, name: ns}, nil
		}
	}
	for _, ns := range nss {
		if strings.EqualFold(ns, name) {
			return &database{srv: p.srv, src: p.srv.src, name: ns}, nil
		}
	}
	return nil, gms.ErrDatabaseNotFound.New(name)
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
		out = append(out, &database{srv: p.srv, src: p.srv.src, name: ns})
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
	return d.src.Topics(ctx, d.name)
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
	t, err := newTable(d, name, info)
	if err != nil {
		return nil, false, err
	}
	return t, true, nil
}
