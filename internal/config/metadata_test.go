package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMetadataConfigDefaultsValid(t *testing.T) {
	c := DefaultMetadataConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := c.EffectiveInitialCluster(); got != "magnetar=http://127.0.0.1:2380" {
		t.Fatalf("initial cluster = %q", got)
	}
}

func TestMetadataConfigErrorsNameKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*MetadataConfig)
		key  string
	}{
		{"no name", func(c *MetadataConfig) { c.Name = "" }, "metadataName"},
		{"bad listen", func(c *MetadataConfig) { c.ListenClientURLs = []string{"127.0.0.1:2379"} }, "metadataListenClient"},
		{"no port", func(c *MetadataConfig) { c.ListenPeerURLs = []string{"http://127.0.0.1"} }, "metadataListenPeer"},
		{"wildcard advertise", func(c *MetadataConfig) { c.ListenClientURLs = []string{"http://0.0.0.0:2379"} }, "metadataAdvertiseClient"},
		{"state", func(c *MetadataConfig) { c.InitialClusterState = "old" }, "metadataInitialClusterState"},
		{"cluster without me", func(c *MetadataConfig) { c.InitialCluster = "a=http://h:1,b=http://h:2" }, "metadataInitialCluster"},
		{"cluster syntax", func(c *MetadataConfig) { c.InitialCluster = "default" }, "metadataInitialCluster"},
		{"election", func(c *MetadataConfig) { c.ElectionTimeout = 200 * time.Millisecond }, "metadataElectionTimeout"},
		{"retention", func(c *MetadataConfig) { c.AutoCompactionRetention = "soon" }, "metadataAutoCompactionRetention"},
		{"revision retention", func(c *MetadataConfig) { c.AutoCompactionMode = "revision" }, "metadataAutoCompactionRetention"},
		{"request", func(c *MetadataConfig) { c.MaxRequestBytes = 1 }, "metadataMaxRequestBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultMetadataConfig()
			tc.mod(&c)
			err := c.Validate()
			var fe *FieldError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("Validate = %v, want an error naming %s", err, tc.key)
			}
		})
	}
}

func TestParseInitialCluster(t *testing.T) {
	m, err := ParseInitialCluster("a=http://10.0.0.1:2380, b=http://10.0.0.2:2380,a=https://h:1")
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || len(m["a"]) != 2 || m["b"][0] != "http://10.0.0.2:2380" {
		t.Fatalf("parsed %v", m)
	}
	for _, bad := range []string{"", "a", "=http://h:1", "a=h:1", "a=http://h:1,b=http://h:1", "a=http://h:1/x"} {
		if _, err := ParseInitialCluster(bad); err == nil {
			t.Errorf("ParseInitialCluster(%q) accepted", bad)
		}
	}
}

func FuzzParseInitialCluster(f *testing.F) {
	for _, s := range []string{"a=http://127.0.0.1:2380", "a=http://h:1,b=https://[::1]:2", "x=", "=,=", "a=http://h:99999", "a=http://u@h:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseInitialCluster(s)
		if err != nil {
			return
		}
		for name, urls := range m {
			if name == "" || len(urls) == 0 {
				t.Fatalf("accepted %q with empty member %q %v", s, name, urls)
			}
			for _, u := range urls {
				if CheckMemberURL(u) != nil {
					t.Fatalf("accepted bad URL %q", u)
				}
			}
		}
	})
}
