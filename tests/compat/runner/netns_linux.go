package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// innerEnv marks the re-executed process that runs inside the namespaces.
const innerEnv = "MAGNETAR_COMPAT_INNER"

// hostsFile is the /etc/hosts of the namespace: the client's CI names (localhost for
// standalone; broker-1 and broker-2 for the clustered suite, each on its own loopback
// address so both can listen on 6650 as in the client's docker-compose network).
const hostsFile = `127.0.0.1 localhost
::1 localhost ip6-localhost ip6-loopback
127.0.0.2 broker-1
127.0.0.3 broker-2
127.0.0.4 proxy
`

// inNamespaces re-executes this program with args in new network and mount namespaces and
// waits for it. /pulsar is created (empty) if absent, as the mount point the namespace binds
// stage onto.
func inNamespaces(args []string) error {
	if os.Geteuid() != 0 {
		return errors.New("the suites need root: they run in a private network namespace where the default ports (6650, 8080, ...) the client's tests dial are free")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("`ip` (iproute2) not found: it brings the namespace's loopback up; install it with apt-get install -y iproute2")
	}
	// The mount point stays (empty) afterwards: removing it while another run's namespace
	// has it mounted would detach that run's files.
	if _, err := os.Stat("/pulsar"); errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir("/pulsar", 0o755); err != nil {
			return fmt.Errorf("mount point /pulsar: %w", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), innerEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS,
		Pdeathsig:  syscall.SIGKILL,
	}
	return cmd.Run()
}

// setupNamespaces runs first inside the namespaces: private mounts, the staged client files
// on /pulsar, the hosts file, and the loopback interface up.
func setupNamespaces(stage string) error {
	if err := syscall.Mount("none", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := syscall.Mount(filepath.Join(stage, "pulsar"), "/pulsar", "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind /pulsar: %w", err)
	}
	hosts := filepath.Join(stage, "hosts")
	if err := os.WriteFile(hosts, []byte(hostsFile), 0o644); err != nil {
		return err
	}
	if err := syscall.Mount(hosts, "/etc/hosts", "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind /etc/hosts: %w", err)
	}
	if err := disableIPv6(); err != nil {
		return err
	}
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set lo up: %w: %s", err, out)
	}
	return nil
}

// disableIPv6 turns IPv6 off in the namespace, as in the client's CI container (Docker's
// default network has none): the client tests dial "localhost", and with ::1 up they reach
// the server from [::1]:port where pulsaradmin's TestPartitionState wants a publisher
// address containing 127.0.0.1. /proc/sys/net is the namespace's own; a kernel without IPv6
// has nothing to turn off.
func disableIPv6() error {
	for _, iface := range []string{"all", "default", "lo"} {
		p := "/proc/sys/net/ipv6/conf/" + iface + "/disable_ipv6"
		if err := os.WriteFile(p, []byte("1"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("disable IPv6 in the namespace (%s): %w", p, err)
		}
	}
	return nil
}
