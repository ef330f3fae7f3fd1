package resources

import (
	"strings"
	"testing"
)

func TestParsePackageName(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"function://public/default/fn@v1", "function://public/default/fn@v1", true},
		{"SINK://public/default/s", "sink://public/default/s@latest", true},
		{"source://t/ns/name@1.0.0-rc1", "source://t/ns/name@1.0.0-rc1", true},
		{"jar://public/default/fn@v1", "", false},
		{"function:/public/default/fn", "", false},
		{"function://public/fn@v1", "", false},
		{"function://public/default/fn/extra@v1", "", false},
		{"function://public/default/fn@v1@v2", "", false},
		{"function://public/default/@v1", "", false},
		{"function://pub lic/default/fn@v1", "", false},
	} {
		n, err := ParsePackageName(tc.in)
		if (err == nil) != tc.ok || (tc.ok && n.String() != tc.want) {
			t.Errorf("%q: %v %v, want %q ok=%v", tc.in, n, err, tc.want, tc.ok)
		}
	}
}

// FuzzParsePackageName: never a panic, and a name that parses prints to one that parses
// to itself (the record key and the URL agree).
func FuzzParsePackageName(f *testing.F) {
	for _, s := range []string{"function://public/default/fn@v1", "sink://a/b/c", "x://", "function://a/b/c@", "source://a/b/c@@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParsePackageName(s)
		if err != nil {
			return
		}
		again, err := ParsePackageName(n.String())
		if err != nil || again != n {
			t.Fatalf("%q -> %q -> %v, %v", s, n.String(), again, err)
		}
		if strings.ContainsAny(n.Name+n.Version, "/@") {
			t.Fatalf("%q: segment with / or @: %+v", s, n)
		}
	})
}
