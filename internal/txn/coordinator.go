package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/clock"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/managedledger"
)

// Participants end a transaction on the topics it published to and the subscriptions it
// acknowledged on (END_TXN_ON_PARTITION and END_TXN_ON_SUBSCRIPTION in Pulsar). The
// coordinator calls them only once its decision is durable, and again after a crash or an
// error, so every call must be idempotent. lowWaterMark is the coordinator's low water
// mark: every transaction of this coordinator with a sequence number at or below it has
// ended, so a participant may refuse late work for one of them.
type Participants interface {
	EndPartition(ctx context.Context, topic string, id ID, action Action, lowWaterMark uint64) error
	EndSubscription(ctx context.Context, sub Subscription, id ID, action Action, lowWaterMark uint64) error
}

// CoordinatorOptions are a coordinator's collaborators.
type CoordinatorOptions struct {
	// ID is the coordinator id: the partition of the assign topic it serves, the Most of
	// every transaction id it hands out.
	ID uint64
	// Ledgers opens the coordinator log.
	Ledgers *managedledger.Factory
	// Participants end transactions on topics and subscriptions.
	Participants Participants
	// Config bounds and timeouts (maxActiveTransactionsPerCoordinator, ...).
	Config config.TransactionConfig
	// Logger is the parent logger (nil: discard).
	Logger *slog.Logger
	// Clock is the clock of open times and timeouts, and runs the timeout timer (nil: the
	// Ledgers factory's clock, which the broker shares with retention and TTL). Tests jump
	// past a timeout with a clock.Fake instead of sleeping through it.
	Clock clock.Clock
	// Limit, when not nil, bounds participant calls in flight (shared by the coordinators of
	// a broker: transactionBufferClientMaxConcurrentRequests).
	Limit chan struct{}
}

// LogName is the managed ledger holding coordinator id's log. Its domain segment is not
// "persistent", so no topic name maps to it.
func LogName(id uint64) string {
	return fmt.Sprintf("pulsar/system/transaction-log/__transaction_log_%d", id)
}

// Coordinator is one transaction coordinator: it opens transactions, records the
// partitions and subscriptions each one touches, ends them (commit or abort, on request or
// at their timeout) by telling every participant, and keeps all of it in its own log (a
// managed ledger), so that whoever opens the log next (after a crash, on another broker)
// carries on: open transactions stay open, ending ones are ended again.
//
// Order of a request: validate under mu; append the record (appendMu keeps log order the
// order of decisions); apply it to memory when it is durable; answer. End is the one
// request that changes memory first (the status, so that no later request adds to an
// ending transaction) and undoes it if the append is refused.
type Coordinator struct {
	id    uint64
	o     CoordinatorOptions
	log   *recordLog
	lg    *slog.Logger
	clock clock.Clock
	now   func() time.Time // clock.Now
	maxTO time.Duration

	ctx    context.Context // canceled by Close: ends drives and waits
	cancel context.CancelFunc
	wg     sync.WaitGroup

	appendMu sync.Mutex

	mu       sync.Mutex
	failed   error // the log failed: the coordinator serves nothing more
	closed   bool
	seq      uint64 // highest sequence handed out
	durSeq   uint64 // highest sequence whose first record is durable
	propSeq  uint64 // sequence recorded in the log cursor's properties
	txns     map[uint64]*txnMeta
	deadline deadlines
	timer    clock.Timer
	stats    coordStats
}

// txnMeta is one open or ending transaction.
type txnMeta struct {
	least     uint64
	status    Status
	opened    time.Time
	timeoutAt time.Time
	owner     string
	parts     []string
	subs      []Subscription
	records   []recPos // its log records, dropped together once it ended
	timedOut  bool
	heapIdx   int           // in deadline, -1 when not there
	done      chan struct{} // closed when the ending finished (or the coordinator stopped)
	endErr    error
}

// Metadata is what the admin API shows of a transaction.
type Metadata struct {
	ID            ID
	Status        Status
	Opened        time.Time
	TimeoutAt     time.Time
	Owner         string
	Partitions    []string
	Subscriptions []Subscription
}

const seqProp = "sequenceId"

