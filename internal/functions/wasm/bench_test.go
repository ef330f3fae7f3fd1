package wasm

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/pkg/pf"
)

// BenchmarkProcess is the runtime's cost per record without a broker: one Process of 100
// bytes through the functions tests' Go guest (testdata/wasmfn, exclaim mode: pf_process,
// user_config and set_output per record). cpu-ns/op is the process's CPU time per record,
// which a loaded machine inflates less than the wall time.
func BenchmarkProcess(b *testing.B) {
	path := os.Getenv("WASM_BENCH_MODULE")
	if path == "" {
		path = filepath.Join(b.TempDir(), "fn.wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", path, "../testdata/wasmfn")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("building the guest: %v\n%s", err, out)
		}
	}
	code, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	e := NewEngine(Limits{MaxMemoryBytes: 64 << 20, MaxInvocation: 5 * time.Second}, slog.New(slog.DiscardHandler))
	defer e.Close()
	f, err := e.NewFunction(context.Background(), code, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	rec := &pf.Record{Payload: make([]byte, 100)}
	ctx := context.Background()
	b.ReportAllocs()
	var before, after syscall.Rusage
	n := 0
	for b.Loop() {
		if n == 0 {
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		}
		n++
		if _, err := f.Process(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
	b.ReportMetric(float64(cpu)/float64(n), "cpu-ns/op")
}
