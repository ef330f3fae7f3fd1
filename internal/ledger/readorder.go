package ledger

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
)

// readOrder keeps bookies that stopped answering reads at the back of the read order.
//
// A bookie that is paused (SIGSTOP, a long GC or VM stall) or behind a silent network
// keeps its connections open and answers nothing; every read sent to it first waits for
// the speculative timeout, and a range read waited for the whole read timeout, so catch-up
// reads crawled at a fraction of the healthy rate although every entry had other replicas.
// A bookie is taken out when a read to it was overtaken by another replica's answer or
// failed for a reason other than the data (unreachable, timed out); reads then ask it last.
// It comes back as soon as it answers any read: while it is out, at most one probe read per
// probe interval is sent to it besides the real reads, without anyone waiting on it.
// (BookKeeper's client orders reads by bookie failure history in the same spirit.)
type readOrder struct {
	probeEvery time.Duration
	timeout    time.Duration // of one probe
	log        *slog.Logger
	bg         context.Context // ends with the client

	mu  sync.Mutex
	out map[string]*outBookie
}

type outBookie struct {
	since     time.Time
	lastProbe time.Time
	probing   bool
}

func newReadOrder(bg context.Context, probeEvery, timeout time.Duration, log *slog.Logger) *readOrder {
	return &readOrder{probeEvery: probeEvery, timeout: timeout, log: log, bg: bg, out: map[string]*outBookie{}}
}

// isOut reports whether addr is out of the read order.
func (o *readOrder) isOut(addr string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.out[addr] != nil
}

// order returns the positions of ws (indexes into ens) with the bookies that are out moved
// to the end, keeping the write-set order otherwise.
func (o *readOrder) order(ens []string, ws []int) []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.out) == 0 {
		return ws
	}
	in := make([]int, 0, len(ws))
	var back []int
	for _, i := range ws {
		if o.out[ens[i]] != nil {
			back = append(back, i)
		} else {
			in = append(in, i)
		}
	}
	return append(in, back...)
}

// takeOut puts addr at the back of the read order (no-op if it is out already).
func (o *readOrder) takeOut(addr, why string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.out[addr] != nil {
		return
	}
	now := time.Now()
	o.out[addr] = &outBookie{since: now, lastProbe: now}
	o.log.Warn("bookie taken out of the read order; reads ask its replicas first until it answers again", "bookie", addr, "why", why)
}

// answered records that addr answered a read (with data or a data-plane "no"), which
// brings it back into the read order.
func (o *readOrder) answered(addr string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if b := o.out[addr]; b != nil {
		delete(o.out, addr)
		o.log.Info("bookie answers reads again; back in the read order", "bookie", addr, "outFor", time.Since(b.since).Round(time.Millisecond))
	}
}

// result records the outcome of a read sent to addr: an answer brings it back; an error
// that says nothing about the data (unreachable, timed out) takes it out.
func (o *readOrder) result(addr string, err error) {
	switch {
	case err == nil || isDataAnswer(err):
		o.answered(addr)
	case errors.Is(err, context.Canceled):
		// We stopped waiting (another replica answered first): no verdict.
	default:
		o.takeOut(addr, err.Error())
	}
}

// isDataAnswer: the bookie looked at its data and answered (it is alive and responsive).
func isDataAnswer(err error) bool {
	return errors.Is(err, bookieproto.ErrNoSuchEntry) || errors.Is(err, bookieproto.ErrNoSuchLedger) ||
		errors.Is(err, bookieproto.ErrCorrupt) || errors.Is(err, bookieproto.ErrUnauthorized) ||
		errors.Is(err, ErrCorrupt)
}

// maybeProbe sends one read of (id, e) to addr in the background when addr is out and its
// last probe is older than the probe interval; its answer brings addr back.
func (o *readOrder) maybeProbe(bk bookieproto.Client, addr string, id, e int64) {
	o.mu.Lock()
	b := o.out[addr]
	if b == nil || b.probing || time.Since(b.lastProbe) < o.probeEvery {
		o.mu.Unlock()
		return
	}
	b.probing, b.lastProbe = true, time.Now()
	o.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(o.bg, o.timeout)
		defer cancel()
		_, err := bk.ReadEntry(ctx, addr, bookieproto.ReadRequest{LedgerID: id, EntryID: e})
		if o.bg.Err() != nil {
			return
		}
		o.mu.Lock()
		if b := o.out[addr]; b != nil {
			b.probing = false
		}
		o.mu.Unlock()
		if err == nil || isDataAnswer(err) {
			o.answered(addr)
		}
	}()
}

// outList returns the bookies out of the read order, sorted (tests, status).
func (o *readOrder) outList() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for a := range o.out {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}
