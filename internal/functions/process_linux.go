package functions

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// setChildAttrs makes an instance die with its worker: a worker that is SIGKILLed must not
// leave instances running that nobody supervises (the leader starts them elsewhere).
func setChildAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// processRSS reads a process's resident set from /proc.
func processRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
