package broker

import "sync"

// byteLimiter bounds bytes in flight (publish bytes read but not yet stored). acquire blocks
// while the limit is reached, which is how a producer is throttled: its connection's read
// loop stops reading, TCP pushes back, nothing is dropped. A single request larger than the
// limit is let through when nothing else is in flight, so it can never deadlock.
type byteLimiter struct {
	mu     sync.Mutex
	cond   *sync.Cond
	limit  int64
	used   int64
	closed bool
}

func newByteLimiter(limit int64) *byteLimiter {
	l := &byteLimiter{limit: limit}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// acquire waits until n bytes fit, or the limiter is closed (then it returns false).
func (l *byteLimiter) acquire(n int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.closed && l.used > 0 && l.used+n > l.limit {
		l.cond.Wait()
	}
	if l.closed {
		return false
	}
	l.used += n
	return true
}

func (l *byteLimiter) release(n int64) {
	l.mu.Lock()
	l.used -= n
	l.mu.Unlock()
	l.cond.Broadcast()
}

// close wakes every waiter; later acquires fail.
func (l *byteLimiter) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.cond.Broadcast()
}

func (l *byteLimiter) inUse() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.used
}