// OpenCoordinator opens coordinator o.ID: it opens its log (fencing a previous owner) and
// replays it. Transactions found ending are ended again; open ones whose timeout passed are
// aborted.
func OpenCoordinator(ctx context.Context, o CoordinatorOptions) (*Coordinator, error) {
	if o.Ledgers == nil || o.Participants == nil {
		return nil, fmt.Errorf("%w: a coordinator needs managed ledgers and participants", ErrNotAllowed)
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	clk := o.Clock
	if clk == nil {
		clk = o.Ledgers.Clock()
	}
	now := clk.Now
	c := &Coordinator{
		id: o.ID, o: o, clock: clk, now: now,
		lg:    lg.With("component", "txn-coordinator", "coordinator", o.ID),
		maxTO: time.Duration(o.Config.MaxTimeoutMillis) * time.Millisecond,
		txns:  map[uint64]*txnMeta{},
	}
	c.stats.recoverStart = now()
	c.ctx, c.cancel = context.WithCancel(context.Background())
	// A log created now has had no owner who could have answered a New (newAhead).
	existed, err := o.Ledgers.Exists(ctx, LogName(o.ID))
	if err != nil {
		existed = true
	}
	l, err := openRecordLog(ctx, o.Ledgers, LogName(o.ID), coordinatorBatch(o.Config))
	if err != nil {
		return nil, fmt.Errorf("%w: coordinator %d: %w", ErrCoordinatorNotFound, o.ID, err)
	}
	c.log = l
	if err := c.recover(ctx, existed); err != nil {
		_ = l.close(ctx)
		return nil, fmt.Errorf("%w: coordinator %d: %w", ErrCoordinatorNotFound, o.ID, err)
	}
	c.stats.recoverEnd = now()
	return c, nil
}

// ID is the coordinator id.
func (c *Coordinator) ID() uint64 { return c.id }

// MaxTimeout is the largest timeout New accepts (maxTransactionTimeoutMillis).
func (c *Coordinator) MaxTimeout() time.Duration { return c.maxTO }

// Err is why the coordinator stopped serving (nil while it serves): its log failed (a
// newer owner fenced it, storage failed) or it was closed.
func (c *Coordinator) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.usableLocked()
}

func (c *Coordinator) usableLocked() error {
	switch {
	case c.failed != nil:
		return fmt.Errorf("%w: coordinator %d stopped: %w", ErrCoordinatorNotFound, c.id, c.failed)
	case c.closed:
		return fmt.Errorf("%w: coordinator %d is closed", ErrCoordinatorNotFound, c.id)
	}
	return nil
}

// failLocked stops the coordinator after a log failure: a newer owner (or nobody, until
// the next load) carries on from the log.
func (c *Coordinator) failLocked(err error) {
	if c.failed != nil {
		return
	}
	c.failed = err
	c.lg.Warn("coordinator log failed; the coordinator stops", "err", err)
	c.cancel()
	if c.timer != nil {
		c.timer.Stop()
	}
}

func (c *Coordinator) lookupLocked(id ID) (*txnMeta, error) {
	if err := c.usableLocked(); err != nil {
		return nil, err
	}
	if id.Most != c.id {
		return nil, fmt.Errorf("%w: %s belongs to coordinator %d, not %d", ErrNotFound, id, id.Most, c.id)
	}
	m := c.txns[id.Least]
	if m == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return m, nil
}

