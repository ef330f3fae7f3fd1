package lakehouse

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// This file is the Iceberg table metadata file (format version 2, the spec's "Table
// Metadata" section) as JSON: the model of the fields Magnetar writes and reads, and the
// changes its commits make. The package writes Iceberg itself rather than through a
// library: a library's table package brings an expression engine whose package init costs
// every magnetar process tens of milliseconds (docs/benchmarks.md, "Startup").

// errMetadata marks a metadata file that is not Iceberg v2 metadata this package reads.
var errMetadata = errors.New("lakehouse: bad table metadata")

// Field is a column of a table schema. Types are Iceberg primitives in their JSON form
// ("int", "long", "timestamptz", "decimal(10,2)", ...): tables Magnetar writes have no
// nested types.
type Field struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Required bool   `json:"required"`
	Type     string `json:"type"`
	Doc      string `json:"doc,omitempty"`
}

// Schema is one schema of a table.
type Schema struct {
	Type     string  `json:"type"` // "struct"
	ID       int     `json:"schema-id"`
	Fields   []Field `json:"fields"`
	IDFields []int   `json:"identifier-field-ids,omitempty"`
}

// field returns the field named name.
func (s *Schema) field(name string) (Field, bool) {
	for _, f := range s.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// fieldByID returns the field with id.
func (s *Schema) fieldByID(id int) (Field, bool) {
	for _, f := range s.Fields {
		if f.ID == id {
			return f, true
		}
	}
	return Field{}, false
}

func (s *Schema) highestFieldID() int {
	n := 0
	for _, f := range s.Fields {
		n = max(n, f.ID)
	}
	return n
}

// PartitionField is a field of a partition spec.
type PartitionField struct {
	SourceID  int    `json:"source-id"`
	FieldID   int    `json:"field-id"`
	Name      string `json:"name"`
	Transform string `json:"transform"`
}

// PartitionSpec is a table's partitioning.
type PartitionSpec struct {
	ID     int              `json:"spec-id"`
	Fields []PartitionField `json:"fields"`
}

// SortOrder is a table's sort order; tables Magnetar writes are unsorted (order 0).
type SortOrder struct {
	ID     int               `json:"order-id"`
	Fields []json.RawMessage `json:"fields"`
}

// Snapshot is one state of a table: the manifest list of its data files.
type Snapshot struct {
	ID           int64             `json:"snapshot-id"`
	ParentID     *int64            `json:"parent-snapshot-id,omitempty"`
	Sequence     int64             `json:"sequence-number"`
	TimestampMs  int64             `json:"timestamp-ms"`
	ManifestList string            `json:"manifest-list"`
	Summary      map[string]string `json:"summary"`
	SchemaID     *int              `json:"schema-id,omitempty"`
}

// SnapshotLogEntry and MetadataLogEntry are the table's history.
type SnapshotLogEntry struct {
	SnapshotID  int64 `json:"snapshot-id"`
	TimestampMs int64 `json:"timestamp-ms"`
}

type MetadataLogEntry struct {
	File        string `json:"metadata-file"`
	TimestampMs int64  `json:"timestamp-ms"`
}

// Ref is a named snapshot reference; "main" is the table's current state.
type Ref struct {
	SnapshotID int64  `json:"snapshot-id"`
	Type       string `json:"type"` // "branch" or "tag"
}

// Metadata is a table metadata file.
type Metadata struct {
	FormatVersion      int                `json:"format-version"`
	UUID               string             `json:"table-uuid"`
	Location           string             `json:"location"`
	LastSequence       int64              `json:"last-sequence-number"`
	LastUpdatedMs      int64              `json:"last-updated-ms"`
	LastColumnID       int                `json:"last-column-id"`
	CurrentSchemaID    int                `json:"current-schema-id"`
	Schemas            []Schema           `json:"schemas"`
	DefaultSpecID      int                `json:"default-spec-id"`
	Specs              []PartitionSpec    `json:"partition-specs"`
	LastPartitionID    int                `json:"last-partition-id"`
	DefaultSortOrderID int                `json:"default-sort-order-id"`
	SortOrders         []SortOrder        `json:"sort-orders"`
	Properties         map[string]string  `json:"properties"`
	CurrentSnapshotID  *int64             `json:"current-snapshot-id,omitempty"`
	Snapshots          []Snapshot         `json:"snapshots"`
	SnapshotLog        []SnapshotLogEntry `json:"snapshot-log"`
	MetadataLog        []MetadataLogEntry `json:"metadata-log"`
	Refs               map[string]Ref     `json:"refs"`
	Statistics         []json.RawMessage  `json:"statistics"`
	PartitionStats     []json.RawMessage  `json:"partition-statistics"`
}

// newMetadata is the metadata of a new table at location.
func newMetadata(sc Schema, spec PartitionSpec, location string, props map[string]string) *Metadata {
	if props == nil {
		props = map[string]string{}
	}
	lastPart := 999 // the spec's first partition field id is 1000
	for _, f := range spec.Fields {
		lastPart = max(lastPart, f.FieldID)
	}
	sc.Type = "struct"
	return &Metadata{
		FormatVersion: 2, UUID: uuid.NewString(), Location: location,
		LastUpdatedMs: time.Now().UnixMilli(), LastColumnID: sc.highestFieldID(),
		CurrentSchemaID: sc.ID, Schemas: []Schema{sc},
		DefaultSpecID: spec.ID, Specs: []PartitionSpec{spec}, LastPartitionID: lastPart,
		SortOrders: []SortOrder{{ID: 0, Fields: []json.RawMessage{}}},
		Properties: props, Snapshots: []Snapshot{}, SnapshotLog: []SnapshotLogEntry{},
		MetadataLog: []MetadataLogEntry{}, Refs: map[string]Ref{},
		Statistics: []json.RawMessage{}, PartitionStats: []json.RawMessage{},
	}
}

// parseMetadata reads a metadata file, checking what the package relies on.
func parseMetadata(b []byte) (*Metadata, error) {
	var md Metadata
	if err := json.Unmarshal(b, &md); err != nil {
		return nil, fmt.Errorf("%w: %w", errMetadata, err)
	}
	if md.FormatVersion != 2 {
		return nil, fmt.Errorf("%w: format version %d (want 2)", errMetadata, md.FormatVersion)
	}
	if md.schema() == nil {
		return nil, fmt.Errorf("%w: no schema %d", errMetadata, md.CurrentSchemaID)
	}
	if md.spec() == nil {
		return nil, fmt.Errorf("%w: no partition spec %d", errMetadata, md.DefaultSpecID)
	}
	if md.CurrentSnapshotID != nil && *md.CurrentSnapshotID == -1 {
		md.CurrentSnapshotID = nil // older writers' "none"
	}
	if md.CurrentSnapshotID != nil && md.snapshot(*md.CurrentSnapshotID) == nil {
		return nil, fmt.Errorf("%w: no snapshot %d", errMetadata, *md.CurrentSnapshotID)
	}
	for i := range md.Schemas {
		for j := range md.Schemas[i].Fields {
			f := &md.Schemas[i].Fields[j]
			ti, err := parseType(f.Type)
			if err != nil {
				return nil, fmt.Errorf("%w: column %s: %w", errMetadata, f.Name, err)
			}
			// One spelling per type ("decimal(10, 2)" from other writers), so that types
			// compare as strings.
			f.Type = ti.String()
		}
	}
	// Lists other writers leave out are written back as empty lists, not null.
	if md.Snapshots == nil {
		md.Snapshots = []Snapshot{}
	}
	if md.SnapshotLog == nil {
		md.SnapshotLog = []SnapshotLogEntry{}
	}
	if md.MetadataLog == nil {
		md.MetadataLog = []MetadataLogEntry{}
	}
	if md.SortOrders == nil {
		md.SortOrders = []SortOrder{{ID: 0, Fields: []json.RawMessage{}}}
	}
	if md.Properties == nil {
		md.Properties = map[string]string{}
	}
	if md.Refs == nil {
		md.Refs = map[string]Ref{}
	}
	if md.Statistics == nil {
		md.Statistics = []json.RawMessage{}
	}
	if md.PartitionStats == nil {
		md.PartitionStats = []json.RawMessage{}
	}
	return &md, nil
}

// schema is the current schema.
func (md *Metadata) schema() *Schema {
	for i := range md.Schemas {
		if md.Schemas[i].ID == md.CurrentSchemaID {
			return &md.Schemas[i]
		}
	}
	return nil
}

// spec is the default partition spec.
func (md *Metadata) spec() *PartitionSpec {
	for i := range md.Specs {
		if md.Specs[i].ID == md.DefaultSpecID {
			return &md.Specs[i]
		}
	}
	return nil
}

func (md *Metadata) snapshot(id int64) *Snapshot {
	for i := range md.Snapshots {
		if md.Snapshots[i].ID == id {
			return &md.Snapshots[i]
		}
	}
	return nil
}

// current is the current snapshot, or nil for a table without data.
func (md *Metadata) current() *Snapshot {
	if md.CurrentSnapshotID == nil {
		return nil
	}
	return md.snapshot(*md.CurrentSnapshotID)
}

// addSchema makes sc (with the next schema id) the current schema.
func (md *Metadata) addSchema(sc Schema) {
	sc.Type = "struct"
	sc.ID = 0
	for _, s := range md.Schemas {
		sc.ID = max(sc.ID, s.ID+1)
	}
	md.Schemas = append(md.Schemas, sc)
	md.CurrentSchemaID = sc.ID
	md.LastColumnID = max(md.LastColumnID, sc.highestFieldID())
}

// addSnapshot makes s (its sequence number assigned here) the current snapshot.
func (md *Metadata) addSnapshot(s Snapshot) {
	md.LastSequence++
	s.Sequence = md.LastSequence
	if cur := md.current(); cur != nil {
		p := cur.ID
		s.ParentID = &p
	}
	id := md.CurrentSchemaID
	s.SchemaID = &id
	md.Snapshots = append(md.Snapshots, s)
	md.CurrentSnapshotID = &s.ID
	md.Refs["main"] = Ref{SnapshotID: s.ID, Type: "branch"}
	md.SnapshotLog = append(md.SnapshotLog, SnapshotLogEntry{SnapshotID: s.ID, TimestampMs: s.TimestampMs})
}

// newSnapshotID is a positive id not used by the table (the spec asks for unique ids).
func (md *Metadata) newSnapshotID() int64 {
	for {
		u := uuid.New()
		var id int64
		for _, b := range u[:8] {
			id = id<<8 | int64(b)
		}
		id &= 1<<63 - 1
		if id != 0 && md.snapshot(id) == nil {
			return id
		}
	}
}

// Metadata files kept in the metadata log (write.metadata.previous-versions-max's
// default); older ones are deleted after a commit (write.metadata.delete-after-commit).
const metadataVersionsKept = 100

// succeed records that md follows the metadata file prev (written at prevMs), and returns
// the metadata files that fell out of the log.
func (md *Metadata) succeed(prev string, prevMs int64) []string {
	md.MetadataLog = append(md.MetadataLog, MetadataLogEntry{File: prev, TimestampMs: prevMs})
	md.LastUpdatedMs = max(time.Now().UnixMilli(), prevMs)
	var dropped []string
	if n := len(md.MetadataLog) - metadataVersionsKept; n > 0 {
		for _, e := range md.MetadataLog[:n] {
			dropped = append(dropped, e.File)
		}
		md.MetadataLog = append([]MetadataLogEntry(nil), md.MetadataLog[n:]...)
	}
	return dropped
}

// Iceberg primitive types of the columns (schema.go maps internal/columns kinds to them).
const (
	typeBoolean     = "boolean"
	typeInt         = "int"
	typeLong        = "long"
	typeFloat       = "float"
	typeDouble      = "double"
	typeString      = "string"
	typeBinary      = "binary"
	typeTimestampTz = "timestamptz"
	typeDate        = "date"
	typeTime        = "time"
)

// icebergTypeInfo is a parsed type: its name, and for decimals precision and scale.
type icebergTypeInfo struct {
	name             string
	precision, scale int
}

// String is the type's JSON form.
func (ti icebergTypeInfo) String() string {
	if ti.name == "decimal" {
		return decimalType(ti.precision, ti.scale)
	}
	return ti.name
}

func decimalType(p, s int) string { return "decimal(" + strconv.Itoa(p) + "," + strconv.Itoa(s) + ")" }

// parseType checks that t is a primitive type this package writes.
func parseType(t string) (icebergTypeInfo, error) {
	switch t {
	case typeBoolean, typeInt, typeLong, typeFloat, typeDouble, typeString, typeBinary, typeTimestampTz, typeDate, typeTime:
		return icebergTypeInfo{name: t}, nil
	}
	if rest, ok := strings.CutPrefix(t, "decimal("); ok && strings.HasSuffix(rest, ")") {
		ps := strings.Split(strings.TrimSuffix(rest, ")"), ",")
		if len(ps) == 2 {
			p, err1 := strconv.Atoi(strings.TrimSpace(ps[0]))
			s, err2 := strconv.Atoi(strings.TrimSpace(ps[1]))
			if err1 == nil && err2 == nil && p >= 1 && p <= 38 && s >= 0 && s <= p {
				return icebergTypeInfo{name: "decimal", precision: p, scale: s}, nil
			}
		}
	}
	return icebergTypeInfo{}, fmt.Errorf("unsupported type %q", t)
}

// marshal is the metadata file's content.
func (md *Metadata) marshal() ([]byte, error) {
	b, err := json.Marshal(md)
	if err != nil {
		return nil, fmt.Errorf("lakehouse: encoding table metadata: %w", err)
	}
	return b, nil
}
