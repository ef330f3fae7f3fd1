package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// profiler fetches a CPU profile of the Magnetar server over its pprof endpoint during a
// measurement window, so a missed target comes with where the time went.
type profiler struct {
	baseURL string // e.g. http://127.0.0.1:8080; "" disables
	dir     string
	bin     string // binary for symbolisation
}

// start begins a profile of length d in the background; the returned func waits for it and
// returns the `go tool pprof -top` summary (or why there is none).
func (p *profiler) start(ctx context.Context, inst *Instance, name string, d time.Duration) func() string {
	if p == nil || p.baseURL == "" {
		return func() string { return "" }
	}
	base := expandPorts(p.baseURL, inst.ports)
	secs := max(1, int(d.Seconds()))
	out := filepath.Join(p.dir, strings.NewReplacer("/", "_", " ", "_").Replace(name)+".pprof")
	done := make(chan string, 1)
	go func() {
		done <- func() string {
			cctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
			defer cancel()
			u := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimRight(base, "/"), secs)
			req, _ := http.NewRequestWithContext(cctx, http.MethodGet, u, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return "profile: " + err.Error()
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return "profile: " + u + ": " + resp.Status
			}
			if err := os.MkdirAll(p.dir, 0o755); err != nil {
				return "profile: " + err.Error()
			}
			f, err := os.Create(out)
			if err != nil {
				return "profile: " + err.Error()
			}
			_, err = io.Copy(f, resp.Body)
			f.Close()
			if err != nil {
				return "profile: " + err.Error()
			}
			top, err := exec.CommandContext(cctx, "go", "tool", "pprof", "-top", "-nodecount=15", p.bin, out).CombinedOutput()
			if err != nil {
				return fmt.Sprintf("profile saved to %s (pprof -top failed: %v)", out, err)
			}
			return fmt.Sprintf("profile %s:\n%s", out, strings.TrimSpace(string(top)))
		}()
	}()
	return func() string {
		select {
		case s := <-done:
			return s
		case <-time.After(d + 40*time.Second):
			return "profile: timed out"
		}
	}
}
