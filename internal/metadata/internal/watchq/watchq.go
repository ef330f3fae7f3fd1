package watchq

import (
	"context"
	"sync"

	"github.com/magnetar-io/magnetar/internal/metadata"
)

// Queue buffers events for one watch. Create it with New.
type Queue struct {
	mu          sync.Mutex
	pending     []metadata.Event
	initialLeft int  // how many of pending are initial-state events (not counted against limit)
	limit       int  // most change events allowed to wait
	overflow    bool // limit exceeded: drop everything and close
	ended       bool // producer said no more events: drain, then close
	wake        chan struct{}
	out         chan metadata.Event
	done        chan struct{}
}

// New starts a queue that first delivers initial, then whatever Push adds, on the returned
// channel until ctx is done, the producer calls End and the queue drains, or more than limit
// change events wait unread. The channel is closed in each case.
func New(ctx context.Context, limit int, initial []metadata.Event) *Queue {
	if limit < 1 {
		limit = 1
	}
	q := &Queue{
		pending:     initial,
		initialLeft: len(initial),
		limit:       limit,
		wake:        make(chan struct{}, 1),
		out:         make(chan metadata.Event),
		done:        make(chan struct{}),
	}
	go q.run(ctx)
	return q
}

// C is the consumer's channel.
func (q *Queue) C() <-chan metadata.Event { return q.out }

// Done is closed once the output channel has been closed; producers use it to stop feeding
// and release their source.
func (q *Queue) Done() <-chan struct{} { return q.done }

// Push adds a change event. It never blocks. It reports false when the queue has ended
// (overflowed, cancelled or ended), so the producer can stop.
func (q *Queue) Push(ev metadata.Event) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.overflow || q.ended {
		return false
	}
	select {
	case <-q.done:
		return false
	default:
	}
	q.pending = append(q.pending, ev)
	if len(q.pending)-q.initialLeft > q.limit {
		q.overflow = true
		q.pending = nil
	}
	q.signal()
	return !q.overflow
}

// End says no more events will come; the queue delivers what it holds and closes the channel.
func (q *Queue) End() {
	q.mu.Lock()
	q.ended = true
	q.signal()
	q.mu.Unlock()
}

// Overflowed reports whether the queue was cut off because the consumer fell behind.
func (q *Queue) Overflowed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.overflow
}

func (q *Queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *Queue) run(ctx context.Context) {
	defer close(q.done)
	defer close(q.out)
	var head *metadata.Event
	for {
		q.mu.Lock()
		if q.overflow {
			q.mu.Unlock()
			return
		}
		if head == nil && len(q.pending) > 0 {
			ev := q.pending[0]
			q.pending[0] = metadata.Event{} // let the value be collected once delivered
			q.pending = q.pending[1:]
			if len(q.pending) == 0 {
				q.pending = nil // drop the backing array that grew behind a slow consumer
			}
			if q.initialLeft > 0 {
				q.initialLeft--
			}
			head = &ev
		}
		if head == nil && q.ended {
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		if head == nil {
			select {
			case <-q.wake:
			case <-ctx.Done():
				return
			}
			continue
		}
		select {
		case q.out <- *head:
			head = nil
		case <-q.wake: // re-check overflow while the consumer is not reading
		case <-ctx.Done():
			return
		}
	}
}