// waitDurable waits for an append's callback result, or ctx.
func waitDurable(ctx context.Context, ch <-chan error) error {
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// New opens a transaction that aborts by itself after timeout unless ended before. owner
// is the principal that opened it ("" without authentication).
func (c *Coordinator) New(ctx context.Context, timeout time.Duration, owner string) (ID, error) {
	if timeout <= 0 || timeout > c.maxTO {
		return ID{}, fmt.Errorf("%w: transaction timeout %v is not in (0, %v] (maxTransactionTimeoutMillis)", ErrNotAllowed, timeout, c.maxTO)
	}
	c.appendMu.Lock()
	c.mu.Lock()
	if err := c.usableLocked(); err != nil {
		c.mu.Unlock()
		c.appendMu.Unlock()
		return ID{}, err
	}
	if max := c.o.Config.MaxActivePerCoordinator; max > 0 && int64(len(c.txns)) >= max {
		c.mu.Unlock()
		c.appendMu.Unlock()
		return ID{}, fmt.Errorf("%w: coordinator %d has %d open transactions (maxActiveTransactionsPerCoordinator)", ErrNotAllowed, c.id, len(c.txns))
	}
	c.seq++
	least := c.seq
	opened := c.now().Truncate(time.Millisecond)
	// The answer need not wait for the record (newAhead): every later record of the
	// transaction follows it in the log, so none is durable before it.
	wait := c.seq-c.durSeq > newAhead
	m := &txnMeta{least: least, status: Open, opened: opened, timeoutAt: opened.Add(timeout), owner: owner, heapIdx: -1}
	c.txns[least] = m
	c.scheduleLocked(m)
	c.mu.Unlock()
	res := make(chan error, 1)
	err := c.log.append(encodeRecord(&record{kind: recNew, least: least, timeout: timeout, opened: opened, owner: owner}), func(p recPos, err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.stats.appends++
		if err != nil {
			c.failLocked(err)
			res <- fmt.Errorf("%w: coordinator %d: %w", ErrCoordinatorNotFound, c.id, err)
			return
		}
		m.records = append(m.records, p)
		c.durSeq = max(c.durSeq, least)
		c.stats.created++
		res <- c.usableLocked()
	})
	c.appendMu.Unlock()
	if err != nil {
		c.mu.Lock()
		if c.txns[least] == m {
			delete(c.txns, least)
			c.unscheduleLocked(m)
		}
		c.mu.Unlock()
		return ID{}, fmt.Errorf("%w: coordinator %d: %w", ErrCoordinatorNotFound, c.id, err)
	}
	if wait {
		if err := waitDurable(ctx, res); err != nil {
			return ID{}, err
		}
	}
	return ID{c.id, least}, nil
}

// newAhead bounds the transactions New answered before their first record was durable. A
// crash may lose them (their clients then hear TransactionNotFound: nothing was recorded
// under them, so nothing is lost), and a recovery starts that many sequences past the
// highest one it finds, so that a lost id is never handed out again.
const newAhead = 1024

// AddPartitions records that transaction id publishes to topics (partitions of partitioned
// topics are topics of their own); they take part in its end.
func (c *Coordinator) AddPartitions(ctx context.Context, id ID, topics []string) error {
	return c.add(ctx, id, topics, nil)
}

// AddSubscriptions records that transaction id acknowledges on subs.
func (c *Coordinator) AddSubscriptions(ctx context.Context, id ID, subs []Subscription) error {
	return c.add(ctx, id, nil, subs)
}

func (c *Coordinator) add(ctx context.Context, id ID, topics []string, subs []Subscription) error {
	for _, t := range topics {
		if t == "" || len(t) > maxNameLen {
			return fmt.Errorf("%w: bad partition name %q", ErrNotAllowed, t)
		}
	}
	for _, s := range subs {
		if s.Topic == "" || s.Name == "" || len(s.Topic) > maxNameLen || len(s.Name) > maxNameLen {
			return fmt.Errorf("%w: bad subscription %q on %q", ErrNotAllowed, s.Name, s.Topic)
		}
	}
	c.appendMu.Lock()
	c.mu.Lock()
	m, err := c.lookupLocked(id)
	if err == nil && m.status != Open {
		err = fmt.Errorf("%w: %s is %s", ErrInvalidStatus, id, m.status)
	}
	if err != nil {
		c.mu.Unlock()
		c.appendMu.Unlock()
		return err
	}
	// Only what is new is logged (clients register each partition once, but may retry).
	var newTopics []string
	for _, t := range topics {
		if !slices.Contains(m.parts, t) && !slices.Contains(newTopics, t) {
			newTopics = append(newTopics, t)
		}
	}
	var newSubs []Subscription
	for _, s := range subs {
		if !slices.Contains(m.subs, s) && !slices.Contains(newSubs, s) {
			newSubs = append(newSubs, s)
		}
	}
	if len(newTopics)+len(newSubs) == 0 {
		c.mu.Unlock()
		c.appendMu.Unlock()
		return nil
	}
	if len(m.parts)+len(m.subs)+len(newTopics)+len(newSubs) > MaxParticipants {
		c.mu.Unlock()
		c.appendMu.Unlock()
		return fmt.Errorf("%w: %s would have more than %d partitions and subscriptions", ErrNotAllowed, id, MaxParticipants)
	}
	c.mu.Unlock()
	rec := &record{kind: recPartitions, least: id.Least, partitions: newTopics}
	if newSubs != nil {
		rec = &record{kind: recSubscriptions, least: id.Least, subs: newSubs}
	}
	res := make(chan error, 1)
	err = c.log.append(encodeRecord(rec), func(p recPos, err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.stats.appends++
		if err != nil {
			c.failLocked(err)
			res <- fmt.Errorf("%w: coordinator %d: %w", ErrCoordinatorNotFound, c.id, err)
			return
		}
		m.records = append(m.records, p)
		for _, t := range newTopics {
			if !slices.Contains(m.parts, t) {
				m.parts = append(m.parts, t)
			}
		}
		for _, s := range newSubs {
			if !slices.Contains(m.subs, s) {
				m.subs = append(m.subs, s)
			}
		}
		res <- c.usableLocked()
	})
	c.appendMu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: coordinator %d: %w", ErrCoordinatorNotFound, c.id, err)
	}
	if newTopics != nil && newSubs != nil {
		// Both kinds in one call (a non-Pulsar front end): the subscriptions went first.
		return errors.Join(waitDurable(ctx, res), c.add(ctx, id, newTopics, nil))
	}
	return waitDurable(ctx, res)
}

