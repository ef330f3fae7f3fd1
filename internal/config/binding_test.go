package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

type testConfig struct {
	MaxMessageSize int           `key:"maxMessageSize" help:"max size"`
	Journal        []string      `key:"journalDirectories" help:"journals"`
	Wait           time.Duration `key:"journalMaxGroupWait" help:"wait"`
	Sync           bool          `key:"journalSyncData" help:"fsync"`
	Cache          int64         `key:"dbStorage_writeCacheMaxSizeMb" help:"cache"`
	Nested         struct {
		Addr string `key:"advertisedAddress" help:"addr"`
	}
}

func defaults() testConfig {
	c := testConfig{MaxMessageSize: 5, Journal: []string{"j"}, Wait: time.Millisecond, Sync: true, Cache: 64}
	c.Nested.Addr = "localhost"
	return c
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.conf")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func bind(t *testing.T, args ...string) (*testConfig, *Binding) {
	t.Helper()
	c := defaults()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	b, err := Bind(fs, &c)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &c, b
}

func TestPrecedenceFlagEnvFileDefault(t *testing.T) {
	file := writeFile(t, "# comment\nmaxMessageSize=10\njournalSyncData = false\njournalMaxGroupWait: 2ms\ndbStorage_writeCacheMaxSizeMb=1\n")
	env := []string{"MAGNETAR_MAX_MESSAGE_SIZE=20", "journalMaxGroupWait=3ms", "UNRELATED=1"}
	c, b := bind(t, "--max-message-size=30", "--journal-directories", "a, b")
	if err := Load(file, env, b); err != nil {
		t.Fatal(err)
	}
	if c.MaxMessageSize != 30 || b.Source("maxMessageSize") != FromFlag {
		t.Errorf("flag must beat env and file: %d from %s", c.MaxMessageSize, b.Source("maxMessageSize"))
	}
	if c.Wait != 3*time.Millisecond || b.Source("journalMaxGroupWait") != FromEnv {
		t.Errorf("env (exact key) must beat file: %v", c.Wait)
	}
	if c.Sync || b.Source("journalSyncData") != FromFile {
		t.Errorf("file must beat default: %v", c.Sync)
	}
	if c.Cache != 1 {
		t.Errorf("underscore key from file: %d", c.Cache)
	}
	if c.Nested.Addr != "localhost" || b.Source("advertisedAddress") != FromDefault {
		t.Errorf("default kept: %q", c.Nested.Addr)
	}
	if strings.Join(c.Journal, "|") != "a|b" {
		t.Errorf("list flag: %q", c.Journal)
	}
	if got := len(b.Changed()); got != 5 {
		t.Errorf("Changed() = %v", b.Changed())
	}
}

func TestTypoOfABoundKeyIsAnError(t *testing.T) {
	file := writeFile(t, "maxMessageSize=10\nmaxMesageSize=11\n")
	_, b := bind(t)
	err := Load(file, nil, b)
	if err == nil || !strings.Contains(err.Error(), `line 2: unknown key "maxMesageSize" (did you mean maxMessageSize?)`) {
		t.Fatalf("want unknown-key error naming line 2, got %v", err)
	}
}

func TestBadValuesNameTheirSource(t *testing.T) {
	_, b := bind(t)
	if err := Load(writeFile(t, "journalSyncData=maybe\n"), nil, b); err == nil || !strings.Contains(err.Error(), "line 1: journalSyncData") {
		t.Errorf("file: %v", err)
	}
	_, b = bind(t)
	if err := Load("", []string{"MAGNETAR_JOURNAL_MAX_GROUP_WAIT=soon"}, b); err == nil || !strings.Contains(err.Error(), "MAGNETAR_JOURNAL_MAX_GROUP_WAIT") {
		t.Errorf("env: %v", err)
	}
	c := defaults()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	if _, err := Bind(fs, &c); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--max-message-size=big"}); err == nil {
		t.Error("flag: bad int accepted")
	}
	if rep, err := Apply(writeFile(t, "novalue\n"), nil, b); err != nil || len(rep.Unknown) != 1 {
		t.Errorf("a key without value is a key (Java properties), reported unknown: %v %+v", err, rep)
	}
	if err := Load(filepath.Join(t.TempDir(), "missing.conf"), nil, b); err == nil {
		t.Error("missing file accepted")
	}
}

