package wasm

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/magnetar-io/magnetar/pkg/pf"
)

// Limits bound every instance.
type Limits struct {
	MaxMemoryBytes int64
	MaxInvocation  time.Duration
	// Interpreter runs modules in wazero's interpreter instead of compiling them to machine
	// code: instant start, slower calls (functionsWasmCompiler=false).
	Interpreter bool
}

// Engine compiles modules once and shares the compiled code between instances.
type Engine struct {
	limits Limits
	log    *slog.Logger
	cache  wazero.CompilationCache
}

// NewEngine returns an engine with the given worker-wide limits.
func NewEngine(limits Limits, log *slog.Logger) *Engine {
	return &Engine{limits: limits, log: log, cache: wazero.NewCompilationCache()}
}

// Close releases compiled code.
func (e *Engine) Close() { _ = e.cache.Close(context.Background()) }

// ErrBadModule is a package that is not a usable WebAssembly function.
var ErrBadModule = errors.New("wasm: not a usable function module")

// Function is one instance's module: it implements pf.Function and pf.WindowFunction.
type Function struct {
	e        *Engine
	code     []byte
	memLimit int64
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	mod      api.Module
	alloc    api.Function
	process  api.Function
	window   api.Function

	mu      sync.Mutex // one call at a time (the instance loop is sequential anyway)
	output  []byte
	errMsg  string
	pending []byte
	fc      *pf.FunctionContext
	ctx     context.Context
}

// Validate checks that code is a module with the exports a function needs.
func Validate(ctx context.Context, code []byte) error {
	if len(code) < 8 || string(code[:4]) != "\x00asm" {
		return fmt.Errorf("%w: missing the \\0asm header", ErrBadModule)
	}
	// The interpreter validates as strictly as the compiler and in a tenth of the time.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, code)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadModule, err)
	}
	ex := cm.ExportedFunctions()
	if _, ok := ex["pf_alloc"]; !ok {
		return fmt.Errorf("%w: it does not export pf_alloc", ErrBadModule)
	}
	_, p := ex["pf_process"]
	_, w := ex["pf_process_window"]
	if !p && !w {
		return fmt.Errorf("%w: it exports neither pf_process nor pf_process_window", ErrBadModule)
	}
	return nil
}

// NewFunction prepares code for one instance; memLimit (0: the engine's) bounds its memory.
func (e *Engine) NewFunction(ctx context.Context, code []byte, memLimit int64) (*Function, error) {
	if memLimit <= 0 || memLimit > e.limits.MaxMemoryBytes {
		memLimit = e.limits.MaxMemoryBytes
	}
	f := &Function{e: e, code: code, memLimit: memLimit}
	if err := f.instantiate(ctx); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Windowed reports whether the module processes windows.
func (f *Function) Windowed() bool { return f.window != nil }

func (f *Function) instantiate(ctx context.Context) error {
	if f.rt == nil {
		pages := uint32(max(1, f.memLimit/65536))
		cfg := wazero.NewRuntimeConfig()
		if f.e.limits.Interpreter {
			cfg = wazero.NewRuntimeConfigInterpreter()
		}
		cfg = cfg.WithCompilationCache(f.e.cache).WithMemoryLimitPages(pages).WithCloseOnContextDone(true)
		f.rt = wazero.NewRuntimeWithConfig(ctx, cfg)
		wasi_snapshot_preview1.MustInstantiate(ctx, f.rt)
		if err := f.hostModule(ctx); err != nil {
			return err
		}
		cm, err := f.rt.CompileModule(ctx, f.code)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrBadModule, err)
		}
		f.compiled = cm
	}
	mc := wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize").
		WithStdout(logWriter{f.e.log, slog.LevelInfo}).WithStderr(logWriter{f.e.log, slog.LevelWarn}).
		WithSysWalltime().WithSysNanotime().WithRandSource(randReader{})
	ictx, cancel := context.WithTimeout(ctx, max(f.e.limits.MaxInvocation, 10*time.Second))
	defer cancel()
	mod, err := f.rt.InstantiateModule(ictx, f.compiled, mc)
	if err != nil {
		return fmt.Errorf("%w: instantiating: %v", ErrBadModule, err)
	}
	f.mod = mod
	f.alloc = mod.ExportedFunction("pf_alloc")
	f.process = mod.ExportedFunction("pf_process")
	f.window = mod.ExportedFunction("pf_process_window")
	if f.alloc == nil || (f.process == nil && f.window == nil) {
		return fmt.Errorf("%w: it must export pf_alloc and pf_process or pf_process_window", ErrBadModule)
	}
	return nil
}

