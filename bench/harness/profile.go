package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

// enablePprofFlag is the standalone flag that serves /debug/pprof on its HTTP port.
const enablePprofFlag = "--enable-pprof"

// withPprofFlag adds --enable-pprof to the standalone's extra arguments (once): asking for
// profiles with -magnetar-pprof is enough.
func withPprofFlag(extra []string) []string {
	for _, a := range extra {
		if a == enablePprofFlag || a == enablePprofFlag+"=true" {
			return extra
		}
	}
	return append(slices.Clone(extra), enablePprofFlag)
}

var (
	reSamples  = regexp.MustCompile(`Total samples = ([0-9.]+)(ms|s|mins)\b`)
	reDuration = regexp.MustCompile(`Duration: ([0-9.]+)(ms|s|mins)\b`)
)

// pprofSeconds reads a `go tool pprof -top` header value ("3.87s", "950ms", "1.2mins").
func pprofSeconds(re *regexp.Regexp, summary string) (float64, bool) {
	m := re.FindStringSubmatch(summary)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	switch m[2] {
	case "ms":
		v /= 1000
	case "mins":
		v *= 60
	}
	return v, true
}

// profileCPUPerM appends to a profile summary the CPU seconds its samples account for per
// million messages at the block's rate, next to the /proc figure for the whole window, so
// the profile can be read as a budget (which function costs how many CPU-s per million).
func profileCPUPerM(summary string, msgPerS, procPerM float64) string {
	cpu, ok1 := pprofSeconds(reSamples, summary)
	dur, ok2 := pprofSeconds(reDuration, summary)
	if !ok1 || !ok2 || dur <= 0 || msgPerS <= 0 {
		return summary
	}
	perM := cpu / (msgPerS * dur) * 1e6
	return fmt.Sprintf("%s\n\nprofiled CPU: %.2f s in %.1f s at %.0f msg/s = %.2f CPU-s per million messages (whole window from /proc: %.2f)",
		summary, cpu, dur, msgPerS, perM, procPerM)
}
