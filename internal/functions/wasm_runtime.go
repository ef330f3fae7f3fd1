package functions

import (
	"context"
	"errors"
	"os"
	"sync"

	"github.com/magnetar-io/magnetar/internal/functions/wasm"
	"github.com/magnetar-io/magnetar/pkg/pf"
	"github.com/magnetar-io/magnetar/pkg/pf/pfpb"
)

// startWasm runs a WASM instance in this process: the module under wazero, the SDK's
// instance engine around it.
func (w *Worker) startWasm(ctx context.Context, spec InstanceSpec) (RunningInstance, error) {
	code, err := os.ReadFile(spec.Package)
	if err != nil {
		return nil, err
	}
	var memLimit int64
	if r := spec.Meta.Config.Resources; r != nil {
		memLimit = r.RAM
	}
	fn, err := w.wasm.NewFunction(ctx, code, memLimit)
	if err != nil {
		return nil, err
	}
	// The module implements both interfaces; the instance must see only the one it exports.
	var handler any = struct{ pf.Function }{fn}
	if spec.Meta.Config.WindowConfig != nil {
		if !fn.Windowed() {
			fn.Close()
			return nil, errors.New("functions: the function has a windowConfig but its module does not export pf_process_window")
		}
		handler = struct{ pf.WindowFunction }{fn}
	}
	inst, err := pf.NewInstance(spec.Conf, handler, pf.Options{Logger: w.log})
	if err != nil {
		fn.Close()
		return nil, err
	}
	return runInProcess(inst, fn.Close), nil
}

// inProcess is an instance run by a goroutine of the worker.
type inProcess struct {
	inst    *pf.Instance
	cancel  context.CancelFunc
	done    chan struct{}
	release func()

	mu  sync.Mutex
	err error
}

func runInProcess(inst *pf.Instance, release func()) *inProcess {
	ctx, cancel := context.WithCancel(context.Background())
	p := &inProcess{inst: inst, cancel: cancel, done: make(chan struct{}), release: release}
	go func() {
		err := inst.Run(ctx)
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		release()
		close(p.done)
	}()
	return p
}

func (p *inProcess) Status(context.Context) (*pfpb.FunctionStatus, error) {
	return p.inst.Status(), nil
}

func (p *inProcess) Metrics(_ context.Context, reset bool) (*pfpb.MetricsData, error) {
	return p.inst.Metrics(reset), nil
}

func (p *inProcess) Health(context.Context) error {
	if !p.inst.Healthy() {
		return errors.New("an invocation runs past its timeout")
	}
	return nil
}

func (p *inProcess) Done() <-chan struct{} { return p.done }

func (p *inProcess) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *inProcess) MemoryBytes() int64 { return 0 }

func (p *inProcess) Stop(ctx context.Context) error {
	p.cancel()
	select {
	case <-p.done:
	case <-ctx.Done():
	}
	return nil
}

var _ = wasm.ErrBadModule
