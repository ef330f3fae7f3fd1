package mysql

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The schema history: every DDL statement that changed a captured table, with the binlog
// position it was logged at and the table's columns after it, plus the captured tables'
// columns when the source first starts (the snapshot). A restart replays it, so an event
// logged before a later ALTER TABLE is decoded with the columns it was written with.
//
// A record is JSON in the shape of Debezium's history records (source, position,
// databaseName, ddl, tableChanges with the table's columns), so it reads as one; it is an
// internal format all the same, read back only by this source.

type historyRecord struct {
	Source       historySource   `json:"source"`
	Position     historyPosition `json:"position"`
	TsMs         int64           `json:"ts_ms"`
	DatabaseName string          `json:"databaseName,omitempty"`
	DDL          string          `json:"ddl,omitempty"`
	TableChanges []tableChange   `json:"tableChanges"`
}

type historySource struct {
	Server string `json:"server"`
}

type historyPosition struct {
	File     string `json:"file"`
	Pos      uint32 `json:"pos"`
	Snapshot bool   `json:"snapshot,omitempty"`
}

type tableChange struct {
	Type  string        `json:"type"`
	ID    string        `json:"id"` // "db"."table", quotes inside doubled
	Table *historyTable `json:"table,omitempty"`
}

type historyTable struct {
	PrimaryKeyColumnNames []string        `json:"primaryKeyColumnNames"`
	Columns               []historyColumn `json:"columns"`
}

type historyColumn struct {
	Name string `json:"name"`
	// TypeName is information_schema's DATA_TYPE in capitals, with " UNSIGNED" for an
	// unsigned number.
	TypeName string `json:"typeName"`
	// Length is the bit width of a BIT and the fractional seconds of a temporal type.
	Length     int      `json:"length,omitempty"`
	EnumValues []string `json:"enumValues,omitempty"`
	Position   int      `json:"position"`
}

func quoteID(id tableID) string {
	q := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	return q(id.db) + "." + q(id.name)
}

// parseID reads "db"."table" (quotes inside a name doubled).
func parseID(s string) (tableID, error) {
	var parts []string
	for i := 0; i < len(s); {
		if s[i] != '"' {
			return tableID{}, fmt.Errorf("table id %q: expected a quote at %d", s, i)
		}
		var b strings.Builder
		j := i + 1
		for ; ; j++ {
			if j >= len(s) {
				return tableID{}, fmt.Errorf("table id %q: unterminated name", s)
			}
			if s[j] == '"' {
				if j+1 < len(s) && s[j+1] == '"' {
					b.WriteByte('"')
					j++
					continue
				}
				break
			}
			b.WriteByte(s[j])
		}
		parts = append(parts, b.String())
		i = j + 1
		if i < len(s) {
			if s[i] != '.' || len(parts) == 2 {
				return tableID{}, fmt.Errorf("table id %q: expected '.' at %d", s, i)
			}
			i++
			if i == len(s) {
				return tableID{}, fmt.Errorf("table id %q: ends with '.'", s)
			}
		}
	}
	if len(parts) != 2 || parts[1] == "" {
		return tableID{}, fmt.Errorf("table id %q: want \"db\".\"table\"", s)
	}
	return tableID{parts[0], parts[1]}, nil
}

func historyTableOf(cols []*colInfo) *historyTable {
	t := &historyTable{PrimaryKeyColumnNames: []string{}}
	for i, c := range cols {
		hc := historyColumn{Name: c.name, TypeName: strings.ToUpper(c.dataType), Position: i + 1}
		if c.unsigned {
			hc.TypeName += " UNSIGNED"
		}
		switch c.dataType {
		case "bit":
			hc.Length = c.bits
		case "datetime", "timestamp", "time":
			hc.Length = c.precision
		case "enum", "set":
			hc.EnumValues = c.members
		}
		if c.key {
			t.PrimaryKeyColumnNames = append(t.PrimaryKeyColumnNames, c.name)
		}
		t.Columns = append(t.Columns, hc)
	}
	return t
}

// columns turns a recorded table back into the columns the decoder uses.
func (t *historyTable) columns() ([]*colInfo, error) {
	if len(t.Columns) == 0 {
		return nil, errors.New("a table without columns")
	}
	cols := make([]*colInfo, 0, len(t.Columns))
	for i, hc := range t.Columns {
		if hc.Name == "" || hc.Position != i+1 {
			return nil, fmt.Errorf("column %d: name %q at position %d", i+1, hc.Name, hc.Position)
		}
		if findCol(cols, hc.Name) >= 0 {
			return nil, fmt.Errorf("column %s twice", hc.Name)
		}
		dt, uns := strings.CutSuffix(hc.TypeName, " UNSIGNED")
		if dt == "" || strings.ContainsAny(dt, " ()") || hc.Length < 0 || hc.Length > 64 {
			return nil, fmt.Errorf("column %s: type %q length %d", hc.Name, hc.TypeName, hc.Length)
		}
		c := &colInfo{name: hc.Name, dataType: strings.ToLower(dt), unsigned: uns}
		switch c.dataType {
		case "bit":
			c.bits = max(hc.Length, 1)
		case "datetime", "timestamp", "time":
			c.precision = hc.Length
		case "enum", "set":
			c.members = hc.EnumValues
		}
		cols = append(cols, c)
	}
	for _, k := range t.PrimaryKeyColumnNames {
		i := findCol(cols, k)
		if i < 0 {
			return nil, fmt.Errorf("primary key column %s is not a column", k)
		}
		cols[i].key = true
	}
	return cols, nil
}