func TestNames(t *testing.T) {
	for key, want := range map[string]string{
		"maxMessageSize":                "max-message-size",
		"dbStorage_writeCacheMaxSizeMb": "db-storage-write-cache-max-size-mb",
		"metadataStoreURL":              "metadata-store-url",
		"journalSyncData":               "journal-sync-data",
	} {
		if got := FlagName(key); got != want {
			t.Errorf("FlagName(%q) = %q, want %q", key, got, want)
		}
	}
	if got := EnvName("maxMessageSize"); got != "MAGNETAR_MAX_MESSAGE_SIZE" {
		t.Errorf("EnvName = %q", got)
	}
}

func TestValidateNamesFieldAndBound(t *testing.T) {
	c := DefaultLogConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Level = "loud"
	err := c.Validate()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Key != "logLevel" || !strings.Contains(err.Error(), "must be one of") {
		t.Fatalf("got %v", err)
	}
	if err := Between("journalMaxGroupWait", 5, 0, 3); err == nil || !strings.Contains(err.Error(), "journalMaxGroupWait=5: must be between 0 and 3") {
		t.Fatalf("got %v", err)
	}
	if err := CheckHostPort("listen", "nope"); err == nil {
		t.Fatal("bad host:port accepted")
	}
	s := DefaultStandaloneConfig()
	s.DataDir = ""
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "dataDir") {
		t.Fatalf("got %v", err)
	}
}

func TestBoolFlagWithoutValue(t *testing.T) {
	c, b := bind(t, "--journal-sync-data")
	c.Sync = false // the default here is true: start from false to see the flag act
	if err := Load("", nil, b); err != nil {
		t.Fatal(err)
	}
	if !c.Sync {
		t.Fatal("--journal-sync-data alone did not set true")
	}
	c, b = bind(t, "--journal-sync-data=false")
	if err := Load("", nil, b); err != nil || c.Sync {
		t.Fatalf("--journal-sync-data=false: %v %v", c.Sync, err)
	}
}

