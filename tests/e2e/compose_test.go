package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"gopkg.in/yaml.v3"
)

// composeFile is the part of docker-compose.yml this test reads (anchors and merge keys are
// resolved by the YAML decoder).
type composeFile struct {
	Services map[string]struct {
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
	} `yaml:"services"`
}

// TestComposeTopologyServesThroughTheProxy runs docker-compose.yml's services without a
// container engine (there is none here): each service's command and environment, as real
// processes on loopback. Inside compose every service has its own host name and the default
// ports; here "service:port" and "0.0.0.0:port" become 127.0.0.1 with a free port per
// (service, port), "/data" a directory per service, and the brokers and the proxy get their
// ports through the same PULSAR_PREFIX_ variables. Everything else is the file's own
// configuration, so a key the roles do not accept, a wrong URL or a missing piece fails here.
func TestComposeTopologyServesThroughTheProxy(t *testing.T) {
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(raw, &cf); err != nil {
		t.Fatal(err)
	}
	roles := map[string]int{}
	for _, s := range cf.Services {
		if len(s.Command) > 0 {
			roles[s.Command[0]]++
		}
	}
	if roles["metadata"] != 3 || roles["bookie"] != 3 || roles["broker"] != 2 || roles["proxy"] != 1 {
		t.Fatalf("docker-compose.yml roles = %v, want 3 metadata, 3 bookies, 2 brokers, 1 proxy", roles)
	}

	dir := t.TempDir()
	ports := map[string]string{} // "service:port" -> a free 127.0.0.1 port
	port := func(svc, p string) string {
		k := svc + ":" + p
		if ports[k] == "" {
			_, ports[k], _ = strings.Cut(freeAddr(t), ":")
		}
		return ports[k]
	}
	portOf := port
	hostPort := regexp.MustCompile(`([A-Za-z0-9.]+):(\d+)`)
	local := func(svc, key, v string) string {
		v = hostPort.ReplaceAllStringFunc(v, func(m string) string {
			sub := hostPort.FindStringSubmatch(m)
			host := sub[1]
			if host == "0.0.0.0" {
				host = svc
			}
			if _, ok := cf.Services[host]; !ok {
				return m
			}
			return "127.0.0.1:" + port(host, sub[2])
		})
		if _, ok := cf.Services[v]; (ok || v == "0.0.0.0") && strings.HasSuffix(key, "Address") { // a bare host name
			return "127.0.0.1"
		}
		return strings.ReplaceAll(v, "/data", filepath.Join(dir, svc))
	}
	env := func(svc string) []string {
		s := cf.Services[svc]
		var out []string
		for k, v := range s.Environment {
			out = append(out, k+"="+local(svc, k, v))
		}
		switch s.Command[0] {
		case "broker":
			out = append(out, "PULSAR_PREFIX_brokerServicePort="+port(svc, "6650"), "PULSAR_PREFIX_webServicePort="+port(svc, "8080"),
				"PULSAR_PREFIX_metadataStoreSessionTimeoutMillis=5000")
		case "proxy":
			out = append(out, "PULSAR_PREFIX_servicePort="+port(svc, "6650"), "PULSAR_PREFIX_webServicePort="+port(svc, "8080"))
		}
		slices.Sort(out)
		return out
	}

	var procs []*composeProc
	t.Cleanup(func() {
		for _, p := range slices.Backward(procs) {
			p.stop()
		}
		if t.Failed() {
			for _, p := range procs {
				t.Logf("%s (%s):\n%s", p.name, strings.Join(p.env, " "), p.tail())
			}
		}
	})
	// Compose starts a service once those it depends on have started and restarts one that
	// exits (restart: unless-stopped); a broker that finds no metadata quorum yet exits. The
	// test waits for each tier's readiness instead, through the endpoints the Helm chart's
	// probes use.
	ready := func(role, port, path string) {
		for name, s := range cf.Services {
			if s.Command[0] != role {
				continue
			}
			url := "http://127.0.0.1:" + portOf(name, port) + path
			waitFor(t, name+" ready at "+path, func() (bool, error) {
				for _, p := range procs {
					select {
					case <-p.exited:
						t.Fatalf("%s exited:\n%s", p.name, p.tail())
					default:
					}
				}
				resp, err := http.Get(url)
				if err != nil {
					return false, err
				}
				resp.Body.Close()
				return resp.StatusCode == http.StatusOK, fmt.Errorf("%s", resp.Status)
			})
		}
	}
	start := func(role string) {
		var names []string
		for name, s := range cf.Services {
			if s.Command[0] == role {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			p := &composeProc{name: name, env: env(name)}
			p.cmd = exec.Command(binary, cf.Services[name].Command...)
			p.cmd.Env = append(os.Environ(), p.env...)
			p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
			if err := p.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			p.exited = make(chan struct{})
			go func() { _ = p.cmd.Wait(); close(p.exited) }()
			procs = append(procs, p)
		}
	}
	start("metadata")
	ready("metadata", "2379", "/readyz")
	start("bookie")
	ready("bookie", "8000", "/api/v1/bookie/is_ready")
	start("broker")
	ready("broker", "8080", "/status.html")
	start("proxy")

	proxyURL := "pulsar://127.0.0.1:" + port("proxy", "6650")
	proxyHTTP := "http://127.0.0.1:" + port("proxy", "8080")
	waitFor(t, "the cluster answering through the proxy", func() (bool, error) {
		resp, err := http.Get(proxyHTTP + "/admin/v2/clusters")
		if err != nil {
			return false, nil
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"magnetar"`), nil
	})

	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: proxyURL, OperationTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, c, "the compose proxy", "persistent://public/default/compose", pulsar.SubscriptionPositionEarliest, "compose", 20)
}

// composeProc is one service of the compose file run as a process.
type composeProc struct {
	name   string
	env    []string
	cmd    *exec.Cmd
	out    lockedBuffer
	exited chan struct{}
}

func (p *composeProc) tail() string {
	lines := strings.Split(p.out.String(), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

func (p *composeProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// lockedBuffer is a bytes.Buffer safe for a process's writes and the test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
