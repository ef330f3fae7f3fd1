package mysql

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dolthub/vitess/go/vt/sqlparser"
)

// tableID names a table.
type tableID struct{ db, name string }

func (id tableID) String() string { return id.db + "." + id.name }

// Change kinds, as Debezium's history records name them.
const (
	changeCreate = "CREATE"
	changeAlter  = "ALTER"
	changeDrop   = "DROP"
)

// ddlChange is what one DDL statement did to one table.
type ddlChange struct {
	id   tableID
	kind string
	// cols are the table's columns after the statement (nil for DROP). unknown says the
	// statement's effect could not be worked out (CREATE TABLE ... LIKE a table the history
	// does not know, a RENAME of one): the source reads the columns from the server.
	cols    []*colInfo
	unknown bool
}

// schemaAt gives a table's columns just before the DDL statement being applied (false: the
// history does not know the table), and the tables of one database it knows.
type schemaAt interface {
	columnsOf(id tableID) ([]*colInfo, bool)
	tablesIn(db string) []string
}

// MariaDB syntax the parser does not take, rewritten to its MySQL form; lenient then makes
// an ADD of an existing column replace it and a DROP of a missing one do nothing.
var (
	reColumnIfExists = regexp.MustCompile(`(?i)\b(ADD|DROP|MODIFY|CHANGE)(\s+COLUMN)?\s+IF\s+(NOT\s+)?EXISTS\b`)
	reCreateReplace  = regexp.MustCompile(`(?i)^CREATE\s+OR\s+REPLACE\s+TABLE\b`)
	reAlterOnline    = regexp.MustCompile(`(?i)^ALTER\s+(ONLINE\s+|IGNORE\s+)+TABLE\b`)
	reAddColumns     = regexp.MustCompile(`(?i)\bADD(\s+COLUMN)?\s*\(`)
	reAlterWait      = regexp.MustCompile("(?i)^(ALTER\\s+TABLE\\s+(?:`[^`]*`|[\\w$]+)(?:\\.(?:`[^`]*`|[\\w$]+))?)\\s+(?:WAIT\\s+\\d+|NOWAIT)\\b")
)

// splitAddColumns rewrites ALTER TABLE's ADD [COLUMN] (a ..., b ...), which the parser does
// not take, as ADD COLUMN a ..., ADD COLUMN b .... Quoted text and nested parentheses (a
// type's length, an enum's members) are kept whole.
func splitAddColumns(q string) string {
	for from := 0; ; {
		loc := reAddColumns.FindStringIndex(q[from:])
		if loc == nil {
			return q
		}
		start, open := from+loc[0], from+loc[1]-1
		var defs []string
		depth, last, end := 0, open+1, -1
		var quote byte
		for i := open; i < len(q) && end < 0; i++ {
			switch c := q[i]; {
			case quote != 0:
				if c == '\\' && quote != '`' {
					i++
				} else if c == quote {
					quote = 0
				}
			case c == '\'' || c == '"' || c == '`':
				quote = c
			case c == '(':
				depth++
			case c == ')':
				if depth--; depth == 0 {
					defs, end = append(defs, q[last:i]), i
				}
			case c == ',' && depth == 1:
				defs, last = append(defs, q[last:i]), i+1
			}
		}
		if end < 0 {
			return q // unbalanced: the parser will say so
		}
		for i, d := range defs {
			defs[i] = "ADD COLUMN " + strings.TrimSpace(d)
		}
		repl := strings.Join(defs, ", ")
		q = q[:start] + repl + q[end+1:]
		from = start + len(repl)
	}
}

// stripLeadingComments drops the whitespace and /* */ or -- comments before a statement.
func stripLeadingComments(q string) string {
	for {
		q = strings.TrimLeft(q, " \t\r\n")
		switch {
		case strings.HasPrefix(q, "/*") && !strings.HasPrefix(q, "/*!"):
			i := strings.Index(q[2:], "*/")
			if i < 0 {
				return ""
			}
			q = q[i+4:]
		case strings.HasPrefix(q, "-- ") || strings.HasPrefix(q, "#"):
			i := strings.IndexByte(q, '\n')
			if i < 0 {
				return ""
			}
			q = q[i+1:]
		default:
			return q
		}
	}
}

