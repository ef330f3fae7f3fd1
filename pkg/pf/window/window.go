// Package window groups a stream of events into count or time windows, tumbling or sliding,
// in processing time or in event time with watermarks (Pulsar's windowConfig semantics). It
// is pure logic: no clock, no goroutines. The Go SDK and the worker's WASM runtime drive it.
//
// # Model
//
// Events are "released" into the window buffer in time order. In processing time an event is
// released as it arrives (its time is the arrival time) and time advances with the caller's
// clock (Tick). In event time an event waits in a pending buffer until the watermark, the
// highest event time seen minus MaxLag, passes it; Tick emits the watermark (every
// watermarkEmitIntervalMs, which the caller paces). An event before the current watermark is
// late: it is not windowed and Add reports it, so the caller can route it to the late-data
// topic.
//
// A trigger fires every SlideCount released events (count slide) or at every multiple of
// SlideDuration (time slide; in event time the boundaries are aligned on the epoch). A
// window ending at t holds the last LengthCount released events before t (count length) or
// the events with time in [t-LengthDuration, t) (time length); a count trigger's window ends
// just after the event that completed it. An event-time event before the watermark is late. Empty windows are not
// emitted. After a trigger, events that no later window can contain are returned as Expired,
// which is when the caller may acknowledge them.
package window

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Config is a window definition. Exactly one of LengthCount and LengthDuration is set; at
// most one of SlideCount and SlideDuration (neither: tumbling, the slide equals the length).
type Config struct {
	LengthCount    int
	LengthDuration time.Duration
	SlideCount     int
	SlideDuration  time.Duration
	// EventTime windows by the events' own timestamps with watermarks; otherwise by arrival.
	EventTime bool
	// MaxLag is how far behind the newest event time the watermark trails (event time).
	MaxLag time.Duration
	// MaxEvents bounds the events held (windowed plus pending); 0 means 1,000,000.
	MaxEvents int
}

// ErrFull is returned by Add when MaxEvents events are held already.
var ErrFull = errors.New("window: too many events held (MaxEvents)")

// Validate checks the definition; errors name the windowConfig field.
func (c *Config) Validate() error {
	switch {
	case c.LengthCount < 0 || c.LengthDuration < 0 || c.SlideCount < 0 || c.SlideDuration < 0 || c.MaxLag < 0:
		return errors.New("window: windowConfig: lengths, intervals and maxLagMs must not be negative")
	case (c.LengthCount > 0) == (c.LengthDuration > 0):
		return errors.New("window: windowConfig: exactly one of windowLengthCount and windowLengthDurationMs must be set")
	case c.SlideCount > 0 && c.SlideDuration > 0:
		return errors.New("window: windowConfig: at most one of slidingIntervalCount and slidingIntervalDurationMs may be set")
	case c.LengthCount > 0 && c.SlideCount > c.LengthCount:
		return fmt.Errorf("window: windowConfig.slidingIntervalCount %d exceeds windowLengthCount %d", c.SlideCount, c.LengthCount)
	case c.LengthDuration > 0 && c.SlideDuration > c.LengthDuration:
		return fmt.Errorf("window: windowConfig.slidingIntervalDurationMs %v exceeds windowLengthDurationMs %v", c.SlideDuration, c.LengthDuration)
	}
	return nil
}

// Event is one element with its time (event time, or arrival in processing time).
type Event[T any] struct {
	Value T
	Time  time.Time
}

// Window is one firing: its events in time order, its end (the trigger time) and the events
// that left the buffer with it.
type Window[T any] struct {
	Start, End time.Time
	Events     []Event[T]
	// Expired events are in no later window; acknowledge them once this window is handled.
	Expired []Event[T]
}

// Manager holds the buffer of one windowed instance. It is not safe for concurrent use.
type Manager[T any] struct {
	cfg       Config
	buf       []Event[T] // released, time order
	pending   []Event[T] // event time only: not yet under the watermark, unsorted
	count     int        // released since the last count trigger
	nextEnd   time.Time  // next time trigger (zero: not started)
	watermark time.Time
	maxSeen   time.Time
}

// New returns a manager for cfg.
func New[T any](cfg Config) (*Manager[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.SlideCount == 0 && cfg.SlideDuration == 0 {
		cfg.SlideCount, cfg.SlideDuration = cfg.LengthCount, cfg.LengthDuration
	}
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = 1_000_000
	}
	return &Manager[T]{cfg: cfg}, nil
}

// Held is how many events the manager holds.
func (m *Manager[T]) Held() int { return len(m.buf) + len(m.pending) }

// Watermark is the current watermark (event time; zero before the first).
func (m *Manager[T]) Watermark() time.Time { return m.watermark }

// Add takes one event. In processing time, time is first advanced to e.Time. late reports
// an event-time event before the watermark, which is not kept.
func (m *Manager[T]) Add(e Event[T]) (fired []Window[T], late bool, err error) {
	if m.cfg.EventTime {
		if !m.watermark.IsZero() && e.Time.Before(m.watermark) {
			return nil, true, nil
		}
		if m.Held() >= m.cfg.MaxEvents {
			return nil, false, ErrFull
		}
		m.pending = append(m.pending, e)
		if e.Time.After(m.maxSeen) {
			m.maxSeen = e.Time
		}
		return nil, false, nil
	}
	if m.Held() >= m.cfg.MaxEvents {
		return nil, false, ErrFull
	}
	fired = m.advance(e.Time, nil)
	return m.release(e, fired), false, nil
}

