package jdbc

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
)

// column is a target table's column.
type column struct {
	name string
	// kind classifies the type for value conversion: int, float, decimal, bool, string,
	// binary, date, time, timestamp, timestamptz, json, other.
	kind string
	// cast is the PostgreSQL type a text parameter is cast to.
	cast      string
	precision int // fractional seconds of time/timestamp columns
	key       bool
}

// dialect is what differs between PostgreSQL and MySQL/MariaDB.
type dialect interface {
	driver() string
	quote(ident string) string
	// placeholder is parameter n (1-based) for column c.
	placeholder(n int, c *column) string
	columns(ctx context.Context, db *sql.DB, table string) ([]*column, error)
	upsertTail(keys, updates []string) string
	// permanent reports whether err is the record's fault (retrying cannot help).
	permanent(err error) bool
	maxParams() int
}

type postgresDialect struct{}

func (postgresDialect) driver() string { return "pgx" }

func (postgresDialect) quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func (postgresDialect) placeholder(n int, c *column) string {
	if c.kind == "binary" {
		return "$" + strconv.Itoa(n) + "::bytea"
	}
	// Every value travels as text and the server casts it: one encoding for every type.
	return "$" + strconv.Itoa(n) + "::text::" + c.cast
}

func (postgresDialect) maxParams() int { return 65535 }

// postgresKinds maps a column type to the kind the sink converts values to (unlisted: "other").
var postgresKinds = map[string]string{
	"int2":        "int",
	"int4":        "int",
	"int8":        "int",
	"oid":         "int",
	"float4":      "float",
	"float8":      "float",
	"numeric":     "decimal",
	"money":       "decimal",
	"bool":        "bool",
	"bytea":       "binary",
	"date":        "date",
	"time":        "time",
	"timestamp":   "timestamp",
	"timestamptz": "timestamptz",
	"json":        "json",
	"jsonb":       "json",
	"text":        "string",
	"varchar":     "string",
	"bpchar":      "string",
	"name":        "string",
	"uuid":        "string",
}