// A Pulsar file as it is: keys of Pulsar and BookKeeper that nothing binds are accepted and
// reported once; blank values keep defaults; keys unknown to both are reported apart.
func TestPulsarFileKeysThatDoNotApply(t *testing.T) {
	file := writeFile(t, "zookeeperServers=\n"+
		"configurationStoreServers=zk:2181\n"+
		"managedLedgerCacheEvictionWatermark=0.9\n"+
		"loadBalancerPlacementStrategy=weightedRandomSelection\n"+
		"bookkeeper_opportunisticStriping=true\n"+
		"maxMessageSize=\n"+
		"journalSyncData=false\n"+
		"someoneElsesPluginKey=1\n")
	c, b := bind(t)
	rep, err := Apply(file, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bookkeeper_opportunisticStriping", "configurationStoreServers", "loadBalancerPlacementStrategy", "managedLedgerCacheEvictionWatermark", "zookeeperServers"}
	if strings.Join(rep.NotApplicable, ",") != strings.Join(want, ",") {
		t.Errorf("NotApplicable = %v, want %v", rep.NotApplicable, want)
	}
	if strings.Join(rep.Unknown, ",") != "someoneElsesPluginKey" {
		t.Errorf("Unknown = %v", rep.Unknown)
	}
	if c.MaxMessageSize != 5 || b.Source("maxMessageSize") != FromDefault {
		t.Errorf("blank value must keep the default: %d from %s", c.MaxMessageSize, b.Source("maxMessageSize"))
	}
	if c.Sync {
		t.Error("bound key of the same file not applied")
	}
}

// PULSAR_PREFIX_key and the exact key set bound keys; the MAGNETAR_ name wins over both, and
// PULSAR_PREFIX_ over the exact key. They reach unbound keys too (for the report and gate).
func TestPulsarPrefixEnvironment(t *testing.T) {
	c, b := bind(t)
	rep, err := Apply("", []string{"PULSAR_PREFIX_maxMessageSize=7", "maxMessageSize=8", "PULSAR_PREFIX_journalSyncData=false",
		"PULSAR_PREFIX_defaultNumberOfNamespaceBundles=1", "zookeeperServers=zk:2181", "PATH=/bin"}, b)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxMessageSize != 7 || c.Sync {
		t.Errorf("PULSAR_PREFIX_ not applied: %d %v", c.MaxMessageSize, c.Sync)
	}
	if strings.Join(rep.NotApplicable, ",") != "defaultNumberOfNamespaceBundles,zookeeperServers" || len(rep.Unknown) != 0 {
		t.Errorf("report %+v", rep)
	}
	c, b = bind(t)
	if err := Load("", []string{"PULSAR_PREFIX_maxMessageSize=7", "MAGNETAR_MAX_MESSAGE_SIZE=9"}, b); err != nil || c.MaxMessageSize != 9 {
		t.Errorf("MAGNETAR_ must win: %d %v", c.MaxMessageSize, err)
	}
	if err := Load("", []string{"PULSAR_PREFIX_maxMessageSize=many"}, b); err == nil || !strings.Contains(err.Error(), "environment PULSAR_PREFIX_maxMessageSize") {
		t.Errorf("bad PULSAR_PREFIX_ value: %v", err)
	}
}

// Turning on a protection this build lacks is refused, wherever it comes from; turning it
// off through the environment (as a docker image would) starts.
func TestSecurityKeysTurnedOnAreRefused(t *testing.T) {
	file := writeFile(t, "tlsEnabled=false\nauthenticationEnabled=true\nbrokerServicePortTls=6651\n")
	_, b := bind(t)
	err := Load(file, nil, b)
	if err == nil || !strings.Contains(err.Error(), "line 2: authenticationEnabled=true: not available") ||
		!strings.Contains(err.Error(), "line 3: brokerServicePortTls=6651: not available") {
		t.Fatalf("got %v", err)
	}
	_, b = bind(t)
	rep, err := Apply(file, []string{"authenticationEnabled=false", "PULSAR_PREFIX_brokerServicePortTls="}, b)
	if err != nil {
		t.Fatalf("turned off by the environment: %v", err)
	}
	if len(rep.NotApplicable) != 3 {
		t.Errorf("report %+v", rep)
	}
	_, b = bind(t)
	if err := Load("", []string{"PULSAR_PREFIX_authorizationEnabled=true"}, b); err == nil || !strings.Contains(err.Error(), "environment PULSAR_PREFIX_authorizationEnabled") {
		t.Errorf("env turning authorization on: %v", err)
	}
}

// A Validate error names the file and line (or variable, or flag) its value came from.
func TestLocateNamesWhereABadValueCameFrom(t *testing.T) {
	s := DefaultStandaloneConfig()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	b, err := Bind(fs, &s)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--gc-percent=5000"}); err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, "# standalone\nclusterName=standalone\nmaxMessageSize=10\n")
	if err := Load(file, []string{"PULSAR_PREFIX_managedLedgerDefaultAckQuorum=3"}, b); err != nil {
		t.Fatal(err)
	}
	msg := Locate(s.Validate(), b).Error()
	for _, want := range []string{
		"config file " + file + " line 3: maxMessageSize=10: must be between 1024 and 1073741824",
		"environment PULSAR_PREFIX_managedLedgerDefaultAckQuorum: managedLedgerDefaultAckQuorum=3",
		"flag --gc-percent: standaloneGCPercent=5000: must be between 0 and 1000",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in\n%s", want, msg)
		}
	}
}

// A blank environment override takes back what the file set (Pulsar's docker images turn
// a listener off with brokerServicePortTls=).
func TestBlankEnvironmentValueRestoresTheDefault(t *testing.T) {
	file := writeFile(t, "maxMessageSize=10\njournalSyncData=false\n")
	c, b := bind(t)
	if err := Load(file, []string{"maxMessageSize=", "PULSAR_PREFIX_journalSyncData= "}, b); err != nil {
		t.Fatal(err)
	}
	if c.MaxMessageSize != 5 || !c.Sync || b.Source("maxMessageSize") != FromDefault {
		t.Errorf("blank overrides: maxMessageSize=%d (%s) journalSyncData=%v", c.MaxMessageSize, b.Source("maxMessageSize"), c.Sync)
	}
}