// isSchemaDDL reports whether q may change a table's columns (the statements parseDDL reads).
func isSchemaDDL(q string) bool {
	q = stripLeadingComments(q)
	n := 0
	for n < len(q) && (q[n]|0x20 >= 'a' && q[n]|0x20 <= 'z') {
		n++
	}
	switch strings.ToUpper(q[:n]) {
	case "CREATE", "ALTER", "DROP", "RENAME":
		return true
	}
	return false
}

// parseDDL works out what the DDL statement q, logged with default database defaultDB, did
// to the tables' columns as at tells them. Statements that change no table's columns (views,
// triggers, indexes, GRANT, ...) give no changes. An error means q is DDL the parser does not
// read; the caller falls back to the server's information_schema.
func parseDDL(q, defaultDB string, at schemaAt, mariadb bool) ([]ddlChange, error) {
	q = stripLeadingComments(q)
	if !isSchemaDDL(q) {
		return nil, nil
	}
	lenient := reColumnIfExists.MatchString(q)
	q = reColumnIfExists.ReplaceAllString(q, "$1$2")
	replace := reCreateReplace.MatchString(q)
	q = reCreateReplace.ReplaceAllString(q, "CREATE TABLE")
	q = reAlterOnline.ReplaceAllString(q, "ALTER TABLE")
	q = reAlterWait.ReplaceAllString(q, "$1")
	if strings.HasPrefix(strings.ToUpper(q), "ALTER") {
		q = splitAddColumns(q)
	}
	stmt, err := sqlparser.Parse(q)
	if err != nil {
		return nil, fmt.Errorf("debezium-mysql: parsing DDL: %w", err)
	}
	w := &ddlWork{at: at, defaultDB: defaultDB, mariadb: mariadb, lenient: lenient, cur: map[tableID]*ddlChange{}}
	switch s := stmt.(type) {
	case *sqlparser.DDL:
		err = w.ddl(s, replace)
	case *sqlparser.AlterTable:
		err = w.alter(s)
	case *sqlparser.DBDDL:
		if strings.EqualFold(s.Action, sqlparser.DropStr) {
			for _, name := range at.tablesIn(s.DBName) {
				w.drop(tableID{s.DBName, name})
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return w.out, nil
}

// ddlWork applies one statement: cur holds the tables it changed so far, so that RENAME
// TABLE a TO b, b TO c and ALTER TABLE ... RENAME see their own effect.
type ddlWork struct {
	at        schemaAt
	defaultDB string
	mariadb   bool
	lenient   bool
	cur       map[tableID]*ddlChange
	out       []ddlChange
}

func (w *ddlWork) id(t sqlparser.TableName) tableID {
	db := t.DbQualifier.String()
	if db == "" {
		db = w.defaultDB
	}
	return tableID{db, t.Name.String()}
}

// columns are id's columns as the statement has left them so far.
func (w *ddlWork) columns(id tableID) ([]*colInfo, bool) {
	if c, ok := w.cur[id]; ok {
		return c.cols, c.cols != nil || c.unknown
	}
	return w.at.columnsOf(id)
}

func (w *ddlWork) set(id tableID, kind string, cols []*colInfo, unknown bool) {
	if prev, ok := w.cur[id]; ok && prev.kind == changeDrop && kind != changeDrop {
		kind = changeCreate
	}
	c := ddlChange{id: id, kind: kind, cols: cols, unknown: unknown}
	w.cur[id] = &c
	for i := range w.out {
		if w.out[i].id == id {
			w.out[i] = c
			return
		}
	}
	w.out = append(w.out, c)
}

func (w *ddlWork) drop(id tableID) { w.set(id, changeDrop, nil, false) }

func (w *ddlWork) ddl(s *sqlparser.DDL, replace bool) error {
	switch strings.ToLower(s.Action) {
	case sqlparser.CreateStr:
		if s.ViewSpec != nil || s.TriggerSpec != nil || s.ProcedureSpec != nil || s.EventSpec != nil || s.Temporary || s.Table.IsEmpty() {
			return nil // not a table, or a temporary one (its rows are not logged in row format)
		}
		id := w.id(s.Table)
		if _, exists := w.columns(id); exists && s.IfNotExists && !replace {
			return nil
		}
		switch {
		case s.OptLike != nil && len(s.OptLike.LikeTables) == 1:
			like, ok := w.columns(w.id(s.OptLike.LikeTables[0]))
			w.set(id, changeCreate, cloneCols(like), !ok || like == nil)
		case s.TableSpec != nil && len(s.TableSpec.Columns) > 0:
			w.set(id, changeCreate, w.tableSpec(s.TableSpec), false)
		default: // CREATE TABLE ... SELECT without a column list
			w.set(id, changeCreate, nil, true)
		}
	case sqlparser.DropStr:
		for _, t := range s.FromTables {
			w.drop(w.id(t))
		}
	case sqlparser.RenameStr:
		if len(s.FromTables) != len(s.ToTables) {
			return fmt.Errorf("debezium-mysql: RENAME TABLE with %d sources and %d targets", len(s.FromTables), len(s.ToTables))
		}
		for i := range s.FromTables {
			w.rename(w.id(s.FromTables[i]), w.id(s.ToTables[i]))
		}
	}
	return nil
}

func (w *ddlWork) rename(from, to tableID) {
	cols, ok := w.columns(from)
	w.drop(from)
	w.set(to, changeCreate, cols, !ok || cols == nil)
}

func (w *ddlWork) tableSpec(ts *sqlparser.TableSpec) []*colInfo {
	cols := make([]*colInfo, 0, len(ts.Columns))
	for _, cd := range ts.Columns {
		cols = append(cols, columnOf(cd, w.mariadb))
	}
	for _, ix := range ts.Indexes {
		if ix.Info != nil && ix.Info.Primary {
			setPrimaryKey(cols, ix.Columns)
		}
	}
	return cols
}

func (w *ddlWork) alter(s *sqlparser.AlterTable) error {
	id := w.id(s.Table)
	cols, ok := w.columns(id)
	if !ok || cols == nil {
		// A table the history does not know: its columns after the statement come from
		// the server.
		w.set(id, changeAlter, nil, true)
		return nil
	}
	cols = cloneCols(cols)
	changed := false
	for _, d := range s.Statements {
		if strings.EqualFold(d.Action, sqlparser.RenameStr) {
			if len(d.ToTables) == 1 {
				if changed {
					w.set(id, changeAlter, cols, false)
				}
				to := w.id(d.ToTables[0])
				w.rename(id, to)
				id, changed = to, false
			}
			continue
		}
		var err error
		var did bool
		if cols, did, err = w.alterColumn(cols, d); err != nil {
			return fmt.Errorf("debezium-mysql: ALTER TABLE %s: %w", id, err)
		}
		changed = changed || did
	}
	if changed {
		w.set(id, changeAlter, cols, false)
	}
	return nil
}

// alterColumn applies one ALTER TABLE specification to cols.
func (w *ddlWork) alterColumn(cols []*colInfo, d *sqlparser.DDL) ([]*colInfo, bool, error) {
	var def *colInfo
	if d.TableSpec != nil && len(d.TableSpec.Columns) > 0 {
		def = columnOf(d.TableSpec.Columns[0], w.mariadb)
	}
	name := d.Column.String()
	i := findCol(cols, name)
	switch strings.ToLower(d.ColumnAction) {
	case sqlparser.AddStr:
		if def == nil {
			return cols, false, nil
		}
		if j := findCol(cols, def.name); j >= 0 {
			if !w.lenient {
				return nil, false, fmt.Errorf("column %s exists", def.name)
			}
			return cols, false, nil // ADD COLUMN IF NOT EXISTS of an existing column
		}
		return placeCol(cols, def, d.ColumnOrder), true, nil
	case sqlparser.DropStr:
		if i < 0 {
			if w.lenient {
				return cols, false, nil
			}
			return nil, false, fmt.Errorf("no column %s to drop", name)
		}
		return append(cols[:i:i], cols[i+1:]...), true, nil
	case sqlparser.ModifyStr, sqlparser.ChangeStr:
		if def == nil {
			return cols, false, nil
		}
		if i < 0 {
			if w.lenient {
				return cols, false, nil
			}
			return nil, false, fmt.Errorf("no column %s to change", name)
		}
		def.key = def.key || cols[i].key
		if d.ColumnOrder == nil {
			cols[i] = def
			return cols, true, nil
		}
		return placeCol(append(cols[:i:i], cols[i+1:]...), def, d.ColumnOrder), true, nil
	case sqlparser.RenameStr:
		if i < 0 {
			return nil, false, fmt.Errorf("no column %s to rename", name)
		}
		c := *cols[i]
		c.name = d.ToColumn.String()
		cols[i] = &c
		return cols, true, nil
	}
	if ix := d.IndexSpec; ix != nil && strings.EqualFold(ix.Type, "primary") {
		switch strings.ToLower(ix.Action) {
		case sqlparser.CreateStr:
			setPrimaryKey(cols, ix.Columns)
			return cols, true, nil
		case sqlparser.DropStr:
			for j, c := range cols {
				if c.key {
					cc := *c
					cc.key = false
					cols[j] = &cc
				}
			}
			return cols, true, nil
		}
	}
	return cols, false, nil
}

func findCol(cols []*colInfo, name string) int {
	for i, c := range cols {
		if strings.EqualFold(c.name, name) {
			return i
		}
	}
	return -1
}

// placeCol inserts c at the end, first, or after the column order names.
func placeCol(cols []*colInfo, c *colInfo, order *sqlparser.ColumnOrder) []*colInfo {
	at := len(cols)
	if order != nil {
		if order.First {
			at = 0
		} else if j := findCol(cols, order.AfterColumn.String()); j >= 0 {
			at = j + 1
		}
	}
	out := make([]*colInfo, 0, len(cols)+1)
	out = append(out, cols[:at]...)
	out = append(out, c)
	return append(out, cols[at:]...)
}

func setPrimaryKey(cols []*colInfo, key []*sqlparser.IndexColumn) {
	for j, c := range cols {
		in := false
		for _, k := range key {
			in = in || strings.EqualFold(k.Column.String(), c.name)
		}
		if in != c.key {
			cc := *c
			cc.key = in
			cols[j] = &cc
		}
	}
}

func cloneCols(cols []*colInfo) []*colInfo {
	if cols == nil {
		return nil
	}
	return append([]*colInfo(nil), cols...)
}

// primaryKeyOpt is the parser's ColumnKeyOption for a column declared PRIMARY KEY (the
// constant is unexported; TestParseDDL pins it).
const primaryKeyOpt = 1

// columnOf is a column definition as information_schema would describe it: DATA_TYPE after
// the server resolves aliases, and the fractional seconds, bit width and enum members.
func columnOf(cd *sqlparser.ColumnDefinition, mariadb bool) *colInfo {
	ct := cd.Type
	c := &colInfo{name: cd.Name.String(), dataType: dataTypeOf(ct, mariadb), unsigned: bool(ct.Unsigned),
		key: int(ct.KeyOpt) == primaryKeyOpt}
	length := 0
	if ct.Length != nil {
		length, _ = strconv.Atoi(string(ct.Length.Val))
	}
	switch c.dataType {
	case "datetime", "timestamp", "time":
		c.precision = length
	case "bit":
		c.bits = max(length, 1)
	case "enum", "set":
		c.members = append([]string(nil), ct.EnumValues...)
	}
	return c
}

func dataTypeOf(ct sqlparser.ColumnType, mariadb bool) string {
	t := strings.ToLower(strings.Join(strings.Fields(ct.Type), " "))
	switch t {
	case "bool", "boolean", "int1":
		return "tinyint"
	case "int2":
		return "smallint"
	case "int3", "middleint":
		return "mediumint"
	case "integer", "int4":
		return "int"
	case "int8", "serial":
		return "bigint"
	case "real", "double precision", "float8":
		return "double"
	case "float4":
		return "float"
	case "float":
		// FLOAT(p) with a precision above 24 bits and no scale is a DOUBLE.
		if ct.Scale == nil && ct.Length != nil {
			if p, err := strconv.Atoi(string(ct.Length.Val)); err == nil && p > 24 {
				return "double"
			}
		}
		return "float"
	case "numeric", "dec", "fixed":
		return "decimal"
	case "character", "national char", "nchar", "national character":
		return "char"
	case "char varying", "character varying", "nvarchar", "national varchar", "national char varying", "nchar varchar", "national character varying":
		return "varchar"
	case "long varchar", "long", "long char varying":
		return "mediumtext"
	case "long varbinary":
		return "mediumblob"
	case "json":
		if mariadb {
			return "longtext" // MariaDB's JSON is an alias of LONGTEXT
		}
	}
	return t
}
