package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/functions/wasm"
)

// LocalRunOptions are `magnetar functions localrun`'s: one function run on this machine
// without a worker, its instances supervised as a worker would.
type LocalRunOptions struct {
	Config  FunctionConfig
	Package string // local path of the binary, .py/.whl/.zip or .wasm
	// BrokerServiceURL is the cluster the instances talk to.
	BrokerServiceURL string
	// StateStorageServiceURL, when set, is a state service to use (state fails without).
	StateStorageServiceURL string
	AuthPlugin, AuthParams string
	// InstanceIDOffset numbers the instances from it (to run parts of one function on
	// several machines).
	InstanceIDOffset int
	Dir              string
	Worker           config.FunctionsWorkerConfig
	Logger           *slog.Logger
}

// LocalRun runs the function until ctx ends.
func LocalRun(ctx context.Context, o LocalRunOptions) error {
	cfg := o.Config
	if cfg.Tenant == "" {
		cfg.Tenant = "public"
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.Name == "" {
		cfg.Name = strings.TrimSuffix(filepath.Base(o.Package), filepath.Ext(o.Package))
	}
	if cfg.Runtime == "" {
		switch strings.ToLower(filepath.Ext(o.Package)) {
		case ".py", ".whl", ".zip":
			cfg.Runtime = RuntimePython
		case ".wasm":
			cfg.Runtime = RuntimeWasm
		default:
			cfg.Runtime = RuntimeGo
		}
	}
	if err := cfg.normalize(cfg.Tenant, cfg.Namespace, cfg.Name, limits{maxParallelism: o.Worker.MaxParallelism}); err != nil {
		return err
	}
	abs, err := filepath.Abs(o.Package)
	if err != nil {
		return err
	}
	if _, err := os.Stat(abs); err != nil {
		return badField("package", "%v", err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m := &FunctionMeta{Config: cfg, ComponentType: ComponentFunction, Version: 1, Package: PackageRef{SHA256: "localrun-" + cfg.Name, FileName: filepath.Base(abs)}}
	proc := &processRuntime{python: &pythonEnvs{interpreter: o.Worker.PythonInterpreter, clientVersion: o.Worker.PythonPulsarClientVersion}}
	eng := wasm.NewEngine(wasm.Limits{MaxMemoryBytes: o.Worker.WasmMaxMemoryMB << 20,
		MaxInvocation: time.Duration(o.Worker.WasmMaxInvocationMs) * time.Millisecond, Interpreter: !o.Worker.WasmCompiler}, o.Logger)
	defer eng.Close()
	w := &Worker{log: o.Logger, wasm: eng}
	var sups []*supervisor
	for i := 0; i < cfg.Parallelism; i++ {
		id := o.InstanceIDOffset + i
		sctx, cancel := context.WithCancel(ctx)
		s := &supervisor{log: o.Logger, fqfn: cfg.FQFN, id: id, workerID: "localrun", cancel: cancel, done: make(chan struct{}),
			liveness: time.Duration(o.Worker.InstanceLivenessCheckFreqMs) * time.Millisecond,
			maxWait:  time.Duration(o.Worker.MaxRestartBackoffMs) * time.Millisecond}
		s.start = func(ctx context.Context) (RunningInstance, error) {
			spec := InstanceSpec{Meta: m, InstanceID: id, Package: abs, Dir: o.Dir, Conf: buildConf(m, id, confEnv{
				brokerURL: o.BrokerServiceURL, stateURL: o.StateStorageServiceURL, cluster: "localrun", workerID: "localrun",
				authPlugin: o.AuthPlugin, authParams: o.AuthParams,
			})}
			if cfg.Runtime == RuntimeWasm {
				return w.startWasm(ctx, spec)
			}
			return proc.Start(ctx, spec)
		}
		sups = append(sups, s)
		go s.run(sctx)
	}
	o.Logger.Info("localrun started", "function", cfg.FQFN, "instances", cfg.Parallelism, "runtime", cfg.Runtime)
	<-ctx.Done()
	stopAll(sups)
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return fmt.Errorf("localrun: %w", ctx.Err())
}

// ParseFunctionConfig reads a FunctionConfig JSON document (unknown fields are errors).
func ParseFunctionConfig(b []byte) (*FunctionConfig, error) { return decodeConfig(b) }
