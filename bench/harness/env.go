package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Env is the machine and software state recorded with every run (performance.md §5.1.5).
type Env struct {
	Date        string
	Kernel      string
	CPU         string
	CPUs        int
	MemTotal    string
	GoVersion   string
	GoMaxProcs  int
	GitSHA      string
	NATSVersion string
	// KafkaVersion and PulsarVersion describe the JVM peers (release, heap).
	KafkaVersion, PulsarVersion string
	// Peers is each compare peer's status: what runs, or "not available (reason)".
	Peers map[string]string
	// NoFile is the open-file limit the servers and the load generator run with.
	NoFile     string
	NATSConfD1 string // sha256 prefix of the generated config
	NATSConfD2 string
	Load1      string
	PSICPU     string
	FsyncP50   string
	FsyncP99   string
	Magnetar   string // "available" or "not available (reason)"
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// load1 and PSI cpu "some avg10" right now.
func loadNow() (string, string) {
	load := strings.Fields(readTrim("/proc/loadavg"))
	l := "?"
	if len(load) > 0 {
		l = load[0]
	}
	psi := "?"
	for _, f := range strings.Fields(readTrim("/proc/pressure/cpu")) {
		if v, ok := strings.CutPrefix(f, "avg10="); ok {
			psi = v + "%"
			break
		}
	}
	return l, psi
}

func probeEnv(repo string) Env {
	e := Env{Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Kernel: readTrim("/proc/sys/kernel/osrelease"),
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), GoMaxProcs: runtime.GOMAXPROCS(0)}
	for _, line := range strings.Split(readTrim("/proc/cpuinfo"), "\n") {
		if v, ok := strings.CutPrefix(line, "model name"); ok {
			e.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
			break
		}
	}
	for _, line := range strings.Split(readTrim("/proc/meminfo"), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			e.MemTotal = fmt.Sprintf("%.1f GiB", float64(parseKB(v))/(1<<30))
		}
	}
	if out, err := exec.Command("git", "-C", repo, "describe", "--always", "--dirty").Output(); err == nil {
		e.GitSHA = strings.TrimSpace(string(out))
	}
	e.Load1, e.PSICPU = loadNow()
	return e
}

// fsyncProbe times n 4 KiB overwrites + fdatasync of a preallocated file in dir (§5.1.5).
func fsyncProbe(dir string, n int) (p50, p99 time.Duration, err error) {
	f, err := os.CreateTemp(dir, "fsync-probe-*")
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	if _, err := f.Write(make([]byte, 4096*n)); err != nil {
		return 0, 0, err
	}
	if err := syscall.Fdatasync(int(f.Fd())); err != nil {
		return 0, 0, err
	}
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t := time.Now()
		if _, err := f.WriteAt(buf, int64(i)*4096); err != nil {
			return 0, 0, err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return 0, 0, err
		}
		lat = append(lat, time.Since(t))
	}
	slices.Sort(lat)
	return lat[n/2], lat[n*99/100], nil
}

// dropCaches syncs and drops the page cache; the note says whether it happened.
func dropCaches(enabled bool) string {
	if !enabled {
		return "page cache not dropped (-drop-caches=false)"
	}
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0o200); err != nil {
		return "page cache not dropped (" + err.Error() + ")"
	}
	return "page cache dropped before the read"
}

func absPath(base, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(base, p)
}

func itoa(n int) string { return strconv.Itoa(n) }

// scaleNoFile is the open-file limit the scaling workloads need: 10,000 producer
// connections are 10,000 descriptors in the load generator and as many in the server,
// and a franz-go client holds two connections.
const scaleNoFile = 131072

// raiseNoFile lifts RLIMIT_NOFILE (soft and, as root, hard) to want, for this process and
// the servers it starts, and says what it is now.
func raiseNoFile(want uint64) string {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return "unknown (" + err.Error() + ")"
	}
	if lim.Cur < want {
		next := syscall.Rlimit{Cur: want, Max: max(lim.Max, want)}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &next); err != nil {
			// Not root: as far as the hard limit goes.
			next = syscall.Rlimit{Cur: lim.Max, Max: lim.Max}
			_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &next)
		}
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return strconv.FormatUint(lim.Cur, 10)
}
