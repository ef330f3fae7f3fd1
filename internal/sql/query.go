package sql

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
)

// Errors of a query over its limits. Each message names the config key, so the user knows
// what stopped the query and the operator what to raise.
var (
	ErrTimeout         = errors.New("query exceeded its time limit")
	ErrScannedBytes    = errors.New("query exceeded the bytes it may scan")
	ErrScannedRows     = errors.New("query exceeded the rows it may scan")
	ErrMemory          = errors.New("query exceeded its memory limit")
	ErrTooManyQueries  = errors.New("too many queries running")
	ErrPermission      = errors.New("permission denied")
	ErrMalformedLimits = errors.New("sql: bad limits")
)

// query is the state of one running statement: its limits and what it scanned so far. The
// server puts it in the statement's context; tables read it from there.
type query struct {
	limits config.SQLConfig
	start  time.Time

	entries     atomic.Int64 // entries read from storage
	bytes       atomic.Int64 // their bytes
	rows        atomic.Int64 // messages read (before filters)
	searchReads atomic.Int64 // entries read by publish-time searches
	buffered    atomic.Int64 // bytes of rows decoded and not yet taken by the engine
	engineRows  atomic.Int64 // rows the engine held in caches (sort, group, join)
	rowBytes    atomic.Int64 // average bytes of a decoded row (for engineRows)

	mu  sync.Mutex
	err error // the first limit crossed
}

type queryKey struct{}

func withQuery(ctx context.Context, q *query) context.Context {
	return context.WithValue(ctx, queryKey{}, q)
}

// queryOf returns the statement's query state; a context without one (the engine used
// directly) gets fresh state with the given limits.
func queryOf(ctx context.Context, limits config.SQLConfig) *query {
	if q, ok := ctx.Value(queryKey{}).(*query); ok {
		return q
	}
	return newQuery(limits)
}

func newQuery(limits config.SQLConfig) *query {
	q := &query{limits: limits, start: time.Now()}
	q.rowBytes.Store(64)
	return q
}

// fail records the first limit error; it is what the statement reports.
func (q *query) fail(err error) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err == nil {
		q.err = err
	}
	return q.err
}

func (q *query) failure() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// scanned accounts for entries read and checks the scan limits.
func (q *query) scanned(entries, bytes, rows int64) error {
	q.entries.Add(entries)
	b := q.bytes.Add(bytes)
	r := q.rows.Add(rows)
	if m := q.limits.MaxScannedBytes; m > 0 && b > m {
		return q.fail(fmt.Errorf("%w: read %d bytes, sqlMaxScannedBytes is %d", ErrScannedBytes, b, m))
	}
	if m := q.limits.MaxScannedRows; m > 0 && r > m {
		return q.fail(fmt.Errorf("%w: read %d rows, sqlMaxScannedRows is %d", ErrScannedRows, r, m))
	}
	return nil
}

func (q *query) memoryLimit() int64 { return q.limits.MaxMemoryPerQueryMB << 20 }

// checkMemory fails the query when its buffers and the engine's held rows pass the limit.
func (q *query) checkMemory() error {
	used := q.buffered.Load() + q.engineRows.Load()*q.rowBytes.Load()
	if used > q.memoryLimit() {
		return q.fail(fmt.Errorf("%w: about %d MiB held, sqlMaxMemoryPerQueryMB is %d", ErrMemory, used>>20, q.limits.MaxMemoryPerQueryMB))
	}
	return nil
}

// Stats are what the last statement of a connection scanned (tests and EXPLAIN-like
// checks of pushdown read them).
type Stats struct {
	Entries, Bytes, Rows, SearchReads int64
}

func (q *query) stats() Stats {
	return Stats{Entries: q.entries.Load(), Bytes: q.bytes.Load(), Rows: q.rows.Load(), SearchReads: q.searchReads.Load()}
}

// memoryReporter is the engine's per-statement memory reporter: the engine asks it before
// adding a row to a sort, grouping or join cache, so counting the calls counts the rows it
// holds. MaxMemory is the limit; UsedMemory the estimate.
type memoryReporter struct{ q *query }

func (r memoryReporter) MaxMemory() uint64 { return uint64(r.q.memoryLimit()) }

func (r memoryReporter) UsedMemory() uint64 {
	n := r.q.engineRows.Add(1)
	used := r.q.buffered.Load() + n*r.q.rowBytes.Load()
	if used > r.q.memoryLimit() {
		_ = r.q.checkMemory()
	}
	return uint64(max(used, 0))
}
