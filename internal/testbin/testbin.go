package testbin

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// Package is the import path of the magnetar command.
const Package = "github.com/magnetar-io/magnetar/cmd/magnetar"

// Build compiles the magnetar command into dir/magnetar and returns its path. It uses the
// project's one build tag (pebblegozstd) and adds -race when the caller runs under -race.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "magnetar")
	cmd := exec.Command("go", BuildArgs(bin)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testbin: go %s: %w\n%s", strings.Join(BuildArgs(bin), " "), err, out)
	}
	return bin, nil
}

// BuildArgs are the arguments of `go` that Build runs.
func BuildArgs(out string) []string {
	args := []string{"build", "-tags", "pebblegozstd"}
	if Race {
		args = append(args, "-race")
	}
	return append(args, "-o", out, Package)
}
