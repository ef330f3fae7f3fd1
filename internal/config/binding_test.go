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

func TestUnknownKeyInFileIsAnError(t *testing.T) {
	file := writeFile(t, "maxMessageSize=10\nmaxMesageSize=11\n")
	_, b := bind(t)
	err := Load(file, nil, b)
	if err == nil || !strings.Contains(err.Error(), `line 2: unknown key "maxMesageSize"`) {
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
	if err := Load(writeFile(t, "novalue\n"), nil, b); err == nil {
		t.Error("line without = accepted")
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
