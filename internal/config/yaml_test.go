package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func writeYAML(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "functions_worker.yml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestYAMLFunctionsWorkerFile loads a file in the shape of Pulsar's functions_worker.yml
// (testdata/functions_worker.yml: its keys, value types and nesting) into the
// functions-worker role: Pulsar's names land on the worker's fields, lists become list keys,
// the properties map's entries are keys of their own, null and empty values keep the
// defaults, and the Java-only keys (runtime factory configs among them) are reported by name
// instead of failing the load.
func TestYAMLFunctionsWorkerFile(t *testing.T) {
	cfg := DefaultFunctionsWorkerRoleConfig()
	b, err := Bind(pflag.NewFlagSet("t", pflag.ContinueOnError), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Apply("testdata/functions_worker.yml", nil, b)
	if err != nil {
		t.Fatal(err)
	}
	f := cfg.Functions
	for _, c := range []struct {
		key       string
		got, want any
	}{
		{"workerId", f.WorkerID, "yml-worker"},
		{"workerHostname", f.WorkerHostname, "worker.example"},
		{"workerPort", cfg.WorkerPort, 6750},
		{"workerPortTls", cfg.WorkerPortTLS, 6751},
		{"numFunctionPackageReplicas", f.NumFunctionPackageReplicas, 2},
		{"downloadDirectory", f.DownloadDirectory, "download/pulsar_functions"},
		{"pulsarServiceUrl", f.PulsarServiceURL, "pulsar://localhost:6650"},
		{"pulsarWebServiceUrl", f.PulsarWebServiceURL, "http://localhost:8080"},
		{"pulsarFunctionsCluster", cfg.ClusterName, "standalone"},
		{"failureCheckFreqMs", f.FailureCheckFreqMs, int64(20000)},
		{"rescheduleTimeoutMs", f.RescheduleTimeoutMs, int64(45000)},
		{"instanceLivenessCheckFreqMs", f.InstanceLivenessCheckFreqMs, int64(15000)},
		{"superUserRoles", cfg.Authz.SuperUserRoles, []string{"admin", "ops"}},
		{"proxyRoles", cfg.Authn.ProxyRoles, []string{"proxy"}},
		{"authenticationProviders (null)", cfg.Authn.Providers, []string(nil)},
		{"properties.tokenPublicAlg", cfg.Authn.Token.PublicAlg, "RS512"},
		{"tlsCertRefreshCheckDurationSec", cfg.TLS.CertRefreshCheckDurationSec, 300},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.key, c.got, c.want)
		}
	}
	if b.Source("superUserRoles") != FromFile || b.Source("workerPort") != FromFile {
		t.Errorf("sources: superUserRoles %v, workerPort %v", b.Source("superUserRoles"), b.Source("workerPort"))
	}
	for _, k := range []string{"functionRuntimeFactoryClassName", "functionRuntimeFactoryConfigs.logDirectory",
		"functionRuntimeFactoryConfigs.javaInstanceJarLocation", "runtimeCustomizerConfig.tolerations.0.effect",
		"pulsarFunctionsNamespace", "schedulerClassName", "configurationMetadataStoreUrl", "zooKeeperSessionTimeoutMillis"} {
		if !slices.Contains(rep.NotApplicable, k) {
			t.Errorf("%s not reported as not applying: %v", k, rep.NotApplicable)
		}
	}
	if slices.Contains(rep.NotApplicable, "properties") || slices.Contains(rep.Unknown, "properties") {
		t.Errorf("properties reported as a key: %v %v", rep.NotApplicable, rep.Unknown)
	}
	cfg.MetadataStoreURL = "etcd://127.0.0.1:2379"
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Pulsar's shape of file does not validate: %v", err)
	}
	if cfg.ServesTLS() {
		t.Error("workerPortTls with tlsEnabled false and no certificate is served")
	}
}

