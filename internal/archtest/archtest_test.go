package archtest

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// goFile is one parsed file: its package directory relative to the module root, whether it
// is a test file, and the module-internal packages it imports (relative paths).
type goFile struct {
	path    string // relative to the module root, for messages
	dir     string
	test    bool
	imports []string
	// external are the imports from outside the module, as written.
	external []string
}

// moduleRoot finds go.mod above the working directory and reads the module path.
func moduleRoot(t *testing.T) (root, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		f, err := os.Open(filepath.Join(dir, "go.mod"))
		if err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
					return dir, strings.TrimSpace(m)
				}
			}
			t.Fatalf("%s/go.mod has no module line", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// parseModule reads the imports of every .go file of the module, whatever its build tags,
// skipping nested modules (bench/), testdata and hidden directories as the go tool does.
func parseModule(t *testing.T) []goFile {
	t.Helper()
	root, module := moduleRoot(t)
	var files []goFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if p != root {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // its own module
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		af, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("parse %s: %w", p, err)
		}
		rel, _ := filepath.Rel(root, p)
		gf := goFile{path: filepath.ToSlash(rel), dir: filepath.ToSlash(filepath.Dir(rel)), test: strings.HasSuffix(name, "_test.go")}
		for _, is := range af.Imports {
			ip, _ := strconv.Unquote(is.Path.Value)
			if r, ok := strings.CutPrefix(ip, module+"/"); ok {
				gf.imports = append(gf.imports, r)
			} else {
				gf.external = append(gf.external, ip)
			}
		}
		files = append(files, gf)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Go files found")
	}
	return files
}

// within tells whether p is dir or below it, by path segments.
func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// partOf is the rule for a package directory: the longest matching path.
func partOf(dir string) *part {
	var best *part
	for i := range parts {
		if within(dir, parts[i].path) && (best == nil || len(parts[i].path) > len(best.path)) {
			best = &parts[i]
		}
	}
	return best
}

func listed(list []string, p string) bool {
	for _, x := range list {
		if within(p, x) {
			return true
		}
	}
	return false
}

// violation checks one import of a file; "" means allowed.
func violation(f goFile, src, dst *part, target string) string {
	if dst.testOnly && !f.test && !src.testOnly && src.layer != layerTestSuite {
		return fmt.Sprintf("%s is a test helper: only _test.go files and tests/ may import it", dst.path)
	}
	if f.test {
		return "" // tests may assemble whatever stack they test
	}
	if within(src.path, dst.path) || within(dst.path, src.path) {
		return "" // one part and its subparts
	}
	if len(dst.onlyFrom) > 0 && !listed(dst.onlyFrom, src.path) && src.layer != layerTestSuite {
		return fmt.Sprintf("only %s may import %s", strings.Join(dst.onlyFrom, ", "), dst.path)
	}
	if listed(src.deny, target) {
		return fmt.Sprintf("%s must not import %s (front ends go through internal/topics)", src.path, target)
	}
	if dst.layer >= src.layer && !listed(src.allow, dst.path) {
		return fmt.Sprintf("%s (layer %d) must not import %s (layer %d): imports go down the layers", src.path, src.layer, dst.path, dst.layer)
	}
	return ""
}

// TestLayering fails on every import that breaks the rules of rules.go.
func TestLayering(t *testing.T) {
	known := map[[2]string]bool{}
	for _, kv := range knownViolations {
		known[[2]string{kv.from, kv.to}] = false
	}
	var errs []string
	uncovered := map[string]bool{}
	for _, f := range parseModule(t) {
		src := partOf(f.dir)
		if src == nil {
			uncovered[f.dir] = true
			continue
		}
		for _, target := range f.imports {
			dst := partOf(target)
			if dst == nil {
				uncovered[target] = true
				continue
			}
			why := violation(f, src, dst, target)
			if why == "" {
				continue
			}
			key := [2]string{src.path, dst.path}
			if _, ok := known[key]; ok {
				known[key] = true
				continue
			}
			errs = append(errs, fmt.Sprintf("%s imports %s: %s", f.path, target, why))
		}
	}
	for dir := range uncovered {
		errs = append(errs, fmt.Sprintf("package %s has no rule: add a line for it to parts in internal/archtest/rules.go and to docs/ARCHITECTURE.md §3", dir))
	}
	for kv, seen := range known {
		if !seen {
			errs = append(errs, fmt.Sprintf("known violation %s -> %s no longer occurs: delete its line from knownViolations", kv[0], kv[1]))
		}
	}
	sort.Strings(errs)
	for _, e := range errs {
		t.Error(e)
	}
}

// TestRules checks the table itself: one line per path, and every path an exception names
// has a line.
func TestRules(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range parts {
		if seen[p.path] {
			t.Errorf("two lines for %s", p.path)
		}
		seen[p.path] = true
	}
	for _, p := range parts {
		for _, list := range [][]string{p.onlyFrom, p.allow} {
			for _, x := range list {
				if !seen[x] {
					t.Errorf("%s names %s, which has no line", p.path, x)
				}
			}
		}
		for _, x := range p.deny {
			if partOf(x) == nil {
				t.Errorf("%s denies %s, which no line covers", p.path, x)
			}
		}
	}
	for _, kv := range knownViolations {
		if !seen[kv.from] || !seen[kv.to] {
			t.Errorf("known violation %s -> %s names a path without a line", kv.from, kv.to)
		}
	}
}

// TestViolationsAreCaught makes sure the checker itself refuses what the rules forbid.
func TestViolationsAreCaught(t *testing.T) {
	cases := []struct {
		from, to string
		test     bool
		want     bool // a violation
	}{
		{"internal/managedledger", "internal/broker", false, true},       // upward
		{"internal/broker", "internal/kafka", false, true},               // sideways
		{"internal/kafka", "internal/managedledger", false, true},        // around the topic service
		{"internal/topics", "internal/bookie", false, true},              // the bookie server is a role
		{"internal/ledger", "internal/ledger/memledger", false, true},    // test helper in product code
		{"internal/broker", "internal/ledger/memledger", true, false},    // ... in a test
		{"internal/broker", "internal/managedledger", true, false},       // tests assemble stacks
		{"internal/topics", "internal/managedledger", false, false},      // downward
		{"internal/standalone", "internal/brokerd", false, false},        // allowed sideways
		{"internal/standalone", "internal/bookie/storage", false, false}, // onlyFrom
		{"internal/metadata/etcdstore", "internal/metadata", false, false},
	}
	for _, c := range cases {
		f := goFile{path: c.from + "/x.go", dir: c.from, test: c.test}
		got := violation(f, partOf(c.from), partOf(c.to), c.to) != ""
		if got != c.want {
			t.Errorf("%s -> %s (test %v): violation %v, want %v", c.from, c.to, c.test, got, c.want)
		}
	}
}
