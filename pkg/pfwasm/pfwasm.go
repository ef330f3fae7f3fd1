//go:build wasip1

package pfwasm

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"unsafe"
)

// Handler processes one payload; a nil result publishes nothing.
type Handler func(c *Context, in []byte) ([]byte, error)

// WindowHandler processes one window's payloads, oldest first.
type WindowHandler func(c *Context, records [][]byte) ([]byte, error)

var (
	handler       Handler
	windowHandler WindowHandler
	inbuf         []byte
)

// Handle registers the function.
func Handle(h Handler) { handler = h }

// HandleWindow registers a window function.
func HandleWindow(h WindowHandler) { windowHandler = h }

// Context is what a function can ask of its instance.
type Context struct{}

//go:wasmimport magnetar set_output
func hostSetOutput(ptr, n uint32)

//go:wasmimport magnetar set_error
func hostSetError(ptr, n uint32)

//go:wasmimport magnetar log
func hostLog(level int32, ptr, n uint32)

//go:wasmimport magnetar take
func hostTake(ptr uint32)

//go:wasmimport magnetar state_get
func hostStateGet(kp, kn uint32) int64

//go:wasmimport magnetar state_put
func hostStatePut(kp, kn, vp, vn uint32) int32

//go:wasmimport magnetar state_del
func hostStateDel(kp, kn uint32) int32

//go:wasmimport magnetar counter_incr
func hostCounterIncr(kp, kn uint32, by int64) int64

//go:wasmimport magnetar counter_get
func hostCounterGet(kp, kn uint32) int64

//go:wasmimport magnetar user_config
func hostUserConfig(kp, kn uint32) int64

//go:wasmimport magnetar current
func hostCurrent(field int32) int64

//go:wasmimport magnetar publish
func hostPublish(tp, tn, vp, vn uint32) int32

func ptrOf(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

func strPtr(s string) (uint32, uint32) {
	if s == "" {
		return 0, 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.StringData(s)))), uint32(len(s))
}

// takeN copies a pending host result of n bytes.
func takeN(n int64) []byte {
	b := make([]byte, n)
	if n > 0 {
		hostTake(ptrOf(b))
	} else {
		hostTake(0)
	}
	return b
}

//go:wasmexport pf_alloc
func pfAlloc(size uint32) uint32 {
	if cap(inbuf) < int(size) || cap(inbuf) == 0 {
		inbuf = make([]byte, max(int(size), 64))
	}
	inbuf = inbuf[:size]
	if size == 0 {
		return ptrOf(inbuf[:1])
	}
	return ptrOf(inbuf)
}

func finish(out []byte, err error) int32 {
	if err != nil {
		msg := err.Error()
		p, n := strPtr(msg)
		hostSetError(p, n)
		return 1
	}
	if out != nil {
		hostSetOutput(ptrOf(out), uint32(len(out)))
	}
	return 0
}

// pfAllocReusable tells the host that pf_alloc's buffer stays valid for every later input
// up to the size it was asked for (inbuf only grows, and Go's collector does not move it):
// the host then calls pf_alloc only for a larger input, one guest call less per record.
//
//go:wasmexport pf_alloc_reusable
func pfAllocReusable() int32 { return 1 }

//go:wasmexport pf_process
func pfProcess(ptr, n uint32) int32 {
	if handler == nil {
		return finish(nil, errors.New("pfwasm: no handler registered (call pfwasm.Handle in init)"))
	}
	in := append([]byte(nil), inbuf[:n]...)
	return finish(handler(&Context{}, in))
}

//go:wasmexport pf_process_window
func pfProcessWindow(ptr, n uint32) int32 {
	if windowHandler == nil {
		return finish(nil, errors.New("pfwasm: no window handler registered (call pfwasm.HandleWindow in init)"))
	}
	b := inbuf[:n]
	if len(b) < 4 {
		return finish(nil, errors.New("pfwasm: short window"))
	}
	count := binary.LittleEndian.Uint32(b)
	b = b[4:]
	recs := make([][]byte, 0, count)
	for i := uint32(0); i < count; i++ {
		if len(b) < 4 {
			return finish(nil, errors.New("pfwasm: truncated window"))
		}
		l := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if uint32(len(b)) < l {
			return finish(nil, errors.New("pfwasm: truncated window record"))
		}
		recs = append(recs, append([]byte(nil), b[:l]...))
		b = b[l:]
	}
	return finish(windowHandler(&Context{}, recs))
}

// ErrNoState is returned for a state key that was never written.
var ErrNoState = errors.New("pfwasm: no such state key")

// ErrHost is a host call that failed.
var ErrHost = errors.New("pfwasm: host call failed")

// GetState reads key.
func (*Context) GetState(key string) ([]byte, error) {
	kp, kn := strPtr(key)
	n := hostStateGet(kp, kn)
	switch n {
	case -1:
		return nil, ErrNoState
	case -2:
		return nil, ErrHost
	}
	return takeN(n), nil
}

// PutState writes key.
func (*Context) PutState(key string, value []byte) error {
	kp, kn := strPtr(key)
	if hostStatePut(kp, kn, ptrOf(value), uint32(len(value))) != 0 {
		return ErrHost
	}
	return nil
}

// DeleteState removes key.
func (*Context) DeleteState(key string) error {
	kp, kn := strPtr(key)
	switch hostStateDel(kp, kn) {
	case 0:
		return nil
	case 1:
		return ErrNoState
	}
	return ErrHost
}

// IncrCounter adds by to the counter key and returns its new value.
func (*Context) IncrCounter(key string, by int64) (int64, error) {
	kp, kn := strPtr(key)
	v := hostCounterIncr(kp, kn, by)
	if v == math.MinInt64 {
		return 0, ErrHost
	}
	return v, nil
}

// GetCounter reads the counter key (0 when absent).
func (*Context) GetCounter(key string) (int64, error) {
	kp, kn := strPtr(key)
	v := hostCounterGet(kp, kn)
	if v == math.MinInt64 {
		return 0, ErrHost
	}
	return v, nil
}

// UserConfigValue decodes userConfig[key] into v; false when absent.
func (*Context) UserConfigValue(key string, v any) bool {
	kp, kn := strPtr(key)
	n := hostUserConfig(kp, kn)
	if n < 0 {
		return false
	}
	return json.Unmarshal(takeN(n), v) == nil
}

func current(field int32) string {
	n := hostCurrent(field)
	if n < 0 {
		return ""
	}
	return string(takeN(n))
}

// Topic, Key and MessageID describe the current record.
func (*Context) Topic() string     { return current(0) }
func (*Context) Key() string       { return current(1) }
func (*Context) MessageID() string { return current(2) }

// Publish sends value to topic.
func (*Context) Publish(topic string, value []byte) error {
	tp, tn := strPtr(topic)
	if hostPublish(tp, tn, ptrOf(value), uint32(len(value))) != 0 {
		return ErrHost
	}
	return nil
}

// Log writes a line to the function's log (level: slog's, 0 = info).
func (*Context) Log(level int, msg string) {
	p, n := strPtr(msg)
	hostLog(int32(level), p, n)
}
