package testenv

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresOptions configure StartPostgres.
type PostgresOptions struct {
	// Settings are extra server settings (name=value), e.g. "synchronous_commit=off".
	Settings []string
}

// Postgres is a PostgreSQL 15 server (Debian's postgresql-15) with wal_level=logical, on a
// free loopback port with its data in a temporary directory, run as the postgres user
// (the server refuses root). The superuser is postgres, trusted from loopback.
type Postgres struct {
	Port int
	Dir  string
	bin  string
	args []string
	uid  int
	gid  int
	proc *Process
	tb   testing.TB
}

// StartPostgres installs PostgreSQL 15 when missing, initializes a cluster and starts it;
// tb.Cleanup stops it and removes its files.
func StartPostgres(tb testing.TB, o PostgresOptions) *Postgres {
	tb.Helper()
	bin := DebianProgram(tb, "/usr/lib/postgresql/15/bin/postgres", "postgresql-15")
	initdb := filepath.Join(filepath.Dir(bin), "initdb")
	u, err := user.Lookup("postgres")
	if err != nil {
		tb.Fatalf("testenv: the postgres user (from the postgresql-15 package): %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// Not t.TempDir: its parents are root's and closed to the postgres user.
	dir, err := os.MkdirTemp("", "magnetar-pg-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	mkdir(tb, data)
	if err := chownTree(dir, uid, gid); err != nil {
		tb.Fatal(err)
	}
	p := &Postgres{Dir: dir, bin: bin, uid: uid, gid: gid, tb: tb}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if out, err := runAs(ctx, uid, gid, initdb, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		tb.Fatalf("testenv: initdb: %v\n%s", err, tail(out, 4000))
	}
	p.Port = FreePort(tb)
	p.args = []string{"-D", data, "-p", strconv.Itoa(p.Port), "-k", dir, "-h", "127.0.0.1",
		"-c", "wal_level=logical", "-c", "max_wal_senders=10", "-c", "max_replication_slots=10",
		"-c", "shared_buffers=32MB", "-c", "max_connections=60"}
	for _, s := range o.Settings {
		p.args = append(p.args, "-c", s)
	}
	p.Start()
	tb.Cleanup(p.Stop)
	return p
}

// Start starts the server (again, after Stop or Kill) and waits until it accepts queries.
func (p *Postgres) Start() {
	p.tb.Helper()
	if p.proc != nil {
		if exited, _ := p.proc.Exited(); !exited {
			return
		}
	}
	proc, err := StartProcess("/usr/bin/setpriv", append([]string{"--reuid=" + strconv.Itoa(p.uid), "--regid=" + strconv.Itoa(p.gid),
		"--clear-groups", "--", p.bin}, p.args...), nil, p.Dir)
	if err != nil {
		p.tb.Fatal(err)
	}
	p.proc = proc
	deadline := time.Now().Add(startTimeout)
	for {
		if exited, err := proc.Exited(); exited {
			p.tb.Fatalf("testenv: postgres exited: %v\n%s", err, tail(proc.Output(), 4000))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := pgx.Connect(ctx, p.DSN("postgres"))
		if err == nil {
			_, err = c.Exec(ctx, "SELECT 1")
			_ = c.Close(ctx)
		}
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			p.tb.Fatalf("testenv: postgres not ready after %s: %v\n%s", startTimeout, err, tail(proc.Output(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop shuts the server down (fast shutdown: clients are disconnected, the WAL flushed).
func (p *Postgres) Stop() {
	if p.proc == nil {
		return
	}
	if exited, _ := p.proc.Exited(); exited {
		return
	}
	_ = p.proc.Signal(syscall.SIGINT)
	if !p.proc.WaitExit(time.Minute) {
		p.proc.Kill()
	}
}

// Kill kills the server (SIGKILL): a crash; Start recovers it from its WAL.
func (p *Postgres) Kill() {
	if p.proc != nil {
		p.proc.Kill()
	}
}

// Output is the server's log.
func (p *Postgres) Output() string { return p.proc.Output() }

// DSN is a connection URL for database db as the superuser.
func (p *Postgres) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.Port, db)
}

// Exec runs statements in database db, failing the test on an error.
func (p *Postgres) Exec(tb testing.TB, db string, stmts ...string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := pgx.Connect(ctx, p.DSN(db))
	if err != nil {
		tb.Fatalf("testenv: connecting to %s: %v", db, err)
	}
	defer c.Close(ctx)
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			tb.Fatalf("testenv: %s: %v", s, err)
		}
	}
}

// CreateDatabase creates database name.
func (p *Postgres) CreateDatabase(tb testing.TB, name string) {
	tb.Helper()
	p.Exec(tb, "postgres", "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
}

// runAs runs a program as uid/gid and returns its output.
func runAs(ctx context.Context, uid, gid int, bin string, args ...string) (string, error) {
	proc, err := StartProcess("/usr/bin/setpriv", append([]string{"--reuid=" + strconv.Itoa(uid), "--regid=" + strconv.Itoa(gid),
		"--clear-groups", "--", bin}, args...), nil, os.TempDir())
	if err != nil {
		return "", err
	}
	select {
	case <-ctx.Done():
		proc.Kill()
		return proc.Output(), ctx.Err()
	case <-proc.done:
	}
	_, err = proc.Exited()
	return proc.Output(), err
}