// Close releases the module and its runtime.
func (f *Function) Close() {
	if f.rt != nil {
		_ = f.rt.Close(context.Background())
	}
}

// Process implements pf.Function.
func (f *Function) Process(ctx context.Context, rec *pf.Record) ([]byte, error) {
	if f.process == nil {
		return nil, errors.New("wasm: the module has no pf_process")
	}
	return f.call(ctx, f.process, rec.Payload)
}

// ProcessWindow implements pf.WindowFunction.
func (f *Function) ProcessWindow(ctx context.Context, w *pf.Window) ([]byte, error) {
	if f.window == nil {
		return nil, errors.New("wasm: the module has no pf_process_window")
	}
	n := 4
	for _, r := range w.Records {
		n += 4 + len(r.Payload)
	}
	buf := make([]byte, 0, n)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(w.Records)))
	for _, r := range w.Records {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(r.Payload)))
		buf = append(buf, r.Payload...)
	}
	return f.call(ctx, f.window, buf)
}

// call runs one invocation under the time budget; a trap or timeout closes the module,
// which is instantiated again before the next call.
func (f *Function) call(ctx context.Context, fn api.Function, input []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mod == nil || f.mod.IsClosed() {
		if err := f.instantiate(context.Background()); err != nil {
			return nil, err
		}
		fn = f.mod.ExportedFunction(fn.Definition().Name())
	}
	fc, _ := pf.FromContext(ctx)
	cctx, cancel := context.WithTimeout(ctx, f.e.limits.MaxInvocation)
	defer cancel()
	f.output, f.errMsg, f.pending, f.fc, f.ctx = nil, "", nil, fc, cctx
	defer func() { f.fc, f.ctx = nil, nil }()
	res, err := f.alloc.Call(cctx, uint64(len(input)))
	if err != nil {
		return nil, f.trapped(cctx, err)
	}
	ptr := uint32(res[0])
	if len(input) > 0 && !f.mod.Memory().Write(ptr, input) {
		return nil, fmt.Errorf("wasm: pf_alloc(%d) returned %d, outside memory", len(input), ptr)
	}
	res, err = fn.Call(cctx, uint64(ptr), uint64(len(input)))
	if err != nil {
		return nil, f.trapped(cctx, err)
	}
	if int32(res[0]) != 0 {
		msg := f.errMsg
		if msg == "" {
			msg = fmt.Sprintf("returned %d", int32(res[0]))
		}
		return nil, fmt.Errorf("wasm function: %s", msg)
	}
	return f.output, nil
}

func (f *Function) trapped(ctx context.Context, err error) error {
	if f.mod != nil {
		_ = f.mod.Close(context.Background())
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("wasm: the call ran past functionsWasmMaxInvocationMs (%v): module reset: %w", f.e.limits.MaxInvocation, err)
	}
	return fmt.Errorf("wasm: trap (module reset): %w", err)
}

func (f *Function) read(m api.Module, ptr, n uint32) []byte {
	b, ok := m.Memory().Read(ptr, n)
	if !ok {
		panic(fmt.Errorf("wasm: guest passed [%d, +%d) outside its memory", ptr, n))
	}
	return append([]byte(nil), b...)
}

