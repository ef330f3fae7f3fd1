package lakehouse

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/magnetar-io/magnetar/internal/columns"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// snapshotMaxAge is how long replaced snapshots stay readable for time travel (Iceberg's
// history.expire.max-snapshot-age-ms default is 5 days).
const snapshotMaxAge = 5 * 24 * time.Hour

// maintain runs, for each table whose lowest written partition is here, retention and
// compaction once per icebergCompactionIntervalSeconds, and releases the hold of writers
// stuck for longer than icebergWriterMaxHoldSeconds.
func (s *Service) maintain(ctx context.Context, want map[string]Policy) {
	s.releaseStuckHolds(ctx, want)
	if s.cfg.CompactionIntervalSeconds == 0 {
		return
	}
	lowest := map[Ident]topics.Name{}
	pols := map[Ident]Policy{}
	for name, pol := range want {
		n, _ := topics.ParseName(name)
		b := n.Base()
		id := Ident{b.Tenant, b.Namespace, b.Local}
		if cur, ok := lowest[id]; !ok || n.Partition < cur.Partition {
			lowest[id], pols[id] = n, pol
		}
	}
	every := time.Duration(s.cfg.CompactionIntervalSeconds) * time.Second
	for id := range lowest {
		key := id.String()
		s.mu.Lock()
		last, seen := s.maint[key]
		if !seen {
			// The first round waits an interval: a broker that just started has writers
			// catching up first.
			s.maint[key] = time.Now()
		}
		due := seen && time.Since(last) >= every && !last.IsZero()
		if due {
			s.maint[key] = time.Time{} // running
		}
		s.mu.Unlock()
		if !due {
			continue
		}
		s.wg.Add(1)
		go func(id Ident, pol Policy) {
			defer s.wg.Done()
			if err := s.maintainTable(s.ctx, id, pol); err != nil && s.ctx.Err() == nil {
				s.log.Warn("iceberg table maintenance", "table", id.String(), "error", err)
			}
			s.mu.Lock()
			s.maint[id.String()] = time.Now()
			s.mu.Unlock()
		}(id, pols[id])
	}
}

// maintainTable removes the rows older than the table's retention and compacts small files.
func (s *Service) maintainTable(ctx context.Context, id Ident, pol Policy) error {
	if pol.RetentionHours >= 0 {
		if err := s.expireRows(ctx, id, time.Now().Add(-time.Duration(pol.RetentionHours)*time.Hour)); err != nil {
			return err
		}
	}
	if _, err := s.Compact(ctx, id); err != nil {
		return err
	}
	return s.expireSnapshots(ctx, id, snapshotMaxAge)
}

// expireRows deletes the rows published before cutoff: whole data files whose
// __publish_time__ bounds lie before it, and the files that straddle it rewritten with the
// younger rows only.
func (s *Service) expireRows(ctx context.Context, id Ident, cutoff time.Time) error {
	tbl, _, err := s.cat.load(ctx, id)
	if err != nil {
		return err
	}
	_, live, err := s.cat.snapshotFiles(ctx, tbl.md.current(), true)
	if err != nil {
		return err
	}
	pt, ok := tbl.md.schema().field(columns.ColPublishTime)
	if !ok {
		return nil
	}
	cut := cutoff.UnixMicro()
	remove := map[string]bool{}
	var straddle []dataFile
	for _, lf := range live {
		f := lf.entry.File
		lo, okLo := boundOf(f.LowerBounds, pt.ID)
		hi, okHi := boundOf(f.UpperBounds, pt.ID)
		switch {
		case okLo && lo >= cut:
		case okHi && hi < cut:
			remove[f.Path] = true
		default:
			remove[f.Path] = true
			straddle = append(straddle, f)
		}
	}
	if len(remove) == 0 {
		return nil
	}
	keep := func(rb *rowBuffer, vals []any) bool {
		t, ok := vals[rb.boundsSlot].(time.Time)
		return !ok || t.UnixMicro() >= cut
	}
	added, err := s.rewrite(ctx, tbl.md, [][]dataFile{straddle}, keep)
	if err != nil {
		return fmt.Errorf("retention of %s: %w", id, err)
	}
	op := "delete"
	if len(added) > 0 {
		op = "overwrite"
	}
	_, err = s.cat.commit(ctx, id, nil, func(md *Metadata) (*Metadata, changeFiles, error) {
		return s.cat.replaceFiles(ctx, md, remove, added, op, map[string]string{"magnetar.operation": "retention"})
	})
	if err != nil {
		s.cat.removeQuietly(ctx, paths(added)...)
		if errors.Is(err, errFilesGone) {
			return nil // another run got there first
		}
		return fmt.Errorf("retention of %s: %w", id, err)
	}
	return nil
}

