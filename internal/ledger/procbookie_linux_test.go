package ledger

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes a bookie process die with the test process, so a crashed test
// leaves no orphan behind.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
