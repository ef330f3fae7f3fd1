package admin

import (
	"net/http/httptest"
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
