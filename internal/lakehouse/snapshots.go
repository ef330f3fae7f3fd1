package lakehouse

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// The snapshots Magnetar commits (the spec's "Snapshots" and "Commits"): appends by the
// writers, one new manifest each on top of the previous snapshot's manifests; and, by
// maintenance, replacements (compaction, retention, manifest merging) that write the whole
// table state as one manifest, and snapshot expiry.

// errFilesGone: a replacement's input files are no longer in the table (another
// maintenance run replaced them first).
var errFilesGone = errors.New("lakehouse: files to replace are no longer in the table")

// liveFile is a data file of a snapshot, with what its manifest entry inherits resolved.
type liveFile struct {
	entry  manifestEntry // status, snapshot id and sequence numbers explicit
	specID int32
}

// snapshotFiles reads the manifest list of snap: the manifests and, with entries, their
// live data files.
func (c *Catalog) snapshotFiles(ctx context.Context, snap *Snapshot, entries bool) ([]manifestFile, []liveFile, error) {
	if snap == nil {
		return nil, nil, nil
	}
	b, err := c.io.read(ctx, snap.ManifestList)
	if err != nil {
		return nil, nil, err
	}
	mfs, err := decodeManifestList(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", snap.ManifestList, err)
	}
	if !entries {
		return mfs, nil, nil
	}
	var live []liveFile
	for _, mf := range mfs {
		if mf.Content != 0 {
			return nil, nil, fmt.Errorf("%w: %s: delete manifests are not supported", errManifest, mf.Path)
		}
		b, err := c.io.read(ctx, mf.Path)
		if err != nil {
			return nil, nil, err
		}
		es, err := decodeManifest(b)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", mf.Path, err)
		}
		for _, e := range es {
			if e.Status == statusDeleted {
				continue
			}
			// Inheritance: a null snapshot id or sequence number is the manifest's.
			if e.SnapshotID == nil {
				e.SnapshotID = &mf.AddedSnapshotID
			}
			if e.Sequence == nil {
				e.Sequence = &mf.Sequence
			}
			if e.FileSequence == nil {
				e.FileSequence = &mf.Sequence
			}
			e.Status = statusExisting
			live = append(live, liveFile{entry: e, specID: mf.SpecID})
		}
	}
	return mfs, live, nil
}

// manifestPath names a new manifest of the table at loc.
func manifestPath(loc string) string {
	return loc + "/metadata/" + uuid.NewString() + "-m0.avro"
}

// partitionSummaries are a manifest list entry's partition field summaries of entries.
func partitionSummaries(spec *PartitionSpec, entries []manifestEntry) *[]partSummary {
	out := make([]partSummary, len(spec.Fields))
	for i, f := range spec.Fields {
		var lo, hi int32
		seen := false
		for _, e := range entries {
			v, ok := e.File.Partition[avroName(f.Name)].(int32)
			if !ok {
				out[i].ContainsNull = true
				continue
			}
			if !seen || v < lo {
				lo = v
			}
			if !seen || v > hi {
				hi = v
			}
			seen = true
		}
		no := false
		out[i].ContainsNaN = &no
		if seen {
			l := binary.LittleEndian.AppendUint32(nil, uint32(lo))
			h := binary.LittleEndian.AppendUint32(nil, uint32(hi))
			out[i].Lower, out[i].Upper = &l, &h
		}
	}
	return &out
}

