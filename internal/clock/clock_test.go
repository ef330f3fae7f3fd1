package clock

import (
	"testing"
	"time"
)

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestFakeRunsTimersAsTimeAdvances(t *testing.T) {
	c := NewFake(start)
	fired := make(chan string, 4)
	c.AfterFunc(time.Hour, func() { fired <- "hour" })
	c.AfterFunc(time.Minute, func() { fired <- "minute" })
	stopped := c.AfterFunc(30*time.Second, func() { fired <- "stopped" })
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop must report a pending timer once")
	}
	c.Advance(59 * time.Second)
	if c.Pending() != 2 {
		t.Fatalf("%d pending after 59 s, want 2", c.Pending())
	}
	c.Advance(time.Second)
	if got := <-fired; got != "minute" {
		t.Fatalf("fired %q at one minute", got)
	}
	if c.Pending() != 1 {
		t.Fatalf("%d pending after a minute, want 1", c.Pending())
	}
	c.Advance(2 * time.Hour)
	if got := <-fired; got != "hour" {
		t.Fatalf("fired %q after two hours", got)
	}
	if !c.Now().Equal(start.Add(2*time.Hour + time.Minute)) {
		t.Fatalf("now %v", c.Now())
	}
	select {
	case got := <-fired:
		t.Fatalf("a stopped timer fired: %q", got)
	default:
	}
}

func TestFakeResetRearms(t *testing.T) {
	c := NewFake(start)
	fired := make(chan struct{}, 2)
	tm := c.AfterFunc(time.Minute, func() { fired <- struct{}{} })
	if !tm.Reset(time.Hour) {
		t.Fatal("Reset of a pending timer must report it pending")
	}
	c.Advance(time.Minute)
	if c.Pending() != 1 {
		t.Fatal("the reset timer fired at its old due time")
	}
	c.Advance(time.Hour)
	<-fired
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a timer that ran must report it not pending")
	}
	c.Advance(time.Second)
	<-fired
}

func TestOffsetShiftsTheReading(t *testing.T) {
	base := NewFake(start)
	skewed := Offset(base, -5*time.Minute)
	if got := skewed.Now(); !got.Equal(start.Add(-5 * time.Minute)) {
		t.Fatalf("skewed reads %v", got)
	}
	fired := make(chan struct{})
	skewed.AfterFunc(time.Second, func() { close(fired) })
	base.Advance(time.Second)
	<-fired // timers wait real (base) durations
	if Offset(base, 0) != Clock(base) {
		t.Fatal("a zero offset must be the base clock itself")
	}
	if Or(nil) != Real || Or(base) != Clock(base) {
		t.Fatal("Or")
	}
}