// Tick advances time: in processing time to now; in event time it emits the watermark
// (newest event time minus MaxLag) and releases what it passed.
func (m *Manager[T]) Tick(now time.Time) []Window[T] {
	if !m.cfg.EventTime {
		return m.advance(now, nil)
	}
	if m.maxSeen.IsZero() {
		return nil
	}
	w := m.maxSeen.Add(-m.cfg.MaxLag)
	if !w.After(m.watermark) {
		return nil
	}
	m.watermark = w
	sort.SliceStable(m.pending, func(i, j int) bool { return m.pending[i].Time.Before(m.pending[j].Time) })
	var fired []Window[T]
	n := 0
	for _, e := range m.pending {
		if e.Time.After(w) {
			break
		}
		// Time windows ending at or before this event fire first: it is not in them.
		fired = m.advance(e.Time, fired)
		fired = m.release(e, fired)
		n++
	}
	m.pending = append(m.pending[:0], m.pending[n:]...)
	return m.advance(w, fired)
}

// release appends e to the buffer and fires a count trigger when one is due.
func (m *Manager[T]) release(e Event[T], fired []Window[T]) []Window[T] {
	m.buf = append(m.buf, e)
	if m.cfg.SlideDuration > 0 && m.nextEnd.IsZero() {
		m.nextEnd = m.firstEnd(e.Time)
	}
	if m.cfg.SlideCount > 0 {
		m.count++
		if m.count >= m.cfg.SlideCount {
			m.count = 0
			// The window ends just after the event that completes it, so it holds it.
			fired = m.trigger(e.Time.Add(1), fired)
		}
	}
	if m.cfg.LengthCount > 0 && len(m.buf) > m.cfg.LengthCount {
		// A count window never reaches back further than LengthCount events; without a count
		// slide nothing else would ever evict them.
		drop := len(m.buf) - m.cfg.LengthCount
		if len(fired) > 0 {
			fired[len(fired)-1].Expired = append(fired[len(fired)-1].Expired, m.buf[:drop]...)
		}
		m.buf = append(m.buf[:0:0], m.buf[drop:]...)
	}
	return fired
}

// firstEnd is the end of the first time window after t: aligned on the epoch in event time,
// one slide after the first event in processing time.
func (m *Manager[T]) firstEnd(t time.Time) time.Time {
	s := m.cfg.SlideDuration
	if m.cfg.EventTime {
		return t.Truncate(s).Add(s)
	}
	return t.Add(s)
}

// advance fires every time trigger due at or before t.
func (m *Manager[T]) advance(t time.Time, fired []Window[T]) []Window[T] {
	if m.cfg.SlideDuration <= 0 || m.nextEnd.IsZero() {
		return fired
	}
	for !m.nextEnd.After(t) {
		end := m.nextEnd
		m.nextEnd = end.Add(m.cfg.SlideDuration)
		fired = m.trigger(end, fired)
		if len(m.buf) == 0 && m.nextEnd.Before(t) {
			// Nothing buffered: skip the empty windows in between at once.
			m.nextEnd = m.firstEnd(t)
			if !m.cfg.EventTime {
				m.nextEnd = t.Add(m.cfg.SlideDuration)
			}
		}
	}
	return fired
}

// trigger emits the window ending at end and expires what no later window can hold.
func (m *Manager[T]) trigger(end time.Time, fired []Window[T]) []Window[T] {
	var w Window[T]
	w.End = end
	hi := sort.Search(len(m.buf), func(i int) bool { return !m.buf[i].Time.Before(end) })
	if m.cfg.LengthCount > 0 {
		lo := max(0, hi-m.cfg.LengthCount)
		w.Events = append([]Event[T](nil), m.buf[lo:hi]...)
	} else {
		start := end.Add(-m.cfg.LengthDuration)
		w.Start = start
		lo := sort.Search(hi, func(i int) bool { return !m.buf[i].Time.Before(start) })
		w.Events = append([]Event[T](nil), m.buf[lo:hi]...)
	}
	if len(w.Events) > 0 && w.Start.IsZero() {
		w.Start = w.Events[0].Time
	}
	// What the next window cannot contain.
	var keepFrom int
	switch {
	case m.cfg.LengthCount > 0 && m.cfg.SlideCount > 0:
		keepFrom = max(0, hi-(m.cfg.LengthCount-m.cfg.SlideCount))
	case m.cfg.LengthCount > 0:
		keepFrom = max(0, hi-m.cfg.LengthCount) // time slide: evicted by count on release
	case m.cfg.SlideDuration > 0:
		cut := end.Add(m.cfg.SlideDuration - m.cfg.LengthDuration)
		keepFrom = sort.Search(len(m.buf), func(i int) bool { return !m.buf[i].Time.Before(cut) })
	default:
		cut := end.Add(-m.cfg.LengthDuration)
		keepFrom = sort.Search(len(m.buf), func(i int) bool { return !m.buf[i].Time.Before(cut) })
	}
	w.Expired = append([]Event[T](nil), m.buf[:keepFrom]...)
	m.buf = append(m.buf[:0:0], m.buf[keepFrom:]...)
	if len(w.Events) == 0 && len(w.Expired) == 0 {
		return fired
	}
	return append(fired, w)
}