// snapshotSummary is the summary of a snapshot that adds and removes files on top of the
// totals of the previous one.
func snapshotSummary(op string, prev *Snapshot, added, removed []manifestEntry, extra map[string]string) map[string]string {
	total := func(k string) int64 {
		if prev == nil {
			return 0
		}
		n, _ := strconv.ParseInt(prev.Summary[k], 10, 64)
		return n
	}
	var addFiles, addRecs, addSize, delRecs, delSize int64
	for _, e := range added {
		addFiles++
		addRecs += e.File.RecordCount
		addSize += e.File.SizeBytes
	}
	for _, e := range removed {
		delRecs += e.File.RecordCount
		delSize += e.File.SizeBytes
	}
	s := map[string]string{
		"operation":          op,
		"added-data-files":   strconv.FormatInt(addFiles, 10),
		"added-records":      strconv.FormatInt(addRecs, 10),
		"added-files-size":   strconv.FormatInt(addSize, 10),
		"total-data-files":   strconv.FormatInt(total("total-data-files")+addFiles-int64(len(removed)), 10),
		"total-records":      strconv.FormatInt(total("total-records")+addRecs-delRecs, 10),
		"total-files-size":   strconv.FormatInt(total("total-files-size")+addSize-delSize, 10),
		"total-delete-files": "0", "total-position-deletes": "0", "total-equality-deletes": "0",
	}
	if len(removed) > 0 {
		s["deleted-data-files"] = strconv.Itoa(len(removed))
		s["deleted-records"] = strconv.FormatInt(delRecs, 10)
		s["removed-files-size"] = strconv.FormatInt(delSize, 10)
	}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

// appendFiles adds files to md as a new snapshot ("append"): one new manifest, listed
// before the previous snapshot's manifests.
func (c *Catalog) appendFiles(ctx context.Context, md *Metadata, files []dataFile, extra map[string]string) (*Metadata, changeFiles, error) {
	var cf changeFiles
	prev := md.current()
	mfs, _, err := c.snapshotFiles(ctx, prev, false)
	if err != nil {
		return nil, cf, err
	}
	snapID, seq := md.newSnapshotID(), md.LastSequence+1
	entries := make([]manifestEntry, len(files))
	var rows int64
	for i, f := range files {
		entries[i] = manifestEntry{Status: statusAdded, SnapshotID: &snapID, File: f}
		rows += f.RecordCount
	}
	spec := md.spec()
	mb, err := encodeManifest(md.schema(), *spec, entries)
	if err != nil {
		return nil, cf, err
	}
	mpath := manifestPath(md.Location)
	if err := c.io.write(ctx, mpath, mb); err != nil {
		return nil, cf, err
	}
	cf.written = append(cf.written, mpath)
	list := append([]manifestFile{{
		Path: mpath, Length: int64(len(mb)), SpecID: int32(spec.ID), Sequence: seq, MinSequence: seq,
		AddedSnapshotID: snapID, AddedFiles: int32(len(files)), AddedRows: rows,
		PartitionSummary: partitionSummaries(spec, entries),
	}}, mfs...)
	return c.addSnapshot(ctx, md, snapID, list, snapshotSummary("append", prev, entries, nil, extra), cf)
}

// addSnapshot writes the manifest list of a new snapshot and makes it current.
func (c *Catalog) addSnapshot(ctx context.Context, md *Metadata, snapID int64, list []manifestFile, summary map[string]string, cf changeFiles) (*Metadata, changeFiles, error) {
	parent := int64(-1)
	if cur := md.current(); cur != nil {
		parent = cur.ID
	}
	lb, err := encodeManifestList(snapID, parent, md.LastSequence+1, list)
	if err != nil {
		return nil, cf, err
	}
	lpath := fmt.Sprintf("%s/metadata/snap-%d-1-%s.avro", md.Location, snapID, uuid.NewString())
	if err := c.io.write(ctx, lpath, lb); err != nil {
		return nil, cf, err
	}
	cf.written = append(cf.written, lpath)
	md.addSnapshot(Snapshot{ID: snapID, TimestampMs: time.Now().UnixMilli(), ManifestList: lpath, Summary: summary})
	return md, cf, nil
}

// replaceFiles makes a snapshot of operation op (replace, delete, overwrite) that removes
// the data files at the paths of remove and adds add, writing the whole resulting table
// state as one manifest (which also merges the manifests appends left). Files of remove
// that are no longer live are errFilesGone.
func (c *Catalog) replaceFiles(ctx context.Context, md *Metadata, remove map[string]bool, add []dataFile, op string, extra map[string]string) (*Metadata, changeFiles, error) {
	var cf changeFiles
	prev := md.current()
	_, live, err := c.snapshotFiles(ctx, prev, true)
	if err != nil {
		return nil, cf, err
	}
	spec := md.spec()
	snapID, seq := md.newSnapshotID(), md.LastSequence+1
	var entries, removed, added []manifestEntry
	var mf = manifestFile{SpecID: int32(spec.ID), Sequence: seq, MinSequence: seq, AddedSnapshotID: snapID}
	found := 0
	for _, lf := range live {
		e := lf.entry
		if int(lf.specID) != spec.ID {
			return nil, cf, fmt.Errorf("lakehouse: %s has data files of partition spec %d", md.Location, lf.specID)
		}
		if remove[e.File.Path] {
			found++
			e.Status, e.SnapshotID = statusDeleted, &snapID
			removed = append(removed, e)
			mf.DeletedFiles++
			mf.DeletedRows += e.File.RecordCount
		} else {
			mf.ExistingFiles++
			mf.ExistingRows += e.File.RecordCount
		}
		mf.MinSequence = min(mf.MinSequence, *e.Sequence)
		entries = append(entries, e)
	}
	if found != len(remove) {
		return nil, cf, errFilesGone
	}
	for _, f := range add {
		e := manifestEntry{Status: statusAdded, SnapshotID: &snapID, File: f}
		entries = append(entries, e)
		added = append(added, e)
		mf.AddedFiles++
		mf.AddedRows += f.RecordCount
	}
	var list []manifestFile
	if len(entries) > 0 {
		mb, err := encodeManifest(md.schema(), *spec, entries)
		if err != nil {
			return nil, cf, err
		}
		mf.Path = manifestPath(md.Location)
		if err := c.io.write(ctx, mf.Path, mb); err != nil {
			return nil, cf, err
		}
		cf.written = append(cf.written, mf.Path)
		mf.Length = int64(len(mb))
		mf.PartitionSummary = partitionSummaries(spec, entries)
		list = append(list, mf)
	}
	return c.addSnapshot(ctx, md, snapID, list, snapshotSummary(op, prev, added, removed, extra), cf)
}

// reachable adds to set the files snapshots need: manifest lists, manifests and live data
// files.
func (c *Catalog) reachable(ctx context.Context, snaps []Snapshot, set map[string]bool) error {
	for i := range snaps {
		mfs, live, err := c.snapshotFiles(ctx, &snaps[i], true)
		if err != nil {
			return err
		}
		set[snaps[i].ManifestList] = true
		for _, mf := range mfs {
			set[mf.Path] = true
		}
		for _, lf := range live {
			set[lf.entry.File.Path] = true
		}
	}
	return nil
}

// expireSnapshots drops from md the snapshots older than cutoff but the current one, and
// returns as obsolete the files only they needed.
func (c *Catalog) expireSnapshots(ctx context.Context, md *Metadata, cutoff time.Time) (*Metadata, changeFiles, bool, error) {
	var cf changeFiles
	var keep, drop []Snapshot
	for _, s := range md.Snapshots {
		if (md.CurrentSnapshotID != nil && s.ID == *md.CurrentSnapshotID) || s.TimestampMs >= cutoff.UnixMilli() {
			keep = append(keep, s)
		} else {
			drop = append(drop, s)
		}
	}
	if len(drop) == 0 {
		return md, cf, false, nil
	}
	kept, gone := map[string]bool{}, map[string]bool{}
	if err := c.reachable(ctx, keep, kept); err != nil {
		return nil, cf, false, err
	}
	if err := c.reachable(ctx, drop, gone); err != nil {
		return nil, cf, false, err
	}
	for f := range gone {
		if !kept[f] {
			cf.obsolete = append(cf.obsolete, f)
		}
	}
	ids := map[int64]bool{}
	for _, s := range keep {
		ids[s.ID] = true
	}
	md.Snapshots = keep
	log := md.SnapshotLog[:0]
	for _, e := range md.SnapshotLog {
		if ids[e.SnapshotID] {
			log = append(log, e)
		}
	}
	md.SnapshotLog = log
	for name, r := range md.Refs {
		if !ids[r.SnapshotID] {
			delete(md.Refs, name)
		}
	}
	return md, cf, true, nil
}
