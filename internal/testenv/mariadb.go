package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // database/sql driver for MariaDB
)

// MariaDB is a MariaDB server (Debian's mariadb-server) with the binary log in row format
// (binlog_row_image=FULL, binlog_row_metadata=FULL), on a free loopback port with its data in
// a temporary directory. User and Password are an account with every privilege (replication
// included), reachable over TCP.
type MariaDB struct {
	Port     int
	Dir      string
	User     string
	Password string
	bin      string
	args     []string
	proc     *Process
	tb       testing.TB
}

// StartMariaDB installs MariaDB when missing, creates a data directory and starts the
// server; tb.Cleanup stops it.
func StartMariaDB(tb testing.TB) *MariaDB {
	tb.Helper()
	bin := DebianProgram(tb, "mariadbd", "mariadb-server")
	install := DebianProgram(tb, "mariadb-install-db", "mariadb-server")
	dir := tb.TempDir()
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	out, err := runAs(ctx, 0, 0, install, "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db")
	if err != nil {
		tb.Fatalf("testenv: mariadb-install-db: %v\n%s", err, tail(out, 4000))
	}
	m := &MariaDB{Dir: dir, bin: bin, User: "magnetar", Password: "magnetar", tb: tb}
	m.Port = FreePort(tb)
	m.args = []string{"--no-defaults", "--datadir=" + data, "--port=" + strconv.Itoa(m.Port), "--bind-address=127.0.0.1",
		"--socket=" + m.socket(), "--pid-file=" + filepath.Join(dir, "mariadb.pid"), "--user=root",
		"--server-id=1", "--log-bin=" + filepath.Join(dir, "binlog"), "--binlog-format=ROW", "--binlog-row-image=FULL",
		"--binlog-row-metadata=FULL", "--innodb-buffer-pool-size=64M", "--max-connections=100", "--skip-name-resolve"}
	m.Start()
	tb.Cleanup(m.Stop)
	m.execSocket(tb, "CREATE USER IF NOT EXISTS 'magnetar'@'%' IDENTIFIED BY 'magnetar'",
		"GRANT ALL PRIVILEGES ON *.* TO 'magnetar'@'%' WITH GRANT OPTION", "FLUSH PRIVILEGES")
	return m
}

func (m *MariaDB) socket() string { return filepath.Join(m.Dir, "mariadb.sock") }

// Start starts the server (again, after Stop or Kill) and waits until it accepts queries.
func (m *MariaDB) Start() {
	m.tb.Helper()
	if m.proc != nil {
		if exited, _ := m.proc.Exited(); !exited {
			return
		}
	}
	proc, err := StartProcess(m.bin, m.args, nil, m.Dir)
	if err != nil {
		m.tb.Fatal(err)
	}
	m.proc = proc
	deadline := time.Now().Add(startTimeout)
	for {
		if exited, err := proc.Exited(); exited {
			m.tb.Fatalf("testenv: mariadbd exited: %v\n%s", err, tail(proc.Output(), 4000))
		}
		db, err := sql.Open("mysql", "root@unix("+m.socket()+")/")
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = db.PingContext(ctx)
			cancel()
			_ = db.Close()
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			m.tb.Fatalf("testenv: mariadbd not ready after %s: %v\n%s", startTimeout, err, tail(proc.Output(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop shuts the server down cleanly.
func (m *MariaDB) Stop() {
	if m.proc == nil {
		return
	}
	if exited, _ := m.proc.Exited(); exited {
		return
	}
	_ = m.proc.Signal(syscall.SIGTERM)
	if !m.proc.WaitExit(2 * time.Minute) {
		m.proc.Kill()
	}
}

// Kill kills the server (SIGKILL): a crash; Start recovers it.
func (m *MariaDB) Kill() {
	if m.proc != nil {
		m.proc.Kill()
	}
}

// Output is the server's log.
func (m *MariaDB) Output() string { return m.proc.Output() }

// DSN is a go-sql-driver DSN for database db over TCP.
func (m *MariaDB) DSN(db string) string {
	return fmt.Sprintf("%s:%s@tcp(127.0.0.1:%d)/%s?parseTime=true&multiStatements=true", m.User, m.Password, m.Port, db)
}

// JDBCURL is the jdbc:mariadb:// URL of database db (what Pulsar's JDBC sink takes).
func (m *MariaDB) JDBCURL(db string) string {
	return fmt.Sprintf("jdbc:mariadb://127.0.0.1:%d/%s", m.Port, db)
}

// Exec runs statements (in database db, "" for none), failing the test on an error.
func (m *MariaDB) Exec(tb testing.TB, db string, stmts ...string) {
	tb.Helper()
	c, err := sql.Open("mysql", m.DSN(db))
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	execAll(tb, c, stmts)
}

func (m *MariaDB) execSocket(tb testing.TB, stmts ...string) {
	tb.Helper()
	c, err := sql.Open("mysql", "root@unix("+m.socket()+")/")
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	execAll(tb, c, stmts)
}

func execAll(tb testing.TB, c *sql.DB, stmts []string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for _, s := range stmts {
		if _, err := c.ExecContext(ctx, s); err != nil {
			tb.Fatalf("testenv: %s: %v", s, err)
		}
	}
}