// historyEntry is one table's state recorded at one position (cols nil: dropped).
type historyEntry struct {
	pos  position
	id   tableID
	cols []*colInfo
}

// decodeHistory reads one history record into its table states.
func decodeHistory(b []byte) ([]historyEntry, error) {
	var r historyRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("debezium-mysql: schema history record: %w", err)
	}
	if r.Position.File == "" {
		return nil, errors.New("debezium-mysql: schema history record without a binlog file")
	}
	p := position{r.Position.File, r.Position.Pos}
	out := make([]historyEntry, 0, len(r.TableChanges))
	for _, tc := range r.TableChanges {
		id, err := parseID(tc.ID)
		if err != nil {
			return nil, fmt.Errorf("debezium-mysql: schema history record at %s:%d: %w", p.file, p.pos, err)
		}
		e := historyEntry{pos: p, id: id}
		switch tc.Type {
		case changeDrop:
		case changeCreate, changeAlter:
			if tc.Table == nil {
				return nil, fmt.Errorf("debezium-mysql: schema history record at %s:%d: %s of %s without its table", p.file, p.pos, tc.Type, tc.ID)
			}
			if e.cols, err = tc.Table.columns(); err != nil {
				return nil, fmt.Errorf("debezium-mysql: schema history record at %s:%d, table %s: %w", p.file, p.pos, tc.ID, err)
			}
		default:
			return nil, fmt.Errorf("debezium-mysql: schema history record at %s:%d: change type %q", p.file, p.pos, tc.Type)
		}
		out = append(out, e)
	}
	return out, nil
}

// encodeHistory is the record of changes logged at p by the statement ddl.
func encodeHistory(server string, p position, snapshot bool, tsMs int64, db, ddl string, changes []ddlChange) []byte {
	r := historyRecord{Source: historySource{Server: server}, Position: historyPosition{File: p.file, Pos: p.pos, Snapshot: snapshot},
		TsMs: tsMs, DatabaseName: db, DDL: ddl, TableChanges: []tableChange{}}
	for _, c := range changes {
		tc := tableChange{Type: c.kind, ID: quoteID(c.id)}
		if c.kind != changeDrop {
			tc.Table = historyTableOf(c.cols)
		}
		r.TableChanges = append(r.TableChanges, tc)
	}
	b, _ := json.Marshal(r)
	return b
}

// binlogNumber is the sequence number at the end of a binlog file name (binlog.000012).
func binlogNumber(file string) (string, uint64, bool) {
	i := strings.LastIndexByte(file, '.')
	if i < 0 {
		return file, 0, false
	}
	n, err := strconv.ParseUint(file[i+1:], 10, 64)
	return file[:i], n, err == nil
}

// before reports whether a is earlier in the binary log than b.
func (a position) before(b position) bool {
	if a.file != b.file {
		ab, an, aok := binlogNumber(a.file)
		bb, bn, bok := binlogNumber(b.file)
		if aok && bok && ab == bb {
			return an < bn
		}
		return a.file < b.file
	}
	return a.pos < b.pos
}

// versions is every table's column lists by binlog position: what the history recorded
// and what this run added.
type versions struct {
	byTable map[tableID][]*version
}

type version struct {
	pos  position
	cols []*colInfo // nil: the table was dropped here
	tbl  *table     // built from cols on first use
}

func newVersions() *versions { return &versions{byTable: map[tableID][]*version{}} }

// add records id's columns from p on. A second state at the same position replaces the
// first (a snapshot taken again at the same position).
func (v *versions) add(p position, id tableID, cols []*colInfo) {
	list := v.byTable[id]
	i := sort.Search(len(list), func(i int) bool { return !list[i].pos.before(p) })
	nv := &version{pos: p, cols: cols}
	if i < len(list) && list[i].pos == p {
		list[i] = nv
		return
	}
	list = append(list, nil)
	copy(list[i+1:], list[i:])
	list[i] = nv
	v.byTable[id] = list
}

// at is id's state in effect at p: the last one recorded at or before p (strict: before p).
func (v *versions) at(id tableID, p position, strict bool) *version {
	list := v.byTable[id]
	i := sort.Search(len(list), func(i int) bool {
		if strict {
			return !list[i].pos.before(p)
		}
		return p.before(list[i].pos)
	})
	if i == 0 {
		return nil
	}
	return list[i-1]
}

// has reports whether a state of id was recorded at exactly p.
func (v *versions) has(id tableID, p position) bool {
	w := v.at(id, p, false)
	return w != nil && w.pos == p
}

// view is the schemaAt of the tables just before position p.
func (v *versions) view(p position) schemaAt { return versionView{v, p} }

type versionView struct {
	v *versions
	p position
}

func (w versionView) columnsOf(id tableID) ([]*colInfo, bool) {
	ver := w.v.at(id, w.p, true)
	if ver == nil || ver.cols == nil {
		return nil, false
	}
	return ver.cols, true
}

func (w versionView) tablesIn(db string) []string {
	var out []string
	for id := range w.v.byTable {
		if id.db == db {
			if _, ok := w.columnsOf(id); ok {
				out = append(out, id.name)
			}
		}
	}
	sort.Strings(out)
	return out
}
