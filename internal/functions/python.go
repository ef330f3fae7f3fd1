package functions

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/functions/python"
)

// pythonEnvs builds one virtualenv per Python package (by digest) with the pulsar-client
// wheel, grpcio and protobuf, plus the package's own dependencies: a wheel is installed with
// its requirements, a zip's requirements.txt is installed and the zip is imported from.
// pip's cache makes the second virtualenv fast; an env is used only once complete (.ready).
type pythonEnvs struct {
	interpreter   string
	clientVersion string

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// pipTimeout bounds building one virtualenv.
const pipTimeout = 15 * time.Minute

func (p *pythonEnvs) lock(key string) *sync.Mutex {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.locks == nil {
		p.locks = map[string]*sync.Mutex{}
	}
	l, ok := p.locks[key]
	if !ok {
		l = &sync.Mutex{}
		p.locks[key] = l
	}
	return l
}

// ensure returns the virtualenv's python and the runner script for spec's package.
func (p *pythonEnvs) ensure(ctx context.Context, spec InstanceSpec) (pythonBin, runner string, err error) {
	key := spec.Meta.Package.SHA256
	if key == "" {
		key = "nopkg"
	}
	dir := filepath.Join(spec.Dir, "venvs", key)
	pythonBin = filepath.Join(dir, "bin", "python")
	runner = filepath.Join(dir, "magnetar_runner.py")
	l := p.lock(key)
	l.Lock()
	defer l.Unlock()
	if _, err := os.Stat(filepath.Join(dir, ".ready")); err == nil {
		return pythonBin, runner, os.WriteFile(runner, python.Runner, 0o644)
	}
	ctx, cancel := context.WithTimeout(ctx, pipTimeout)
	defer cancel()
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", "", err
	}
	run := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Env = append(os.Environ(), "PIP_DISABLE_PIP_VERSION_CHECK=1")
		if err := cmd.Run(); err != nil {
			tail := out.String()
			if len(tail) > 2000 {
				tail = tail[len(tail)-2000:]
			}
			return fmt.Errorf("functions: python virtualenv: %s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, tail)
		}
		return nil
	}
	if err := run(p.interpreter, "-m", "venv", dir); err != nil {
		return "", "", err
	}
	pip := []string{"-m", "pip", "install", "--quiet"}
	if err := run(pythonBin, append(pip, "pulsar-client=="+p.clientVersion, "grpcio", "protobuf")...); err != nil {
		return "", "", err
	}
	switch strings.ToLower(filepath.Ext(spec.Package)) {
	case ".whl":
		if err := run(pythonBin, append(pip, spec.Package)...); err != nil {
			return "", "", err
		}
	case ".zip":
		req, err := zipRequirements(spec.Package, dir)
		if err != nil {
			return "", "", err
		}
		if req != "" {
			if err := run(pythonBin, append(pip, "-r", req)...); err != nil {
				return "", "", err
			}
		}
	}
	if err := os.WriteFile(runner, python.Runner, 0o644); err != nil {
		return "", "", err
	}
	return pythonBin, runner, os.WriteFile(filepath.Join(dir, ".ready"), nil, 0o644)
}

// zipRequirements extracts requirements.txt (at the top or one directory down) from a zip.
func zipRequirements(pkg, dir string) (string, error) {
	zr, err := zip.OpenReader(pkg)
	if err != nil {
		return "", fmt.Errorf("functions: python package %s is not a zip: %w", filepath.Base(pkg), err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name != "requirements.txt" && !(strings.Count(f.Name, "/") == 1 && strings.HasSuffix(f.Name, "/requirements.txt")) {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return "", err
		}
		b, err := io.ReadAll(io.LimitReader(rc, 1<<20))
		_ = rc.Close()
		if err != nil {
			return "", err
		}
		path := filepath.Join(dir, "requirements.txt")
		return path, os.WriteFile(path, b, 0o644)
	}
	return "", nil
}