func boundOf(kvs *[]boundKV, id int) (int64, bool) {
	b, ok := bound(kvs, id)
	if !ok {
		return 0, false
	}
	return parseLongBound(b)
}

func paths(fs []dataFile) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Path
	}
	return out
}

// rewrite reads each group of data files and writes its rows (those keep accepts, all with
// nil) in the table's current schema as new data files, one per group and partition.
// Columns are matched by field id, so older files' columns land in their current names and
// types.
func (s *Service) rewrite(ctx context.Context, md *Metadata, groups [][]dataFile, keep func(*rowBuffer, []any) bool) ([]dataFile, error) {
	sc := md.schema()
	var out []dataFile
	for _, g := range groups {
		if len(g) == 0 {
			continue
		}
		rb, err := newRowBuffer(sc, md.spec())
		if err != nil {
			return nil, err
		}
		for _, f := range g {
			if err := s.readInto(ctx, rb, sc, f.Path, keep); err != nil {
				rb.release()
				s.cat.removeQuietly(ctx, paths(out)...)
				return nil, err
			}
		}
		dfs, err := writeDataFiles(ctx, s.cat.io, md.Location, md.spec(), rb.take())
		rb.release()
		if err != nil {
			s.cat.removeQuietly(ctx, paths(out)...)
			return nil, err
		}
		out = append(out, dfs...)
	}
	return out, nil
}

// readInto appends the rows of the data file at path to rb.
func (s *Service) readInto(ctx context.Context, rb *rowBuffer, sc *Schema, path string, keep func(*rowBuffer, []any) bool) error {
	b, err := s.cat.io.read(ctx, path)
	if err != nil {
		return err
	}
	t, err := decodeParquet(ctx, b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer t.Release()
	slots := make([]int, t.NumCols())
	for j, f := range t.Schema().Fields() {
		slots[j] = -1
		if cf, ok := sc.fieldByID(fieldIDOf(f)); ok {
			slots[j] = rb.slot(cf.Name)
		}
	}
	// keep looks at values by buffer slot; vals is in the file's column order.
	byslot := make([]any, len(rb.schema.Fields()))
	vals := make([]any, t.NumCols())
	tr := array.NewTableReader(t, 64<<10)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			clear(byslot)
			for j := range vals {
				vals[j] = arrowValue(rec.Column(j), r)
				if slots[j] >= 0 {
					byslot[slots[j]] = vals[j]
				}
			}
			if keep == nil || keep(rb, byslot) {
				rb.appendRow(slots, vals)
			}
		}
	}
	return tr.Err()
}

