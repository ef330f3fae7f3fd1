package clock

import (
	"sync"
	"time"
)

// Clock tells the time and runs functions after a duration of that time.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed on this clock.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc, as *time.Timer.
type Timer interface {
	// Stop prevents the call if it has not run yet; it reports whether it did so.
	Stop() bool
	// Reset makes the call happen d from now (again, if it already ran); it reports
	// whether the timer was pending.
	Reset(d time.Duration) bool
}

// Real is the system clock.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Or returns c, or Real when c is nil: what an Options field "nil: the system clock" means.
func Or(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}

// Offset returns a clock that reads base shifted by d (a clock fault: this process thinks
// it is d later, or earlier for a negative d). Timers still wait real durations: a skewed
// clock runs at the same rate, only its reading is off.
func Offset(base Clock, d time.Duration) Clock {
	if d == 0 {
		return base
	}
	return offsetClock{base: base, d: d}
}

type offsetClock struct {
	base Clock
	d    time.Duration
}

func (c offsetClock) Now() time.Time                            { return c.base.Now().Add(c.d) }
func (c offsetClock) AfterFunc(d time.Duration, f func()) Timer { return c.base.AfterFunc(d, f) }

// Fake is a clock that moves only when told (tests). Its timers run when Advance or Set
// moves the time to or past their due time, each in its own goroutine, in due order.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*fakeTimer]struct{}
}

// NewFake returns a Fake reading start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, timers: map[*fakeTimer]struct{}{}}
}

// Now is the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the time forward by d and starts the timers that came due.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.fireLocked()
	c.mu.Unlock()
}

// Set moves the time to t (backwards too: a clock step) and starts the timers that are due.
func (c *Fake) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.fireLocked()
	c.mu.Unlock()
}

// Pending is how many timers wait (tests wait for a component to have armed its timer
// before they advance past it).
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// AfterFunc calls f once the fake time reached Now()+d; d <= 0 calls it right away.
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	t := &fakeTimer{c: c, f: f}
	c.mu.Lock()
	t.armLocked(d)
	c.fireLocked()
	c.mu.Unlock()
	return t
}

// fireLocked starts every due timer, earliest first.
func (c *Fake) fireLocked() {
	for {
		var next *fakeTimer
		for t := range c.timers {
			if !t.due.After(c.now) && (next == nil || t.due.Before(next.due)) {
				next = t
			}
		}
		if next == nil {
			return
		}
		delete(c.timers, next)
		go next.f()
	}
}

type fakeTimer struct {
	c   *Fake
	f   func()
	due time.Time
}

func (t *fakeTimer) armLocked(d time.Duration) {
	t.due = t.c.now.Add(d)
	t.c.timers[t] = struct{}{}
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, pending := t.c.timers[t]
	delete(t.c.timers, t)
	return pending
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, pending := t.c.timers[t]
	t.armLocked(d)
	t.c.fireLocked()
	return pending
}
