package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `magnetar --config client.conf admin ...` and `client ...` find the broker from a Pulsar
// client.conf (webServiceUrl, brokerServiceUrl), as pulsar-admin and pulsar-client do, and
// say once which of its keys do not apply.
func TestToolsReadClientConf(t *testing.T) {
	bin, u := adminSetup(t)
	conf := filepath.Join(t.TempDir(), "client.conf")
	body := "webServiceUrl=" + u + "/\n" +
		"brokerServiceUrl=pulsar://" + shared.sa.BrokerAddr() + "/\n" +
		"authPlugin=\nauthParams=\ntlsAllowInsecureConnection=false\nuseKeyStoreTls=false\n"
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	runTool := func(args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--config", conf}, args...)...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, errb.String())
		}
		return out.String(), errb.String()
	}
	out, errOut := runTool("admin", "clusters", "list")
	if strings.TrimSpace(out) != "standalone" {
		t.Fatalf("admin through client.conf: %q", out)
	}
	if !strings.Contains(errOut, "do not apply here were ignored: useKeyStoreTls") {
		t.Errorf("warning: %q", errOut)
	}
	runTool("client", "produce", "persistent://public/default/clientconf", "-m", "hello")
	out, _ = runTool("admin", "topics", "stats", "persistent://public/default/clientconf")
	if !strings.Contains(out, "msgInCounter") || !strings.Contains(out, "1") {
		t.Errorf("produced message not counted: %s", out)
	}
}