// TestYAMLValues: the YAML reader's mapping onto entries, key by key.
func TestYAMLValues(t *testing.T) {
	got, err := ReadFile(writeYAML(t, `
a: 1
b: "two words "
c: ~
d: [x, " y ", ""]
e:
  f: 1
  g:
    h: deep
  l: [p, q]
i: [{j: 1}, 2]
k: {}
anchor: &base
  m: 1
merged:
  <<: *base
  n: 2
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{"a", "1", 2, ""}, {"b", "two words", 3, ""}, {"c", "", 4, ""}, {"d", "x,y", 5, ""},
		{"e.f", "1", 7, "e"}, {"e.g.h", "deep", 9, "e"}, {"e.l", "p,q", 10, "e"},
		{"i.0.j", "1", 11, "i"}, {"i.1", "2", 11, "i"}, {"k", "", 12, ""},
		{"anchor.m", "1", 14, "anchor"}, {"merged.m", "1", 14, "merged"}, {"merged.n", "2", 17, "merged"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
	for _, empty := range []string{"", "# only a comment\n", "---\n", "~\n"} {
		if got, err := ReadFile(writeYAML(t, empty)); err != nil || len(got) != 0 {
			t.Errorf("%q: %v %v", empty, got, err)
		}
	}
}

// TestYAMLErrors: bad YAML, and YAML that cannot mean a config, are errors naming the file
// and line; a mapping given to a bound key is one too, and a nested key is never taken for
// a typo of a bound key.
func TestYAMLErrors(t *testing.T) {
	for body, want := range map[string]string{
		"workerId: a\n  bad: indent\n":            "line 2",
		"workerId: [unclosed\n":                   "line 1",
		"- a\n- b\n":                              "line 1: want a mapping",
		"a: 1\n---\nb: 2\n":                       "more than one YAML document",
		"? [a, b]\n: 1\n":                         "line 1: a key must be a non-empty name",
		"superUserRoles: [\"a,b\"]\n":             "cannot contain ','",
		"a: &x\n  b: *x\n":                        "nested more than",
		"workerId: *nope\n":                       "unknown anchor",
		"workerPort: notanumber\n":                "line 1",
		"superUserRoles:\n  admin: true\n":        "superUserRoles takes a value",
		"tlsProtocols: [{v: TLSv1.3}]\n":          "tlsProtocols takes a value",
		"workerPortt: 1\n":                        "did you mean workerPort",
		"functionRuntimeFactoryConfigs: [1, {]\n": "line 1",
	} {
		cfg := DefaultFunctionsWorkerRoleConfig()
		b, err := Bind(pflag.NewFlagSet("t", pflag.ContinueOnError), &cfg)
		if err != nil {
			t.Fatal(err)
		}
		path := writeYAML(t, body)
		_, err = Apply(path, nil, b)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: %v (want an error naming %s and %q)", body, err, path, want)
		}
	}
	cfg := DefaultFunctionsWorkerRoleConfig()
	b, _ := Bind(pflag.NewFlagSet("t", pflag.ContinueOnError), &cfg)
	rep, err := Apply(writeYAML(t, "ours:\n  workerPortt: 1\n"), nil, b)
	if err != nil || !slices.Equal(rep.Unknown, []string{"ours.workerPortt"}) {
		t.Fatalf("nested unknown key: %v %+v", err, rep)
	}
}

// TestYAMLEnvironmentOverrides: the environment overrides a YAML file's value as it does a
// .conf file's.
func TestYAMLEnvironmentOverrides(t *testing.T) {
	cfg := DefaultFunctionsWorkerRoleConfig()
	b, _ := Bind(pflag.NewFlagSet("t", pflag.ContinueOnError), &cfg)
	if _, err := Apply(writeYAML(t, "workerId: file\nnumFunctionPackageReplicas: 2\n"), []string{"PULSAR_PREFIX_workerId=env"}, b); err != nil {
		t.Fatal(err)
	}
	if cfg.Functions.WorkerID != "env" || cfg.Functions.NumFunctionPackageReplicas != 2 {
		t.Fatalf("workerId %q, replicas %d", cfg.Functions.WorkerID, cfg.Functions.NumFunctionPackageReplicas)
	}
}

// FuzzYAMLConfigFile parses a YAML config file of the fuzzer's bytes and loads it into the
// functions-worker role. Nothing panics or runs away (anchors, aliases, deep nesting); every
// entry has a non-empty trimmed key without '=' or ':' and a line; a nested entry's key
// starts with its parent; a file that loads leaves a config whose Validate returns.
func FuzzYAMLConfigFile(f *testing.F) {
	if body, err := os.ReadFile("testdata/functions_worker.yml"); err == nil {
		f.Add(body)
	}
	f.Add([]byte("a: &x [1, 2]\nb: *x\nc: {<<: {d: 1}}\n"))
	f.Add([]byte("superUserRoles: [a, b]\nproperties: {tokenPublicAlg: RS256}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("x: !!binary aGk=\ny: 0x10\nz: .inf\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		path := filepath.Join(t.TempDir(), "functions_worker.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		entries, err := ReadFile(path)
		if err == nil {
			for _, e := range entries {
				if e.Key == "" || strings.ContainsAny(e.Key, "=:") || e.Key != strings.TrimSpace(e.Key) || e.Line < 1 ||
					(e.Parent != "" && !strings.HasPrefix(e.Key, e.Parent+".")) {
					t.Fatalf("bad entry %+v", e)
				}
			}
		} else if !strings.Contains(err.Error(), path) {
			t.Fatalf("error without the file name: %v", err)
		}
		cfg := DefaultFunctionsWorkerRoleConfig()
		b, err := Bind(pflag.NewFlagSet("fuzz", pflag.ContinueOnError), &cfg)
		if err != nil {
			t.Fatal(err)
		}
		if Load(path, nil, b) == nil {
			_ = cfg.Validate()
		}
	})
}

// TestYAMLAliasBomb: anchors that double at every level (entries or only empty mappings)
// are refused quickly instead of expanding.
func TestYAMLAliasBomb(t *testing.T) {
	for _, leaf := range []string{"{a: [x]}", "{}"} {
		var sb strings.Builder
		sb.WriteString("l0: &l0 " + leaf + "\n")
		for i := 1; i <= 30; i++ {
			fmt.Fprintf(&sb, "l%d: &l%d {<<: [*l%d, *l%d], v%d: [*l%d, *l%d]}\n", i, i, i-1, i-1, i, i-1, i-1)
		}
		if _, err := ReadFile(writeYAML(t, sb.String())); err == nil || !strings.Contains(err.Error(), "more than") {
			t.Errorf("%s: %v", leaf, err)
		}
	}
}
