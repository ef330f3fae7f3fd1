package window

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Unix(1_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func values(evs []Event[int]) []int {
	var out []int
	for _, e := range evs {
		out = append(out, e.Value)
	}
	return out
}

func TestCountTumbling(t *testing.T) {
	m, err := New[int](Config{LengthCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := 1; i <= 7; i++ {
		ws, _, _ := m.Add(Event[int]{Value: i, Time: at(i)})
		for _, w := range ws {
			got = append(got, fmt.Sprint(values(w.Events), values(w.Expired)))
		}
	}
	if fmt.Sprint(got) != "[[1 2 3] [1 2 3] [4 5 6] [4 5 6]]" {
		t.Fatalf("windows %v", got)
	}
	if m.Held() != 1 {
		t.Fatalf("held %d", m.Held())
	}
}

func TestCountSliding(t *testing.T) {
	m, _ := New[int](Config{LengthCount: 4, SlideCount: 2})
	var got []string
	for i := 1; i <= 8; i++ {
		ws, _, _ := m.Add(Event[int]{Value: i, Time: at(i)})
		for _, w := range ws {
			got = append(got, fmt.Sprint(values(w.Events), values(w.Expired)))
		}
	}
	want := "[[1 2] [] [1 2 3 4] [1 2] [3 4 5 6] [3 4] [5 6 7 8] [5 6]]"
	if fmt.Sprint(got) != want {
		t.Fatalf("windows %v, want %v", got, want)
	}
}

func TestProcessingTimeTumbling(t *testing.T) {
	m, _ := New[int](Config{LengthDuration: 100 * time.Millisecond})
	m.Add(Event[int]{Value: 1, Time: at(0)})
	m.Add(Event[int]{Value: 2, Time: at(50)})
	ws := m.Tick(at(100))
	if len(ws) != 1 || fmt.Sprint(values(ws[0].Events)) != "[1 2]" || fmt.Sprint(values(ws[0].Expired)) != "[1 2]" {
		t.Fatalf("first window %+v", ws)
	}
	m.Add(Event[int]{Value: 3, Time: at(120)})
	if ws := m.Tick(at(199)); len(ws) != 0 {
		t.Fatalf("fired early: %+v", ws)
	}
	ws = m.Tick(at(200))
	if len(ws) != 1 || fmt.Sprint(values(ws[0].Events)) != "[3]" {
		t.Fatalf("second window %+v", ws)
	}
}

func TestEventTimeWatermarkAndLate(t *testing.T) {
	m, _ := New[int](Config{LengthDuration: time.Second, EventTime: true, MaxLag: 500 * time.Millisecond})
	// Out of order within the lag: still windowed in event-time order.
	for _, e := range []Event[int]{{1, at(100)}, {3, at(900)}, {2, at(400)}} {
		if _, late, _ := m.Add(e); late {
			t.Fatalf("%v late", e)
		}
	}
	if ws := m.Tick(at(0)); len(ws) != 0 {
		t.Fatalf("fired before the watermark passed a window end: %+v", ws)
	}
	m.Add(Event[int]{Value: 4, Time: at(1600)}) // watermark will be 1100
	ws := m.Tick(at(0))
	if len(ws) != 1 || fmt.Sprint(values(ws[0].Events)) != "[1 2 3]" || !ws[0].End.Equal(at(0).Truncate(time.Second).Add(time.Second)) {
		t.Fatalf("window %+v", ws)
	}
	if _, late, _ := m.Add(Event[int]{Value: 5, Time: at(1000)}); !late {
		t.Fatal("an event behind the watermark was not late")
	}
	if _, late, _ := m.Add(Event[int]{Value: 6, Time: at(1700)}); late {
		t.Fatal("an event ahead of the watermark was late")
	}
}

func TestBoundsAndValidation(t *testing.T) {
	for _, c := range []Config{{}, {LengthCount: 2, LengthDuration: time.Second}, {LengthCount: 2, SlideCount: 3},
		{LengthDuration: time.Second, SlideDuration: 2 * time.Second}, {LengthCount: 1, SlideCount: 1, SlideDuration: 1}} {
		if _, err := New[int](c); err == nil {
			t.Fatalf("%+v accepted", c)
		}
	}
	m, _ := New[int](Config{LengthDuration: time.Hour, MaxEvents: 2})
	m.Add(Event[int]{1, at(1)})
	m.Add(Event[int]{2, at(2)})
	if _, _, err := m.Add(Event[int]{3, at(3)}); err != ErrFull {
		t.Fatalf("MaxEvents: %v", err)
	}
}
