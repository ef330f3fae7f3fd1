package admin

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// FuzzPartitionCountBody: any body either decodes to a count or is a 400, never a panic.
func FuzzPartitionCountBody(f *testing.F) {
	for _, s := range []string{"", "null", "5", "-1", `{"partitions":3}`, `{"partitions":3,"properties":{"a":"b"}}`,
		`{"partitions":"x"}`, "{not json", "[1,2]", "1e400", `"7"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("PUT", "/x", strings.NewReader(body))
		n, _, err := partitionCountBody(r)
		if err != nil && statusFor(err) != 400 {
			t.Fatalf("body %q: error %v maps to %d, want 400", body, err, statusFor(err))
		}
		_ = n
	})
}

// FuzzDecodeActions: a permission grant body is a list of known actions or a 400.
func FuzzDecodeActions(f *testing.F) {
	for _, s := range []string{"", "null", `["produce"]`, `["produce","consume","functions"]`, `["fly"]`, `[1]`,
		`{"produce":true}`, `["produce",`, `[]`, `"produce"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("POST", "/x", strings.NewReader(body))
		actions, err := decodeActions(r)
		if err != nil {
			if statusFor(err) != 400 {
				t.Fatalf("body %q: error %v maps to %d, want 400", body, err, statusFor(err))
			}
			return
		}
		if actions == nil {
			t.Fatalf("body %q: nil actions without error", body)
		}
		for _, a := range actions {
			if !slices.Contains(authActions, a) {
				t.Fatalf("body %q: accepted unknown action %q", body, a)
			}
		}
	})
}
