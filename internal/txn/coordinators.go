package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/managedledger"
)

// AssignTopic is the partitioned topic whose partition i stands for coordinator i: the
// broker owning the partition's bundle serves the coordinator (clients look the partition
// up to find it).
const AssignTopic = "persistent://pulsar/system/transaction_coordinator_assign"

// AssignPartition is the name of partition id of AssignTopic.
func AssignPartition(id uint64) string {
	return AssignTopic + "-partition-" + strconv.FormatUint(id, 10)
}

// CoordinatorsOptions are a broker's coordinators' collaborators.
type CoordinatorsOptions struct {
	// Count is the number of coordinators (the assign topic's partitions).
	Count int
	// Ledgers opens the coordinator logs.
	Ledgers *managedledger.Factory
	// Participants end transactions on topics and subscriptions.
	Participants Participants
	// Config has the bounds and timeouts.
	Config config.TransactionConfig
	// Logger is the parent logger (nil: discard).
	Logger *slog.Logger
	// Acquire makes this broker the owner of coordinator id (the bundle of its assign
	// partition) or says why it cannot; nil: every coordinator is this broker's
	// (standalone).
	Acquire func(ctx context.Context, id uint64) error
	// Holds tells, without I/O, whether this broker still owns coordinator id (nil: always).
	Holds func(id uint64) bool
	// Sweep is how often coordinators are taken on (those nobody serves) and given up
	// (those whose ownership went); 0: 5 s.
	Sweep time.Duration
}

// Coordinators are the coordinators one broker serves: a coordinator is opened (its log
// fenced and replayed) on first use or by the sweep, and closed when the broker no longer
// owns it. Opening coordinators nobody serves in the background matters after a crash:
// their open transactions time out only where they are loaded.
type Coordinators struct {
	o     CoordinatorsOptions
	lg    *slog.Logger
	limit chan struct{}
	stop  context.CancelFunc
	done  chan struct{}

	mu      sync.Mutex
	closed  bool
	open    map[uint64]*Coordinator
	opening map[uint64]*opening
}

type opening struct {
	done chan struct{}
	c    *Coordinator
	err  error
}

// StartCoordinators starts serving coordinators; Close stops.
func StartCoordinators(o CoordinatorsOptions) (*Coordinators, error) {
	if o.Count <= 0 || o.Ledgers == nil || o.Participants == nil {
		return nil, fmt.Errorf("%w: coordinators need a count, managed ledgers and participants", ErrNotAllowed)
	}
	if o.Sweep <= 0 {
		o.Sweep = 5 * time.Second
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	cs := &Coordinators{
		o: o, lg: lg.With("component", "txn-coordinators"),
		limit: make(chan struct{}, max(o.Config.BufferClientMaxConcurrentRequests, 1)),
		open:  map[uint64]*Coordinator{}, opening: map[uint64]*opening{}, done: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	cs.stop = cancel
	go cs.sweep(ctx)
	return cs, nil
}

// Count is the number of coordinators.
func (cs *Coordinators) Count() int { return cs.o.Count }

// Get returns coordinator id, opening it here if this broker may serve it.
func (cs *Coordinators) Get(ctx context.Context, id uint64) (*Coordinator, error) {
	if id >= uint64(cs.o.Count) {
		return nil, fmt.Errorf("%w: coordinator %d does not exist (%d coordinators)", ErrCoordinatorNotFound, id, cs.o.Count)
	}
	cs.mu.Lock()
	if cs.closed {
		cs.mu.Unlock()
		return nil, fmt.Errorf("%w: the broker is closing", ErrCoordinatorNotFound)
	}
	if c := cs.open[id]; c != nil {
		if c.Err() == nil && cs.holds(id) {
			cs.mu.Unlock()
			return c, nil
		}
		delete(cs.open, id)
		go cs.closeOne(c)
	}
	op := cs.opening[id]
	if op == nil {
		op = &opening{done: make(chan struct{})}
		cs.opening[id] = op
		go cs.openOne(id, op)
	}
	cs.mu.Unlock()
	select {
	case <-op.done:
		return op.c, op.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: coordinator %d is loading: %w", ErrCoordinatorNotFound, id, ctx.Err())
	}
}

// Loaded returns coordinator id if it is open here (no I/O).
func (cs *Coordinators) Loaded(id uint64) (*Coordinator, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.open[id]
	return c, c != nil
}

// All lists the coordinators open here, by id.
func (cs *Coordinators) All() []*Coordinator {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]*Coordinator, 0, len(cs.open))
	for _, c := range cs.open {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *Coordinator) int { return int(a.id) - int(b.id) })
	return out
}