// End commits or aborts transaction id and returns once every participant has ended it.
// Once it has, the transaction is forgotten: ending it again is ErrNotFound (what the
// Pulsar clients expect). An End of a transaction already ending the same way waits for
// that; the other way is ErrInvalidStatus. If ctx ends first, the ending goes on.
func (c *Coordinator) End(ctx context.Context, id ID, action Action) error {
	if action != Commit && action != Abort {
		return fmt.Errorf("%w: transaction action %v", ErrNotAllowed, action)
	}
	m, err := c.startEnd(id, action, false)
	if err != nil {
		return err
	}
	select {
	case <-m.done:
		return m.endErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startEnd moves m to its ending status and logs it; once that is durable, drive ends it
// on every participant.
func (c *Coordinator) startEnd(id ID, action Action, timedOut bool) (*txnMeta, error) {
	c.appendMu.Lock()
	defer c.appendMu.Unlock()
	c.mu.Lock()
	m, err := c.lookupLocked(id)
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	switch m.status {
	case action.ending():
		c.mu.Unlock()
		return m, nil
	case Open:
	default:
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: cannot %s %s: it is %s", ErrInvalidStatus, action, id, m.status)
	}
	m.status = action.ending()
	m.timedOut = timedOut
	m.done = make(chan struct{})
	c.unscheduleLocked(m)
	c.mu.Unlock()
	err = c.log.append(encodeRecord(&record{kind: recStatus, least: id.Least, status: action.ending(), timedOut: timedOut}), func(p recPos, err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.stats.appends++
		if err != nil {
			c.failLocked(err)
			return
		}
		m.records = append(m.records, p)
		if c.usableLocked() == nil {
			c.startDriveLocked(m, action)
		}
	})
	if err != nil {
		// Refused before anything was written: the transaction is open as before.
		c.mu.Lock()
		m.status, m.timedOut, m.done = Open, false, nil
		c.scheduleLocked(m)
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: coordinator %d: %w", ErrCoordinatorNotFound, c.id, err)
	}
	return m, nil
}

// lowWaterMarkLocked is the highest sequence at or below which every transaction ended.
func (c *Coordinator) lowWaterMarkLocked() uint64 {
	low := c.seq
	for l := range c.txns {
		if l-1 < low {
			low = l - 1
		}
	}
	return low
}

// Get returns transaction id's metadata if it is open or ending here.
func (c *Coordinator) Get(id ID) (Metadata, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := c.lookupLocked(id)
	if err != nil {
		return Metadata{}, false
	}
	return c.metadataLocked(m), true
}

// List returns every transaction open or ending here, oldest first.
func (c *Coordinator) List() []Metadata {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Metadata, 0, len(c.txns))
	for _, m := range c.txns {
		out = append(out, c.metadataLocked(m))
	}
	slices.SortFunc(out, func(a, b Metadata) int {
		switch {
		case a.ID.Least < b.ID.Least:
			return -1
		case a.ID.Least > b.ID.Least:
			return 1
		}
		return 0
	})
	return out
}

func (c *Coordinator) metadataLocked(m *txnMeta) Metadata {
	return Metadata{
		ID: ID{c.id, m.least}, Status: m.status, Opened: m.opened, TimeoutAt: m.timeoutAt, Owner: m.owner,
		Partitions: slices.Clone(m.parts), Subscriptions: slices.Clone(m.subs),
	}
}

// Close stops the coordinator: timers and drives stop, waiting requests get
// ErrCoordinatorNotFound, the log closes. Whoever opens the coordinator next carries on.
func (c *Coordinator) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.cancel()
	c.mu.Unlock()
	c.wg.Wait()
	c.mu.Lock()
	for _, m := range c.txns {
		if m.done != nil {
			select {
			case <-m.done:
			default:
				m.endErr = c.usableLocked()
				close(m.done)
			}
		}
	}
	c.mu.Unlock()
	return c.log.close(ctx)
}
