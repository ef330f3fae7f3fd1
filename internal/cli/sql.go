package cli

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/sqlworker"
)

// sqlWorkerCmd is `magnetar sql-worker`: the SQL server against a cluster's metadata store
// and bookies (Pulsar's `pulsar sql-worker run`), serving until SIGINT or SIGTERM.
func (a *app) sqlWorkerCmd() *cobra.Command {
	cfg := config.DefaultSQLWorkerConfig()
	cmd := &cobra.Command{
		Use:   "sql-worker",
		Short: "Run the SQL server (MySQL protocol) over a cluster's topics, reading storage directly",
		Args:  cobra.NoArgs,
	}
	b := bindFlags(cmd.Flags(), &cfg)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		logger, err := a.load(b, cfg.Validate)
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		w, err := sqlworker.StartRole(ctx, cfg, logger, reg)
		if err != nil {
			return fmt.Errorf("sql-worker: %w", err)
		}
		httpAddr := ""
		var srv *http.Server
		if cfg.WebServicePort >= 0 {
			ln, err := net.Listen("tcp", net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.WebServicePort)))
			if err != nil {
				_ = w.Close()
				return fmt.Errorf("sql-worker: HTTP listen (webServicePort): %w", err)
			}
			mux := http.NewServeMux()
			mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			mux.HandleFunc("/status.html", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "OK") })
			srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
			go func() { _ = srv.Serve(ln) }()
			httpAddr = "http://" + ln.Addr().String()
		}
		logger.Info("magnetar sql-worker ready", "sql", w.Addr(), "http", httpAddr)
		select {
		case <-ctx.Done():
			logger.Info("shutting down (signal received)")
		case err := <-w.Failed():
			logger.Error("the SQL server stopped on its own; shutting down", "err", err)
		}
		if srv != nil {
			_ = srv.Close()
		}
		return w.Close()
	}
	return cmd
}

// sqlCmd is `magnetar sql`: an interactive SQL shell (or one statement with --execute) on a
// SQL server, the local standalone's by default.
func (a *app) sqlCmd() *cobra.Command {
	var server, user, password, token, schema, execute string
	var useTLS bool
	var sec clientSecurity
	cmd := &cobra.Command{
		Use:   "sql",
		Short: "SQL shell over topics (MySQL protocol); --execute runs one statement",
		Args:  cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.StringVar(&server, "server", "127.0.0.1:3306", "SQL server host:port (default: the local standalone)")
	fs.StringVar(&user, "user", "magnetar", "user name")
	fs.StringVar(&password, "password", "", "password (basic authentication) or a token as token:<jwt>")
	fs.StringVar(&token, "token", "", "a Pulsar token to authenticate with (sent as the password)")
	fs.StringVar(&schema, "schema", "public/default", "namespace to use (tenant/namespace)")
	fs.StringVarP(&execute, "execute", "e", "", "run this statement, print its result and exit")
	fs.BoolVar(&useTLS, "tls", false, "connect with TLS (mysql --ssl); implied by any --tls-* flag")
	sec.bindTLS(fs)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		mc := mysql.NewConfig()
		if useTLS || sec.tlsFlagSet() {
			tc, err := sec.clientTLS(sec.certFile, sec.keyFile)
			if err != nil {
				return err
			}
			// Our verification (VerifyConnection) checks the host against ServerName.
			host, _, err := net.SplitHostPort(server)
			if err != nil {
				return usageError(fmt.Errorf("--server %q: %w", server, err))
			}
			tc.ServerName = host
			mc.TLS = tc
		}
		mc.Net, mc.Addr, mc.User, mc.DBName = "tcp", server, user, schema
		mc.Passwd = password
		if token != "" {
			mc.Passwd = "token:" + token
		}
		// A client certificate with no password logs in as the certificate, through the
		// server's clear-text method with an empty password (over TLS).
		mc.AllowCleartextPasswords = mc.Passwd != "" || (mc.TLS != nil && sec.certFile != "")
		mc.ParseTime, mc.Loc = true, time.UTC
		mc.Timeout = 10 * time.Second
		conn, err := mysql.NewConnector(mc)
		if err != nil {
			return usageError(err)
		}
		db := sql.OpenDB(conn)
		defer db.Close()
		ctx := cmd.Context()
		c, err := db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("sql: connecting to %s: %w", server, err)
		}
		defer c.Close()
		out := cmd.OutOrStdout()
		if execute != "" {
			return runStatement(ctx, c, execute, out)
		}
		return sqlShell(ctx, c, cmd.InOrStdin(), out, cmd.ErrOrStderr())
	}
	return cmd
}

// sqlShell reads statements ending in ';' and prints each result; errors are printed and
// the shell goes on. "exit", "quit" or end of input end it.
func sqlShell(ctx context.Context, c *sql.Conn, in io.Reader, out, errOut io.Writer) error {
	interactive := false
	if f, ok := in.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			interactive = true
		}
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var stmt strings.Builder
	prompt := func() {
		if interactive {
			if stmt.Len() == 0 {
				fmt.Fprint(out, "magnetar> ")
			} else {
				fmt.Fprint(out, "       -> ")
			}
		}
	}
	prompt()
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if stmt.Len() == 0 && (line == "exit" || line == "quit" || line == `\q`) {
			return nil
		}
		stmt.WriteString(line)
		stmt.WriteByte('\n')
		if strings.HasSuffix(line, ";") {
			q := strings.TrimSuffix(strings.TrimSpace(stmt.String()), ";")
			stmt.Reset()
			if strings.TrimSpace(q) != "" {
				if err := runStatement(ctx, c, q, out); err != nil {
					fmt.Fprintln(errOut, "ERROR:", err)
				}
			}
		}
		prompt()
	}
	if q := strings.TrimSpace(stmt.String()); q != "" {
		if err := runStatement(ctx, c, strings.TrimSuffix(q, ";"), out); err != nil {
			fmt.Fprintln(errOut, "ERROR:", err)
		}
	}
	return sc.Err()
}

// runStatement runs one statement and prints its rows as a table.
func runStatement(ctx context.Context, c *sql.Conn, q string, out io.Writer) error {
	start := time.Now()
	rows, err := c.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	var table [][]string
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			if v == nil {
				row[i] = "NULL"
			} else {
				row[i] = string(v)
			}
		}
		table = append(table, row)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(cols) > 0 {
		printTable(out, cols, table)
	}
	noun := "rows"
	if len(table) == 1 {
		noun = "row"
	}
	fmt.Fprintf(out, "%d %s in set (%.2f sec)\n", len(table), noun, time.Since(start).Seconds())
	return nil
}

func printTable(out io.Writer, cols []string, rows [][]string) {
	w := make([]int, len(cols))
	for i, c := range cols {
		w[i] = utf8.RuneCountInString(c)
	}
	for _, r := range rows {
		for i, v := range r {
			w[i] = max(w[i], utf8.RuneCountInString(v))
		}
	}
	line := func() {
		var b strings.Builder
		for _, n := range w {
			b.WriteString("+" + strings.Repeat("-", n+2))
		}
		fmt.Fprintln(out, b.String()+"+")
	}
	cells := func(vs []string) {
		var b strings.Builder
		for i, v := range vs {
			b.WriteString("| " + v + strings.Repeat(" ", w[i]-utf8.RuneCountInString(v)) + " ")
		}
		fmt.Fprintln(out, b.String()+"|")
	}
	line()
	cells(cols)
	line()
	for _, r := range rows {
		cells(r)
	}
	line()
}