// Compact rewrites a table's small data files (under three quarters of
// icebergTargetFileSizeBytes) into files of about that size, in partitions that have at
// least icebergCompactionMinFiles of them; it returns how many files it replaced (0:
// nothing to do). A table whose appends left many manifests gets them merged into one even
// when no partition needs compaction.
func (s *Service) Compact(ctx context.Context, id Ident) (int, error) {
	tbl, _, err := s.cat.load(ctx, id)
	if err != nil {
		return 0, err
	}
	mfs, live, err := s.cat.snapshotFiles(ctx, tbl.md.current(), true)
	if err != nil {
		return 0, err
	}
	target := s.cfg.TargetFileSizeBytes
	byPart := map[string][]dataFile{}
	var keys []string
	for _, lf := range live {
		f := lf.entry.File
		if f.SizeBytes >= target*3/4 {
			continue
		}
		k := fmt.Sprint(f.Partition)
		if _, ok := byPart[k]; !ok {
			keys = append(keys, k)
		}
		byPart[k] = append(byPart[k], f)
	}
	slices.Sort(keys)
	var groups [][]dataFile
	remove := map[string]bool{}
	for _, k := range keys {
		fs := byPart[k]
		if len(fs) < s.cfg.CompactionMinFiles {
			continue
		}
		// Bins of about the target size; a bin of one file is left alone.
		var bin []dataFile
		var size int64
		for _, f := range fs {
			if len(bin) > 0 && size+f.SizeBytes > target {
				groups, bin, size = appendBin(groups, bin, remove), nil, 0
			}
			bin = append(bin, f)
			size += f.SizeBytes
		}
		groups = appendBin(groups, bin, remove)
	}
	if len(groups) == 0 && len(mfs) <= maxManifests {
		return 0, nil
	}
	added, err := s.rewrite(ctx, tbl.md, groups, nil)
	if err != nil {
		return 0, fmt.Errorf("compacting %s: %w", id, err)
	}
	_, err = s.cat.commit(ctx, id, nil, func(md *Metadata) (*Metadata, changeFiles, error) {
		return s.cat.replaceFiles(ctx, md, remove, added, "replace", map[string]string{"magnetar.operation": "compaction"})
	})
	if err != nil {
		s.cat.removeQuietly(ctx, paths(added)...)
		if errors.Is(err, errFilesGone) {
			return 0, nil
		}
		return 0, fmt.Errorf("compacting %s: %w", id, err)
	}
	s.log.Info("iceberg table compacted", "table", id.String(), "files", len(remove), "groups", len(groups), "manifests", len(mfs))
	return len(remove), nil
}

// maxManifests is how many manifests a table's snapshot may list before maintenance merges
// them (each writer commit adds one).
const maxManifests = 100

func appendBin(groups [][]dataFile, bin []dataFile, remove map[string]bool) [][]dataFile {
	if len(bin) < 2 {
		return groups
	}
	for _, f := range bin {
		remove[f.Path] = true
	}
	return append(groups, bin)
}

// expireSnapshots drops snapshots older than age (the current one stays) and the files
// only they reference.
func (s *Service) expireSnapshots(ctx context.Context, id Ident, age time.Duration) error {
	_, err := s.cat.commit(ctx, id, nil, func(md *Metadata) (*Metadata, changeFiles, error) {
		md, cf, changed, err := s.cat.expireSnapshots(ctx, md, time.Now().Add(-age))
		if err == nil && !changed {
			err = errNothingToDo
		}
		return md, cf, err
	})
	if err != nil && !errors.Is(err, errNothingToDo) {
		return fmt.Errorf("expiring snapshots of %s: %w", id, err)
	}
	return nil
}

// errNothingToDo ends a maintenance commit that would change nothing.
var errNothingToDo = errors.New("lakehouse: nothing to do")

// releaseStuckHolds moves the hold subscription of a writer that has not committed for
// icebergWriterMaxHoldSeconds to the first message younger than that, so a stuck writer
// holds back at most that much of the topic beyond its own retention. The writer, when it
// gets going again, finds the gap and counts it.
func (s *Service) releaseStuckHolds(ctx context.Context, want map[string]Policy) {
	if s.cfg.MaxHoldSeconds < 0 {
		return
	}
	hold := time.Duration(s.cfg.MaxHoldSeconds) * time.Second
	for name := range want {
		s.mu.Lock()
		st := s.stats[name]
		s.mu.Unlock()
		if st == nil {
			continue
		}
		st.mu.Lock()
		last := st.lastCommit
		st.mu.Unlock()
		if last.IsZero() || time.Since(last) < hold || s.lag(name) <= 0 {
			continue
		}
		n, _ := topics.ParseName(name)
		if err := s.topics.ResetSubscription(ctx, n, HoldSubscription, nil, time.Now().Add(-hold)); err != nil {
			s.log.Warn("releasing the hold of a stuck iceberg writer", "topic", name, "error", err)
			continue
		}
		s.log.Warn("iceberg writer has not committed for icebergWriterMaxHoldSeconds: the topic's retention is no longer held back", "topic", name, "lastCommit", last)
	}
}
