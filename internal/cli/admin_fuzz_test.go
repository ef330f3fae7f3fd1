package cli

import (
	"strings"
	"testing"
)

// FuzzAdminArgs: the admin CLI's argument parsers accept or reject, never panic, and what
// topicPath accepts has exactly four path segments.
func FuzzAdminArgs(f *testing.F) {
	for _, s := range []string{"t", "a/b/c", "persistent://a/b/c", "non-persistent://a/b/c", "x://a/b/c", "a/b/c/d",
		"latest", "earliest", "1:2", "1:2:3", "1:x", "10M", "3d", "-1", "", "//", "a//c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := topicPath(s); err == nil && strings.Count(p, "/") != 3 {
			t.Fatalf("topicPath(%q) = %q", s, p)
		}
		_, _ = messageIDArg(s)
		_, _ = parseSizeMB(s)
		_, _ = parseRelTime(s)
		_, _ = parseMinutes(s)
		_, _ = nsPath(s)
	})
}
