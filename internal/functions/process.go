package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/magnetar-io/magnetar/pkg/pf/pfpb"
)

// maxInstanceLogBytes bounds an instance's log file; a longer one starts over at its next start.
const maxInstanceLogBytes = 16 << 20

// processRuntime runs each instance as a child process: a Go function's own binary, or our
// Python runner in the function's virtualenv. The worker is the InstanceControl client.
type processRuntime struct {
	python *pythonEnvs
}

func (p *processRuntime) Start(ctx context.Context, spec InstanceSpec) (RunningInstance, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	conf := *spec.Conf
	conf.Port = port
	confJSON, err := json.Marshal(&conf)
	if err != nil {
		return nil, err
	}
	var cmd *exec.Cmd
	switch spec.Meta.Config.Runtime {
	case RuntimePython:
		py, runner, err := p.python.ensure(ctx, spec)
		if err != nil {
			return nil, err
		}
		cmd = exec.Command(py, runner, "--instance-conf", string(confJSON), "--py", spec.Package, "--class", spec.Meta.Config.ClassName)
	default:
		if err := checkExecutable(spec.Package); err != nil {
			return nil, err
		}
		cmd = exec.Command(spec.Package, "-instance-conf", string(confJSON))
	}
	logFile, err := openInstanceLog(spec)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = filepath.Dir(spec.Package)
	cmd.Env = append(os.Environ(), instanceEnv(spec)...)
	setChildAttrs(cmd)
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("functions: start %s: %w", spec.Package, err)
	}
	cc, err := grpc.NewClient(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		_ = cmd.Process.Kill()
		_ = logFile.Close()
		return nil, err
	}
	pi := &processInstance{cmd: cmd, cc: cc, ctl: pfpb.NewInstanceControlClient(cc), done: make(chan struct{}), log: logFile.Name()}
	go func() {
		err := cmd.Wait()
		_ = logFile.Close()
		pi.mu.Lock()
		pi.err = err
		pi.mu.Unlock()
		close(pi.done)
	}()
	return pi, nil
}

// instanceEnv is what an instance process gets beyond the worker's environment: a Go
// soft memory limit below its resources.ram (the worker kills it above).
func instanceEnv(spec InstanceSpec) []string {
	var env []string
	if r := spec.Meta.Config.Resources; r != nil && r.RAM > 0 && spec.Meta.Config.Runtime == RuntimeGo {
		env = append(env, "GOMEMLIMIT="+strconv.FormatInt(r.RAM*9/10, 10))
	}
	return env
}

func openInstanceLog(spec InstanceSpec) (*os.File, error) {
	dir := filepath.Join(spec.Dir, "logs", spec.Meta.Config.Tenant, spec.Meta.Config.Namespace, spec.Meta.Config.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, strconv.Itoa(spec.InstanceID)+".log")
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxInstanceLogBytes {
		flags |= os.O_TRUNC
	}
	return os.OpenFile(path, flags, 0o644)
}

// checkExecutable refuses what cannot be run, with an error that names the problem.
func checkExecutable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := f.Read(magic); err != nil {
		return fmt.Errorf("functions: package %s is unreadable: %w", path, err)
	}
	if string(magic) != "\x7fELF" && !strings.HasPrefix(string(magic), "#!") {
		return fmt.Errorf("functions: package %s is not an executable (want a Go binary built for this worker's OS)", filepath.Base(path))
	}
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

type processInstance struct {
	cmd  *exec.Cmd
	cc   *grpc.ClientConn
	ctl  *pfpb.InstanceControlClient
	done chan struct{}
	log  string

	mu  sync.Mutex
	err error
}

func (p *processInstance) Status(ctx context.Context) (*pfpb.FunctionStatus, error) {
	return p.ctl.GetFunctionStatus(ctx)
}

func (p *processInstance) Metrics(ctx context.Context, reset bool) (*pfpb.MetricsData, error) {
	if reset {
		return p.ctl.GetAndResetMetrics(ctx)
	}
	return p.ctl.GetMetrics(ctx)
}

func (p *processInstance) Health(ctx context.Context) error {
	r, err := p.ctl.HealthCheck(ctx)
	if err != nil {
		return err
	}
	if !r.Success {
		return errors.New("the instance reports an invocation running past its timeout")
	}
	return nil
}

func (p *processInstance) Done() <-chan struct{} { return p.done }

func (p *processInstance) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return fmt.Errorf("%w (log: %s)", p.err, p.log)
	}
	return nil
}

func (p *processInstance) MemoryBytes() int64 { return processRSS(p.cmd.Process.Pid) }

// Stop sends SIGTERM, and SIGKILL if the process is still there when ctx ends.
func (p *processInstance) Stop(ctx context.Context) error {
	defer p.cc.Close()
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-ctx.Done():
		_ = p.cmd.Process.Kill()
		<-p.done
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return nil
}
