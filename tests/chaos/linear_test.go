package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/connect"
)

// metaWorkload exercises the metadata store through the Store API the brokers use, on the
// two kinds of record the cluster's safety rests on: an owner register (put / get of one
// key, like a bundle's ownership record) and ledger ids (a ledger id is the version of one
// unconditional write: ids must grow in real-time order). Each client keeps its own store
// connection (to all three members). porcupine checks the history for linearizability.
type metaWorkload struct {
	url  string
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	ops  []porcupine.Operation
	t0   time.Time
}

type regInput struct {
	op    string // "put", "get", "id"
	key   string
	value string
}

type regOutput struct {
	value   string
	id      int64
	unknown bool // the call's outcome is not known (error, timeout)
}

func startMetaWorkload(url string, clients int) *metaWorkload {
	m := &metaWorkload{url: url, stop: make(chan struct{}), t0: time.Now()}
	for c := range clients {
		m.wg.Add(1)
		go m.client(c)
	}
	return m
}

func (m *metaWorkload) now() int64 { return time.Since(m.t0).Nanoseconds() }

func (m *metaWorkload) client(id int) {
	defer m.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	store, err := connect.Open(ctx, m.url, slog.New(slog.DiscardHandler))
	cancel()
	if err != nil {
		return
	}
	defer store.Close()
	for i := 0; ; i++ {
		select {
		case <-m.stop:
			return
		default:
		}
		var in regInput
		switch i % 3 {
		case 0:
			in = regInput{op: "put", key: "/chaos/owner", value: fmt.Sprintf("c%d-%d", id, i)}
		case 1:
			in = regInput{op: "get", key: "/chaos/owner"}
		default:
			in = regInput{op: "id", key: "/chaos/ledger-id"}
		}
		call := m.now()
		out := m.do(store, in)
		ret := m.now()
		if out.unknown {
			if in.op == "get" {
				continue // a read that returned nothing observable constrains nothing
			}
			ret = 1 << 62 // may take effect at any time after the call
		}
		m.mu.Lock()
		m.ops = append(m.ops, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
		m.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
}

func (m *metaWorkload) do(store metadata.Store, in regInput) regOutput {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	switch in.op {
	case "put":
		if _, err := store.Put(ctx, in.key, []byte(in.value), metadata.AnyVersion); err != nil {
			return regOutput{unknown: true}
		}
		return regOutput{}
	case "get":
		kv, err := store.Get(ctx, in.key)
		if errors.Is(err, metadata.ErrNotFound) {
			return regOutput{}
		}
		if err != nil {
			return regOutput{unknown: true}
		}
		return regOutput{value: string(kv.Value)}
	default:
		v, err := store.Put(ctx, in.key, nil, metadata.AnyVersion)
		if err != nil {
			return regOutput{unknown: true}
		}
		return regOutput{id: int64(v)}
	}
}

type regState struct {
	owner  string
	lastID int64
}

var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, o := range h {
			k := o.Input.(regInput).key
			byKey[k] = append(byKey[k], o)
		}
		var out [][]porcupine.Operation
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return regState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(regState), input.(regInput), output.(regOutput)
		switch in.op {
		case "put":
			s.owner = in.value
			return true, s
		case "get":
			return out.value == s.owner, s
		default:
			if out.unknown {
				return true, s // the write may have happened; its id was never seen
			}
			if out.id <= s.lastID {
				return false, s
			}
			s.lastID = out.id
			return true, s
		}
	},
}

// finish stops the clients and checks the history.
func (m *metaWorkload) finish() (string, int) {
	close(m.stop)
	m.wg.Wait()
	res := porcupine.CheckOperationsTimeout(registerModel, m.ops, time.Minute)
	switch res {
	case porcupine.Ok:
		return "ok", len(m.ops)
	case porcupine.Illegal:
		return "illegal", len(m.ops)
	}
	return "unknown", len(m.ops)
}
