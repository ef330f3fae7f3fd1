package sql

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/schema"
	"github.com/magnetar-io/magnetar/internal/wire"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// memSource is an in-memory Source for the engine's unit tests (the real one, over
// managed-ledger snapshots on real bookies, is tested in internal/sqlworker).
type memSource struct {
	mu     sync.Mutex
	topics map[string]*memTopic // "tenant/ns/topic"
	opens  int
	// stall, when set, makes every read wait for the statement's end (limits tests);
	// stalled receives once per stalled read.
	stall   bool
	stalled chan struct{}
	// gate, when set, counts the reads in flight (peak is the most at once) and holds each
	// until a value arrives on gate, after announcing itself on entered.
	gate, entered  chan struct{}
	inflight, peak atomic.Int64
}

type memTopic struct {
	info  TopicInfo
	parts map[int][]Ledger // partition -> ledgers
	data  map[int]map[[2]int64][]byte
}

func newMemSource() *memSource { return &memSource{topics: map[string]*memTopic{}} }

func (m *memSource) Namespaces(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	for k := range m.topics {
		seen[k[:strings.LastIndex(k, "/")]] = true
	}
	var out []string
	for ns := range seen {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out, nil
}

func (m *memSource) Topics(_ context.Context, ns string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.topics {
		if strings.HasPrefix(k, ns+"/") {
			out = append(out, k[len(ns)+1:])
		}
	}
	sort.Strings(out)
	return out, nil
}

func (m *memSource) Topic(_ context.Context, ns, t string) (TopicInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := m.topics[ns+"/"+t]
	if mt == nil {
		return TopicInfo{}, ErrTopicNotFound
	}
	return mt.info, nil
}

func (m *memSource) SchemaVersion(_ context.Context, ns, t string, _ int64) (schema.Schema, error) {
	info, err := m.Topic(context.Background(), ns, t)
	return info.Schema, err
}

func (m *memSource) Open(_ context.Context, ns, t string, part int) (Log, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.opens++
	mt := m.topics[ns+"/"+t]
	if mt == nil {
		return nil, ErrTopicNotFound
	}
	return &memLog{ledgers: append([]Ledger(nil), mt.parts[part]...), data: mt.data[part], src: m}, nil
}

type memLog struct {
	ledgers []Ledger
	data    map[[2]int64][]byte
	src     *memSource
}

func (l *memLog) Ledgers() []Ledger { return l.ledgers }
func (l *memLog) Close() error      { return nil }
func (l *memLog) Read(ctx context.Context, id, first, last int64) ([]Entry, error) {
	l.src.mu.Lock()
	stall, stalled, gate := l.src.stall, l.src.stalled, l.src.gate
	l.src.mu.Unlock()
	if gate != nil {
		n := l.src.inflight.Add(1)
		for p := l.src.peak.Load(); n > p && !l.src.peak.CompareAndSwap(p, n); p = l.src.peak.Load() {
		}
		l.src.entered <- struct{}{}
		<-gate
		l.src.inflight.Add(-1)
	}
	if stall {
		select {
		case stalled <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var out []Entry
	for e := first; e <= last; e++ {
		d, ok := l.data[[2]int64{id, e}]
		if !ok {
			return nil, fmt.Errorf("no entry (%d,%d)", id, e)
		}
		out = append(out, Entry{LedgerID: id, EntryID: e, Data: d})
	}
	return out, nil
}

// msg is one message to store.
type msg struct {
	payload []byte
	key     string
	pub     int64 // publish time, ms
	props   map[string]string
}

// add stores msgs in partition part, perBatch messages per entry (0: not batched), a new
// ledger every perLedger entries.
func (m *memSource) add(t *testing.T, topic string, info TopicInfo, part int, perBatch, perLedger int, msgs []msg) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	mt := m.topics[topic]
	if mt == nil {
		mt = &memTopic{info: info, parts: map[int][]Ledger{}, data: map[int]map[[2]int64][]byte{}}
		m.topics[topic] = mt
	}
	if mt.data[part] == nil {
		mt.data[part] = map[[2]int64][]byte{}
	}
	ledgerID := int64(100*part + 1000)
	var seq uint64
	put := func(data []byte) {
		ls := mt.parts[part]
		if len(ls) == 0 || ls[len(ls)-1].Entries >= int64(perLedger) {
			ledgerID++
			ls = append(ls, Ledger{ID: ledgerID})
		}
		l := &ls[len(ls)-1]
		mt.data[part][[2]int64{l.ID, l.Entries}] = data
		l.Entries++
		l.Size += int64(len(data))
		mt.parts[part] = ls
	}
	props := func(p map[string]string) []*pb.KeyValue {
		var out []*pb.KeyValue
		for k, v := range p {
			out = append(out, &pb.KeyValue{Key: proto.String(k), Value: proto.String(v)})
		}
		return out
	}
	for i := 0; i < len(msgs); {
		if perBatch == 0 {
			mg := msgs[i]
			md := &pb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(seq), PublishTime: proto.Uint64(uint64(mg.pub)), Properties: props(mg.props)}
			if mg.key != "" {
				md.PartitionKey = proto.String(mg.key)
			}
			seq++
			e, err := wire.AppendEntry(nil, md, mg.payload)
			if err != nil {
				t.Fatal(err)
			}
			put(e)
			i++
			continue
		}
		n := min(perBatch, len(msgs)-i)
		var body []byte
		for _, mg := range msgs[i : i+n] {
			smm := &pb.SingleMessageMetadata{SequenceId: proto.Uint64(seq), Properties: props(mg.props)}
			if mg.key != "" {
				smm.PartitionKey = proto.String(mg.key)
			}
			seq++
			var err error
			if body, err = wire.AppendBatchMessage(body, smm, mg.payload); err != nil {
				t.Fatal(err)
			}
		}
		md := &pb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(seq - uint64(n)),
			PublishTime: proto.Uint64(uint64(msgs[i].pub)), NumMessagesInBatch: proto.Int32(int32(n))}
		e, err := wire.AppendEntry(nil, md, body)
		if err != nil {
			t.Fatal(err)
		}
		put(e)
		i += n
	}
}

// serve starts a Server over src on a free loopback port and returns a database/sql handle.
func serve(t *testing.T, src Source, mod func(*config.SQLConfig)) (*Server, *sql.DB) {
	t.Helper()
	cfg := config.DefaultSQLConfig()
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(Options{Config: cfg, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	db, err := sql.Open("mysql", "u@tcp("+ln.Addr().String()+")/?parseTime=true&loc=UTC")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1) // one connection: LastStats of the test's statements
	deadline := time.Now().Add(time.Minute)
	for {
		if err := db.Ping(); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s, db
}

func queryRows(t *testing.T, db *sql.DB, q string, args ...any) [][]string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = "NULL"
			if v.Valid {
				row[i] = v.String
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}
