package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// FuzzConfigFile parses a config file of the fuzzer's bytes and loads it into every role's
// configuration. Parsing and loading must not panic; every entry has a non-empty trimmed key
// without '=' or ':' and growing line numbers; a file that loads leaves a config whose
// Validate returns (an error is fine: bad values are reported, not crashed on).
func FuzzConfigFile(f *testing.F) {
	f.Add([]byte("# comment\nmaxMessageSize=1048576\nclusterName: c1\n\n! also a comment\n"))
	f.Add([]byte("journalDirectories=/a,/b\ndbStorage_writeCacheMaxSizeMb=64\n"))
	f.Add([]byte("brokerShutdownTimeoutMs=-1\nunknownKey=1\n=novalue\n"))
	f.Add([]byte("a\\\nb=c\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		path := filepath.Join(t.TempDir(), "magnetar.conf")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		entries, err := ReadFile(path)
		if err == nil {
			line := 0
			for _, e := range entries {
				if e.Key == "" || strings.ContainsAny(e.Key, "=:") || e.Key != strings.TrimSpace(e.Key) || e.Line <= line {
					t.Fatalf("bad entry %+v after line %d", e, line)
				}
				line = e.Line
			}
		}
		broker, bookie, proxy, meta := DefaultBrokerRoleConfig(), DefaultBookieConfig(), DefaultProxyConfig(), DefaultMetadataConfig()
		for _, c := range []struct {
			cfg      any
			validate func() error
		}{{&broker, broker.Validate}, {&bookie, bookie.Validate}, {&proxy, proxy.Validate}, {&meta, meta.Validate}} {
			b, err := Bind(pflag.NewFlagSet("fuzz", pflag.ContinueOnError), c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if Load(path, nil, b) == nil {
				_ = c.validate()
			}
		}
	})
}