func (cs *Coordinators) holds(id uint64) bool { return cs.o.Holds == nil || cs.o.Holds(id) }

// openOne acquires and opens coordinator id (its own context: a client that gave up does
// not abort a recovery others will need).
func (cs *Coordinators) openOne(id uint64, op *opening) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var c *Coordinator
	err := func() error {
		if cs.o.Acquire != nil {
			if err := cs.o.Acquire(ctx, id); err != nil {
				return fmt.Errorf("%w: coordinator %d is not served here: %w", ErrCoordinatorNotFound, id, err)
			}
		}
		var err error
		c, err = OpenCoordinator(ctx, CoordinatorOptions{
			ID: id, Ledgers: cs.o.Ledgers, Participants: cs.o.Participants, Config: cs.o.Config,
			Logger: cs.o.Logger, Limit: cs.limit,
		})
		if err != nil {
			return fmt.Errorf("%w: opening coordinator %d: %w", ErrCoordinatorNotFound, id, err)
		}
		return nil
	}()
	cs.mu.Lock()
	delete(cs.opening, id)
	if err == nil && cs.closed {
		err = fmt.Errorf("%w: the broker is closing", ErrCoordinatorNotFound)
		go cs.closeOne(c)
		c = nil
	}
	if err == nil {
		cs.open[id] = c
		cs.lg.Info("transaction coordinator loaded", "coordinator", id)
	}
	op.c, op.err = c, err
	close(op.done)
	cs.mu.Unlock()
}

func (cs *Coordinators) closeOne(c *Coordinator) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil && !errors.Is(err, managedledger.ErrClosed) {
		cs.lg.Warn("closing a transaction coordinator failed", "coordinator", c.id, "err", err)
	}
}

// sweep gives up coordinators this broker lost and takes on those it may serve.
func (cs *Coordinators) sweep(ctx context.Context) {
	defer close(cs.done)
	t := time.NewTicker(cs.o.Sweep)
	defer t.Stop()
	for {
		cs.mu.Lock()
		var idle []uint64
		for id := range uint64(cs.o.Count) {
			c := cs.open[id]
			if c != nil && (c.Err() != nil || !cs.holds(id)) {
				delete(cs.open, id)
				go cs.closeOne(c)
				c = nil
			}
			if c == nil && cs.opening[id] == nil {
				idle = append(idle, id)
			}
		}
		cs.mu.Unlock()
		for _, id := range idle {
			gctx, cancel := context.WithTimeout(ctx, cs.o.Sweep)
			if _, err := cs.Get(gctx, id); err != nil {
				cs.lg.Debug("coordinator not taken on", "coordinator", id, "err", err)
			}
			cancel()
			if ctx.Err() != nil {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Close stops the sweep and closes every coordinator open here.
func (cs *Coordinators) Close(ctx context.Context) error {
	cs.mu.Lock()
	if cs.closed {
		cs.mu.Unlock()
		return nil
	}
	cs.closed = true
	cs.stop()
	open := cs.open
	cs.open = map[uint64]*Coordinator{}
	cs.mu.Unlock()
	<-cs.done
	var errs []error
	for _, c := range open {
		errs = append(errs, c.Close(ctx))
	}
	return errors.Join(errs...)
}