func (d postgresDialect) columns(ctx context.Context, db *sql.DB, table string) ([]*column, error) {
	rows, err := db.QueryContext(ctx, `SELECT a.attname, t.typname, format_type(a.atttypid, NULL), a.atttypmod,
		COALESCE((SELECT true FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary AND a.attnum = ANY(i.indkey)), false)
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*column
	for rows.Next() {
		c := &column{}
		var typ string
		var typmod int
		if err := rows.Scan(&c.name, &typ, &c.cast, &typmod, &c.key); err != nil {
			return nil, err
		}
		c.precision = typmod
		if c.precision < 0 {
			c.precision = 6
		}
		c.kind = cmp.Or(postgresKinds[typ], "other")
		out = append(out, c)
	}
	return out, rows.Err()
}

func (d postgresDialect) upsertTail(keys, updates []string) string {
	var b strings.Builder
	b.WriteString(" ON CONFLICT (")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(d.quote(k))
	}
	if len(updates) == 0 {
		b.WriteString(") DO NOTHING")
		return b.String()
	}
	b.WriteString(") DO UPDATE SET ")
	for i, u := range updates {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(d.quote(u) + " = EXCLUDED." + d.quote(u))
	}
	return b.String()
}

func (postgresDialect) permanent(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch {
	case pe.Code == "42P01": // undefined table: an operator can create it; keep retrying
		return false
	case strings.HasPrefix(pe.Code, "22"), strings.HasPrefix(pe.Code, "23"), strings.HasPrefix(pe.Code, "42"):
		return true // data exception, integrity constraint, undefined column / syntax
	}
	return false
}

type mysqlDialect struct{}

func (mysqlDialect) driver() string { return "mysql" }

func (mysqlDialect) quote(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func (mysqlDialect) placeholder(int, *column) string { return "?" }

func (mysqlDialect) maxParams() int { return 65535 }

// mysqlKinds maps a column type to the kind the sink converts values to (unlisted: "other").
var mysqlKinds = map[string]string{
	"tinyint":    "int",
	"smallint":   "int",
	"mediumint":  "int",
	"int":        "int",
	"integer":    "int",
	"bigint":     "int",
	"year":       "int",
	"bit":        "int",
	"float":      "float",
	"double":     "float",
	"real":       "float",
	"decimal":    "decimal",
	"numeric":    "decimal",
	"binary":     "binary",
	"varbinary":  "binary",
	"tinyblob":   "binary",
	"blob":       "binary",
	"mediumblob": "binary",
	"longblob":   "binary",
	"date":       "date",
	"time":       "time",
	"datetime":   "timestamp",
	"timestamp":  "timestamptz",
	"json":       "json",
	"char":       "string",
	"varchar":    "string",
	"tinytext":   "string",
	"text":       "string",
	"mediumtext": "string",
	"longtext":   "string",
	"enum":       "string",
	"set":        "string",
}

func (mysqlDialect) columns(ctx context.Context, db *sql.DB, table string) ([]*column, error) {
	schema := "DATABASE()"
	args := []any{table}
	if i := strings.IndexByte(table, '.'); i >= 0 {
		schema, args = "?", []any{table[:i], table[i+1:]}
	}
	rows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_KEY, COALESCE(DATETIME_PRECISION, 0)
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = `+schema+` AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*column
	for rows.Next() {
		c := &column{}
		var typ, key string
		if err := rows.Scan(&c.name, &typ, &key, &c.precision); err != nil {
			return nil, err
		}
		c.key = key == "PRI"
		c.kind = cmp.Or(mysqlKinds[strings.ToLower(typ)], "other")
		out = append(out, c)
	}
	return out, rows.Err()
}

func (d mysqlDialect) upsertTail(keys, updates []string) string {
	if len(updates) == 0 {
		// A no-op assignment keeps the row (INSERT IGNORE would hide other errors too).
		updates = keys[:1]
	}
	var b strings.Builder
	b.WriteString(" ON DUPLICATE KEY UPDATE ")
	for i, u := range updates {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(d.quote(u) + " = VALUES(" + d.quote(u) + ")")
	}
	return b.String()
}

func (mysqlDialect) permanent(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 1048, 1054, 1062, 1064, 1136, 1211, 1264, 1265, 1292, 1364, 1366, 1367, 1406, 1416, 1451, 1452, 3140, 3819, 4025:
		return true // bad value, duplicate, unknown column, constraint
	}
	return false
}

// parseURL reads a JDBC URL: jdbc:postgresql://host[:port]/db[?params],
// jdbc:mariadb://..., jdbc:mysql://... .
func parseURL(raw string) (d dialect, host, port, db string, params map[string]string, err error) {
	rest, ok := strings.CutPrefix(raw, "jdbc:")
	if !ok {
		return nil, "", "", "", nil, fmt.Errorf("jdbcUrl %q does not start with jdbc:", raw)
	}
	scheme, rest, ok := strings.Cut(rest, "://")
	if !ok {
		return nil, "", "", "", nil, fmt.Errorf("jdbcUrl %q: want jdbc:<database>://host:port/db", raw)
	}
	switch scheme {
	case "postgresql", "postgres":
		d, port = postgresDialect{}, "5432"
	case "mariadb", "mysql":
		d, port = mysqlDialect{}, "3306"
	default:
		return nil, "", "", "", nil, fmt.Errorf("jdbcUrl %q: database %q is not postgresql, mariadb or mysql", raw, scheme)
	}
	hostPart, pathPart, _ := strings.Cut(rest, "/")
	db, query, _ := strings.Cut(pathPart, "?")
	host = hostPart
	if h, p, ok := strings.Cut(hostPart, ":"); ok {
		host, port = h, p
	}
	if host == "" {
		host = "localhost"
	}
	if _, perr := strconv.Atoi(port); perr != nil {
		return nil, "", "", "", nil, fmt.Errorf("jdbcUrl %q: port %q is not a number", raw, port)
	}
	params = map[string]string{}
	for _, kv := range strings.FieldsFunc(query, func(r rune) bool { return r == '&' || r == ';' }) {
		k, v, _ := strings.Cut(kv, "=")
		params[k] = v
	}
	return d, host, port, db, params, nil
}
