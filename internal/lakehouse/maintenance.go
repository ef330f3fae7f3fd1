package lakehouse

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

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

// expireRows deletes the rows published before cutoff (whole data files where the
// partitioning allows, rewriting the files that straddle it).
func (s *Service) expireRows(ctx context.Context, id Ident, cutoff time.Time) error {
	tbl, err := s.cat.LoadTable(ctx, id.iceberg())
	if err != nil {
		return err
	}
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	filter := iceberg.LessThan(iceberg.Reference(columns.ColPublishTime), iceberg.Timestamp(cutoff.UnixMicro()))
	tx := tbl.NewTransaction()
	if err := tx.Delete(ctx, filter, iceberg.Properties{"magnetar.operation": "retention"}); err != nil {
		return fmt.Errorf("retention of %s: %w", id, err)
	}
	if _, err := tx.Commit(ctx); err != nil && !errors.Is(err, table.ErrCommitFailed) {
		return fmt.Errorf("retention of %s: %w", id, err)
	}
	return nil
}

// Compact rewrites a table's small data files into files of about
// icebergTargetFileSizeBytes, partition by partition; it returns how many files it
// replaced (0: nothing to do).
func (s *Service) Compact(ctx context.Context, id Ident) (int, error) {
	tbl, err := s.cat.LoadTable(ctx, id.iceberg())
	if err != nil {
		return 0, err
	}
	if tbl.CurrentSnapshot() == nil {
		return 0, nil
	}
	target := s.cfg.TargetFileSizeBytes
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes, cfg.MinFileSizeBytes, cfg.MaxFileSizeBytes = target, target*3/4, target*9/5
	cfg.MinInputFiles = uint(s.cfg.CompactionMinFiles)
	plan, err := compaction.Analyze(ctx, tbl, cfg)
	if err != nil {
		return 0, fmt.Errorf("planning compaction of %s: %w", id, err)
	}
	if len(plan.Groups) == 0 {
		return 0, nil
	}
	groups := make([]table.CompactionTaskGroup, len(plan.Groups))
	files := 0
	for i, g := range plan.Groups {
		groups[i] = table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes}
		files += len(g.Tasks)
	}
	if _, err := tbl.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{}); err != nil {
		return 0, fmt.Errorf("compacting %s: %w", id, err)
	}
	s.log.Info("iceberg table compacted", "table", id.String(), "files", files, "groups", len(groups))
	return files, nil
}

// expireSnapshots drops snapshots older than age (the current one stays) and the files
// only they reference.
func (s *Service) expireSnapshots(ctx context.Context, id Ident, age time.Duration) error {
	tbl, err := s.cat.LoadTable(ctx, id.iceberg())
	if err != nil {
		return err
	}
	if len(tbl.Metadata().Snapshots()) <= 1 {
		return nil
	}
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithOlderThan(age), table.WithRetainLast(1)); err != nil {
		return fmt.Errorf("expiring snapshots of %s: %w", id, err)
	}
	if _, err := tx.Commit(ctx); err != nil && !errors.Is(err, table.ErrCommitFailed) {
		return fmt.Errorf("expiring snapshots of %s: %w", id, err)
	}
	return nil
}

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