// hostModule defines the "magnetar" imports.
func (f *Function) hostModule(ctx context.Context) error {
	pend := func(b []byte) int64 {
		f.pending = b
		return int64(len(b))
	}
	b := f.rt.NewHostModuleBuilder("magnetar")
	b.NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, ptr, n uint32) {
		f.output = f.read(m, ptr, n)
	}).Export("set_output")
	b.NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, ptr, n uint32) {
		f.errMsg = string(f.read(m, ptr, n))
	}).Export("set_error")
	b.NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, level int32, ptr, n uint32) {
		msg := string(f.read(m, ptr, n))
		lg := f.e.log
		if f.fc != nil {
			lg = f.fc.Logger()
		}
		lg.Log(context.Background(), slog.Level(level), msg)
	}).Export("log")
	b.NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, ptr uint32) {
		if !m.Memory().Write(ptr, f.pending) {
			panic(errors.New("wasm: take: buffer outside memory"))
		}
		f.pending = nil
	}).Export("take")
	b.NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, kp, kn uint32) int64 {
		if f.fc == nil {
			return -2
		}
		v, err := f.fc.GetState(f.ctx, string(f.read(m, kp, kn)))
		switch {
		case errors.Is(err, pf.ErrNoState):
			return -1
		case err != nil:
			return -2
		}
		return pend(v)
	}).Export("state_get")
	b.NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, kp, kn, vp, vn uint32) int32 {
		if f.fc == nil || f.fc.PutState(f.ctx, string(f.read(m, kp, kn)), f.read(m, vp, vn)) != nil {
			return 1
		}
		return 0
	}).Export("state_put")
	b.NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, kp, kn uint32) int32 {
		if f.fc == nil {
			return 2
		}
		err := f.fc.DeleteState(f.ctx, string(f.read(m, kp, kn)))
		switch {
		case err == nil:
			return 0
		case errors.Is(err, pf.ErrNoState):
			return 1
		}
		return 2
	}).Export("state_del")
	b.NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, kp, kn uint32, by int64) int64 {
		if f.fc == nil {
			return math.MinInt64
		}
		v, err := f.fc.IncrCounter(f.ctx, string(f.read(m, kp, kn)), by)
		if err != nil {
			return math.MinInt64
		}
		return v
	}).Export("counter_incr")
	b.NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, kp, kn uint32) int64 {
		if f.fc == nil {
			return math.MinInt64
		}
		v, err := f.fc.GetCounter(f.ctx, string(f.read(m, kp, kn)))
		switch {
		case errors.Is(err, pf.ErrNoState):
			return 0
		case err != nil:
			return math.MinInt64
		}
		return v
	}).Export("counter_get")
	b.NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, kp, kn uint32) int64 {
		if f.fc == nil {
			return -1
		}
		v, ok := f.fc.UserConfigValue(string(f.read(m, kp, kn)))
		if !ok {
			return -1
		}
		j, _ := json.Marshal(v)
		return pend(j)
	}).Export("user_config")
	b.NewFunctionBuilder().WithFunc(func(_ context.Context, _ api.Module, field int32) int64 {
		if f.fc == nil || f.fc.CurrentRecord() == nil {
			return -1
		}
		r := f.fc.CurrentRecord()
		switch field {
		case 0:
			return pend([]byte(r.Topic))
		case 1:
			return pend([]byte(r.Key))
		case 2:
			return pend([]byte(r.MessageID))
		case 3:
			j, _ := json.Marshal(r.Properties)
			return pend(j)
		}
		return -1
	}).Export("current")
	b.NewFunctionBuilder().WithFunc(func(_ context.Context, m api.Module, tp, tn, vp, vn uint32) int32 {
		if f.fc == nil || f.fc.Publish(f.ctx, string(f.read(m, tp, tn)), f.read(m, vp, vn)) != nil {
			return 1
		}
		return 0
	}).Export("publish")
	_, err := b.Instantiate(ctx)
	return err
}

type logWriter struct {
	log   *slog.Logger
	level slog.Level
}

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Log(context.Background(), w.level, "wasm function output", "text", string(p))
	return len(p), nil
}
