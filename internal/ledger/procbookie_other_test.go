//go:build !linux

package ledger

import "os/exec"

func setParentDeathSignal(*exec.Cmd) {}
