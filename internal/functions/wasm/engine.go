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
	// reusable: the module exports pf_alloc_reusable returning 1, so inPtr (the last
	// pf_alloc's buffer, of inCap bytes) takes any input that fits without a new pf_alloc.
	reusable     bool
	inPtr, inCap uint32

	mu      sync.Mutex // one call at a time (the instance loop is sequential anyway)
	output  []byte
	errMsg  string
	pending []byte
	fc      *pf.FunctionContext
	ctx     context.Context
	config  map[string][]byte // userConfig values as JSON, by key: fixed for an instance's life
}

// userConfigJSON is the JSON of userConfig[key]; marshalled once per key, as guests tend to
// ask for their settings on every record.
func (f *Function) userConfigJSON(key string) ([]byte, bool) {
	if j, ok := f.config[key]; ok {
		return j, j != nil
	}
	var j []byte
	if v, ok := f.fc.UserConfigValue(key); ok {
		j, _ = json.Marshal(v)
	}
	if f.config == nil {
		f.config = map[string][]byte{}
	}
	if len(f.config) < maxConfigKeys {
		f.config[key] = j
	}
	return j, j != nil
}

// maxConfigKeys bounds the cache of userConfigJSON (a guest asking for ever new keys).
const maxConfigKeys = 1024

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
	f.reusable, f.inPtr, f.inCap = false, 0, 0
	if r := mod.ExportedFunction("pf_alloc_reusable"); r != nil {
		res, err := r.Call(ictx)
		if err != nil {
			return fmt.Errorf("%w: pf_alloc_reusable: %v", ErrBadModule, err)
		}
		f.reusable = len(res) == 1 && api.DecodeI32(res[0]) == 1
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
	ptr, err := f.inputBuffer(cctx, uint32(len(input)))
	if err != nil {
		return nil, err
	}
	if len(input) > 0 && !f.mod.Memory().Write(ptr, input) {
		return nil, fmt.Errorf("wasm: pf_alloc(%d) returned %d, outside memory", len(input), ptr)
	}
	res, err := fn.Call(cctx, uint64(ptr), uint64(len(input)))
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

// inputBuffer is a guest buffer for n bytes of input: the last one when the module lets
// it be reused and n fits, else a new pf_alloc.
func (f *Function) inputBuffer(ctx context.Context, n uint32) (uint32, error) {
	if f.reusable && f.inPtr != 0 && n <= f.inCap {
		return f.inPtr, nil
	}
	res, err := f.alloc.Call(ctx, uint64(n))
	if err != nil {
		return 0, f.trapped(ctx, err)
	}
	f.inPtr, f.inCap = api.DecodeU32(res[0]), n
	return f.inPtr, nil
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

// read copies [ptr, ptr+n) out of the guest's memory.
func (f *Function) read(m api.Module, ptr, n uint32) []byte {
	return append([]byte(nil), f.view(m, ptr, n)...)
}

// view is [ptr, ptr+n) of the guest's memory itself, valid until the guest runs again.
func (f *Function) view(m api.Module, ptr, n uint32) []byte {
	b, ok := m.Memory().Read(ptr, n)
	if !ok {
		panic(fmt.Errorf("wasm: guest passed [%d, +%d) outside its memory", ptr, n))
	}
	return b
}

// hostModule defines the "magnetar" imports. They are GoModuleFuncs on the raw stack:
// wazero calls a func given to WithFunc through reflection, which cost more than half of
// an invocation (three host calls per record at least).
func (f *Function) hostModule(ctx context.Context) error {
	pend := func(b []byte) uint64 {
		f.pending = b
		return uint64(len(b))
	}
	b := f.rt.NewHostModuleBuilder("magnetar")
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	def := func(name string, params, results []api.ValueType, fn api.GoModuleFunc) {
		b.NewFunctionBuilder().WithGoModuleFunction(fn, params, results).Export(name)
	}
	// arg reads the i32 parameter i (a pointer or a length).
	arg := func(stack []uint64, i int) uint32 { return api.DecodeU32(stack[i]) }
	str := func(m api.Module, stack []uint64, i int) string {
		return string(f.view(m, arg(stack, i), arg(stack, i+1)))
	}
	def("set_output", []api.ValueType{i32, i32}, nil, func(_ context.Context, m api.Module, stack []uint64) {
		f.output = f.read(m, arg(stack, 0), arg(stack, 1))
	})
	def("set_error", []api.ValueType{i32, i32}, nil, func(_ context.Context, m api.Module, stack []uint64) {
		f.errMsg = str(m, stack, 0)
	})
	def("log", []api.ValueType{i32, i32, i32}, nil, func(_ context.Context, m api.Module, stack []uint64) {
		msg := str(m, stack, 1)
		lg := f.e.log
		if f.fc != nil {
			lg = f.fc.Logger()
		}
		lg.Log(context.Background(), slog.Level(api.DecodeI32(stack[0])), msg)
	})
	def("take", []api.ValueType{i32}, nil, func(_ context.Context, m api.Module, stack []uint64) {
		if !m.Memory().Write(arg(stack, 0), f.pending) {
			panic(errors.New("wasm: take: buffer outside memory"))
		}
		f.pending = nil
	})
	def("state_get", []api.ValueType{i32, i32}, []api.ValueType{i64}, func(_ context.Context, m api.Module, stack []uint64) {
		if f.fc == nil {
			stack[0] = api.EncodeI64(-2)
			return
		}
		v, err := f.fc.GetState(f.ctx, str(m, stack, 0))
		switch {
		case errors.Is(err, pf.ErrNoState):
			stack[0] = api.EncodeI64(-1)
		case err != nil:
			stack[0] = api.EncodeI64(-2)
		default:
			stack[0] = pend(v)
		}
	})
	def("state_put", []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}, func(_ context.Context, m api.Module, stack []uint64) {
		if f.fc == nil || f.fc.PutState(f.ctx, str(m, stack, 0), f.read(m, arg(stack, 2), arg(stack, 3))) != nil {
			stack[0] = api.EncodeI32(1)
			return
		}
		stack[0] = api.EncodeI32(0)
	})
	def("state_del", []api.ValueType{i32, i32}, []api.ValueType{i32}, func(_ context.Context, m api.Module, stack []uint64) {
		if f.fc == nil {
			stack[0] = api.EncodeI32(2)
			return
		}
		err := f.fc.DeleteState(f.ctx, str(m, stack, 0))
		switch {
		case err == nil:
			stack[0] = api.EncodeI32(0)
		case errors.Is(err, pf.ErrNoState):
			stack[0] = api.EncodeI32(1)
		default:
			stack[0] = api.EncodeI32(2)
		}
	})
	def("counter_incr", []api.ValueType{i32, i32, i64}, []api.ValueType{i64}, func(_ context.Context, m api.Module, stack []uint64) {
		if f.fc == nil {
			stack[0] = api.EncodeI64(math.MinInt64)
			return
		}
		v, err := f.fc.IncrCounter(f.ctx, str(m, stack, 0), int64(stack[2]))
		if err != nil {
			v = math.MinInt64
		}
		stack[0] = api.EncodeI64(v)
	})
	def("counter_get", []api.ValueType{i32, i32}, []api.ValueType{i64}, func(_ context.Context, m api.Module, stack []uint64) {
		if f.fc == nil {
			stack[0] = api.EncodeI64(math.MinInt64)
			return
		}
		v, err := f.fc.GetCounter(f.ctx, str(m, stack, 0))
		switch {
		case errors.Is(err, pf.ErrNoState):
			v = 0
		case err != nil:
			v = math.MinInt64
		}
		stack[0] = api.EncodeI64(v)
	})
	def("user_config", []api.ValueType{i32, i32}, []api.ValueType{i64}, func(_ context.Context, m api.Module, stack []uint64) {
		key := str(m, stack, 0) // before stack[0] is overwritten with the result
		stack[0] = api.EncodeI64(-1)
		if f.fc == nil {
			return
		}
		if j, ok := f.userConfigJSON(key); ok {
			stack[0] = pend(j)
		}
	})
	def("current", []api.ValueType{i32}, []api.ValueType{i64}, func(_ context.Context, _ api.Module, stack []uint64) {
		field := api.DecodeI32(stack[0])
		stack[0] = api.EncodeI64(-1)
		if f.fc == nil || f.fc.CurrentRecord() == nil {
			return
		}
		r := f.fc.CurrentRecord()
		switch field {
		case 0:
			stack[0] = pend([]byte(r.Topic))
		case 1:
			stack[0] = pend([]byte(r.Key))
		case 2:
			stack[0] = pend([]byte(r.MessageID))
		case 3:
			j, _ := json.Marshal(r.Properties)
			stack[0] = pend(j)
		}
	})
	def("publish", []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}, func(_ context.Context, m api.Module, stack []uint64) {
		if f.fc == nil || f.fc.Publish(f.ctx, str(m, stack, 0), f.read(m, arg(stack, 2), arg(stack, 3))) != nil {
			stack[0] = api.EncodeI32(1)
			return
		}
		stack[0] = api.EncodeI32(0)
	})
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
