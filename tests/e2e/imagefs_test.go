//go:build imagecheck && linux

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/magnetar-io/magnetar/internal/testbin"
)

// TestImageFilesystem is what `docker run magnetar` would do, without a container engine
// (there is none on this machine; `make image-check`): the release build (CGO_ENABLED=0, as
// the Dockerfile's `make build`) is put alone into a root shaped like the distroless
// static:nonroot base (an /etc/passwd naming uid 65532, /tmp, a /data owned by 65532,
// nothing else: no shell, no libc, no CA bundle) and started chrooted into it as the
// Dockerfile's USER, in its WORKDIR, with its ENTRYPOINT and CMD read from the Dockerfile
// itself. It catches what the container would hit and a plain run would not: a dynamically
// linked binary, a file the binary expects on the host, a write outside /data, a start that
// needs root. Needs root (chroot); the test fails rather than skips without it.
func TestImageFilesystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("make image-check needs root: it chroots into the image-shaped root")
	}
	img, err := parseDockerfile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	uid, gid, err := img.ids()
	if err != nil {
		t.Fatal(err)
	}
	if uid == 0 {
		t.Fatalf("the Dockerfile's USER %q is root; the image must run as non-root", img.user)
	}

	root := t.TempDir()
	// The root itself must be searchable by the image's user once chrooted.
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, strings.TrimPrefix(img.entrypoint[0], "/"))
	build := exec.Command("go", "build", "-tags", "pebblegozstd", "-trimpath", "-o", bin, testbin.Package)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("release build: %v\n%s", err, out)
	}
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{"etc", 0o755}, {"tmp", 0o1777}, {"home/nonroot", 0o700}, {strings.TrimPrefix(img.workdir, "/"), 0o755}} {
		p := filepath.Join(root, d.path)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, d.mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"home/nonroot", strings.TrimPrefix(img.workdir, "/")} {
		if err := os.Chown(filepath.Join(root, p), uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", uid, gid)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", gid)
	if err := os.WriteFile(filepath.Join(root, "etc/passwd"), []byte(passwd), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/group"), []byte(group), 0o644); err != nil {
		t.Fatal(err)
	}

	brokerAddr, httpAddr := freeAddr(t), freeAddr(t)
	_, bport, _ := net.SplitHostPort(brokerAddr)
	_, hport, _ := net.SplitHostPort(httpAddr)
	args := append(append([]string(nil), img.entrypoint...), img.cmd...)
	cmd := exec.Command(bin, args[1:]...)
	cmd.Path, cmd.Args[0] = args[0], args[0] // resolved inside the chroot
	cmd.Dir = img.workdir
	// Only what the image and `docker run -e` give: distroless's PATH and HOME, no host env.
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/nonroot"}, imageEnv(bport, hport)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root,
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}}
	checkImageStandalone(t, cmd, brokerAddr, httpAddr)

	// Everything the standalone wrote is under the volume, and written as the image's user.
	var outside []string
	err = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) == uid && rel != "home/nonroot" && rel != strings.TrimPrefix(img.workdir, "/") &&
			!strings.HasPrefix(rel, strings.TrimPrefix(img.workdir, "/")+"/") && !strings.HasPrefix(rel, "tmp/") {
			outside = append(outside, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(outside) > 0 {
		t.Fatalf("the standalone wrote outside %s and /tmp: %v", img.workdir, outside)
	}
	entries, err := os.ReadDir(filepath.Join(root, img.workdir))
	if err != nil || len(entries) == 0 {
		t.Fatalf("nothing written under %s (%v): the data is not on the volume", img.workdir, err)
	}
}

// dockerImage is the final stage of the Dockerfile, as far as running it goes.
type dockerImage struct {
	entrypoint, cmd []string
	workdir, user   string
}

// parseDockerfile reads the last stage's ENTRYPOINT, CMD (exec form only: the shell form
// would need a shell the image does not have), WORKDIR and USER.
func parseDockerfile(path string) (dockerImage, error) {
	f, err := os.Open(path)
	if err != nil {
		return dockerImage{}, err
	}
	defer f.Close()
	var img dockerImage
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		word, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(word) {
		case "FROM":
			img = dockerImage{} // a new stage
		case "ENTRYPOINT", "CMD":
			var v []string
			if err := json.Unmarshal([]byte(rest), &v); err != nil || len(v) == 0 {
				return img, fmt.Errorf("%s %s: want the exec (JSON array) form: the image has no shell", word, rest)
			}
			if strings.ToUpper(word) == "ENTRYPOINT" {
				img.entrypoint = v
			} else {
				img.cmd = v
			}
		case "WORKDIR":
			img.workdir = rest
		case "USER":
			img.user = rest
		}
	}
	if err := sc.Err(); err != nil {
		return img, err
	}
	if len(img.entrypoint) == 0 || !strings.HasPrefix(img.entrypoint[0], "/") {
		return img, fmt.Errorf("the last stage's ENTRYPOINT %q is not an absolute path", img.entrypoint)
	}
	if img.workdir == "" || img.user == "" {
		return img, fmt.Errorf("the last stage sets no WORKDIR (%q) or USER (%q)", img.workdir, img.user)
	}
	return img, nil
}

// ids reads USER as uid[:gid] (distroless's nonroot is 65532:65532; names need the image's
// /etc/passwd, which a numeric USER does not).
func (img dockerImage) ids() (uid, gid int, err error) {
	u, g, ok := strings.Cut(img.user, ":")
	if uid, err = strconv.Atoi(u); err != nil {
		return 0, 0, fmt.Errorf("USER %q: want a numeric uid", img.user)
	}
	gid = uid
	if ok {
		if gid, err = strconv.Atoi(g); err != nil {
			return 0, 0, fmt.Errorf("USER %q: want a numeric gid", img.user)
		}
	}
	return uid, gid, nil
}
