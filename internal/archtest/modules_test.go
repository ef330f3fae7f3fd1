package archtest

import "testing"

// TestForbiddenModules fails on a non-test file importing a module of forbiddenModules.
func TestForbiddenModules(t *testing.T) {
	for _, f := range parseModule(t) {
		if f.test {
			continue
		}
		for _, ip := range f.external {
			for _, m := range forbiddenModules {
				if within(ip, m.path) {
					t.Errorf("%s imports %s: %s", f.path, ip, m.why)
				}
			}
		}
	}
}

// TestForbiddenModulesAreCaught makes sure the check matches a module's packages and only them.
func TestForbiddenModulesAreCaught(t *testing.T) {
	for _, c := range []struct {
		ip   string
		want bool
	}{
		{"github.com/apache/iceberg-go", true},
		{"github.com/apache/iceberg-go/table", true},
		{"github.com/apache/iceberg-go/catalog/rest", true},
		{"github.com/apache/iceberg-gox", false},
		{"github.com/apache/arrow-go/v18/parquet", false},
	} {
		got := false
		for _, m := range forbiddenModules {
			got = got || within(c.ip, m.path)
		}
		if got != c.want {
			t.Errorf("%s: forbidden %v, want %v", c.ip, got, c.want)
		}
	}
}
