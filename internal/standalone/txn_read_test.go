package standalone_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/go-sql-driver/mysql"

	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// TestTxnReadersSeeWhatConsumersSee (issue 17): with real transactions from the Go client
// on a real topic (one committed, one aborted, one left open), the topic service's Reader,
// admin peek and examine, and SQL give what a consumer is given: no markers, nothing of the
// aborted transaction, nothing at or after the open transaction's first message until it
// commits.
func TestTxnReadersSeeWhatConsumersSee(t *testing.T) {
	s := start(t, testConfig(t.TempDir()))
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar://" + s.BrokerAddr(), EnableTransaction: true,
		OperationTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic = "persistent://public/default/txn-read"
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	send := func(payload string, tx pulsar.Transaction) {
		t.Helper()
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload), Transaction: tx}); err != nil {
			t.Fatalf("send %s: %v", payload, err)
		}
	}
	newTxn := func() pulsar.Transaction {
		t.Helper()
		tx, err := c.NewTransaction(time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}
	send("p0", nil)
	committed, aborted := newTxn(), newTxn()
	send("c1", committed)
	send("c2", committed)
	send("a1", aborted)
	if err := committed.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := aborted.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	send("p1", nil)
	open := newTxn()
	send("o1", open)
	send("p2", nil)

	name, err := topics.ParseName(topic)
	if err != nil {
		t.Fatal(err)
	}
	svc := s.Topics()
	tp, err := svc.Topic(ctx, name, topics.Load{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := tp.NewReader(ctx, topics.Earliest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	readAll := func() []string {
		t.Helper()
		var got []string
		for r.HasMore() {
			es, err := r.Read(ctx, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				got = append(got, payloadOf(t, e.Data))
			}
		}
		return got
	}
	db := openSQL(t, s.SQLAddr())
	sqlValues := func() []string {
		t.Helper()
		rows, err := db.QueryContext(ctx, "SELECT __value__ FROM `txn-read` ORDER BY __sequence_id__")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rows.Close() }()
		var got []string
		for rows.Next() {
			var v []byte
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			got = append(got, string(v))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	peekAll := func() []string {
		t.Helper()
		var got []string
		for k := 1; ; k++ {
			e, err := svc.Peek(ctx, name, "peeker", k)
			if errors.Is(err, topics.ErrMessageNotFound) {
				return got
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, payloadOf(t, e.Data))
		}
	}
	examineLatest := func() string {
		t.Helper()
		e, err := svc.ExamineMessage(ctx, name, true, 1)
		if err != nil {
			t.Fatal(err)
		}
		return payloadOf(t, e.Data)
	}
	check := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("%s read %q, want %q", what, got, want)
		}
	}

	want := []string{"p0", "c1", "c2", "p1"}
	check("the reader", readAll(), want)
	check("SQL", sqlValues(), want)
	check("peek", peekAll(), want)
	if got := examineLatest(); got != "p1" {
		t.Fatalf("examine latest: %q, want p1", got)
	}

	if err := open.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want = append(want, "o1", "p2")
	check("the reader after the commit", readAll(), want[4:])
	check("SQL after the commit", sqlValues(), want)
	check("peek after the commit", peekAll(), want)
	if got := examineLatest(); got != "p2" {
		t.Fatalf("examine latest after the commit: %q, want p2", got)
	}
}

// payloadOf is a stored single-message entry's payload.
func payloadOf(t *testing.T, data []byte) string {
	t.Helper()
	_, body, err := wire.SplitHeadersAndPayload(data)
	if err != nil {
		t.Fatal(err)
	}
	e, err := wire.ParseEntry(body, false)
	if err != nil {
		t.Fatal(err)
	}
	return string(e.Payload)
}

// openSQL connects to the standalone's SQL server on public/default as the anonymous role.
func openSQL(t *testing.T, addr string) *sql.DB {
	t.Helper()
	if addr == "" {
		t.Fatal("the standalone serves no SQL (sqlEnabled)")
	}
	mc := mysql.NewConfig()
	mc.Net, mc.Addr, mc.User, mc.DBName = "tcp", addr, "anon", "public/default"
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		t.Fatal(fmt.Errorf("SQL connector: %w", err))
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { _ = db.Close() })
	return db
}
