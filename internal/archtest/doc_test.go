package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docRow is one row of docs/ARCHITECTURE.md §3's rules table.
type docRow struct {
	line  int
	paths []string // the backquoted parts of the first column
	layer int
	extra string // the third column
}

var backquoted = regexp.MustCompile("`([^`]+)`")

// readDocTable parses the table that follows "The rules table" in docs/ARCHITECTURE.md.
func readDocTable(t *testing.T) []docRow {
	t.Helper()
	root, _ := moduleRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "The rules table (`internal/archtest/rules.go`") {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatal(`docs/ARCHITECTURE.md: no line starting "The rules table (` + "`internal/archtest/rules.go`" + `"`)
	}
	var rows []docRow
	for i := start + 1; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		if len(cells) < 3 {
			t.Fatalf("docs/ARCHITECTURE.md line %d: want 3 columns: %s", i+1, l)
		}
		layer, err := strconv.Atoi(strings.TrimSpace(cells[1]))
		if err != nil {
			continue // the header and the separator
		}
		row := docRow{line: i + 1, layer: layer, extra: cells[2]}
		for _, m := range backquoted.FindAllStringSubmatch(cells[0], -1) {
			if strings.HasSuffix(m[1], "/") || strings.HasSuffix(m[1], "/...") {
				continue // a subdirectory the row describes, not a part of its own
			}
			row.paths = append(row.paths, m[1])
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		t.Fatal("docs/ARCHITECTURE.md: the rules table has no rows")
	}
	return rows
}

// short is how the table's extra column names a part: without "internal/".
func short(path string) string { return strings.TrimPrefix(path, "internal/") }

// TestArchitectureDocMatchesRules keeps docs/ARCHITECTURE.md §3 in step with parts: every
// part that is not test-only has a row with its layer, every row names a part of that layer,
// a test-only part is named (as a path or as its parent's subdirectory), and a part's allow,
// deny and onlyFrom edges are named in its row's third column.
func TestArchitectureDocMatchesRules(t *testing.T) {
	rows := readDocTable(t)
	byPath := map[string]docRow{}
	for _, r := range rows {
		for _, p := range r.paths {
			byPath[p] = r
		}
	}
	rules := map[string]part{}
	for _, p := range parts {
		rules[p.path] = p
	}
	for _, r := range rows {
		for _, p := range r.paths {
			rule, ok := rules[p]
			if !ok {
				t.Errorf("docs/ARCHITECTURE.md line %d: %s is not a line of parts in rules.go", r.line, p)
				continue
			}
			if rule.layer != r.layer {
				t.Errorf("docs/ARCHITECTURE.md line %d: %s at layer %d, rules.go says %d", r.line, p, r.layer, rule.layer)
			}
		}
	}
	for _, p := range parts {
		r, ok := byPath[p.path]
		if !ok && p.testOnly {
			sub := filepath.Base(p.path) + "/"
			if parent, found := parentRow(p.path, byPath); found && strings.Contains(parent.extra, sub) {
				continue
			}
			t.Errorf("rules.go: test-only part %s is not named in docs/ARCHITECTURE.md §3's table", p.path)
			continue
		}
		if !ok {
			t.Errorf("rules.go: part %s (layer %d) has no row in docs/ARCHITECTURE.md §3's table", p.path, p.layer)
			continue
		}
		edges := map[string][]string{"allow": p.allow, "deny": p.deny, "onlyFrom": p.onlyFrom}
		for kind, list := range edges {
			for _, e := range list {
				if !strings.Contains(r.extra, "`"+short(e)+"`") {
					t.Errorf("docs/ARCHITECTURE.md line %d: the row of %s does not name its %s edge `%s`", r.line, p.path, kind, short(e))
				}
			}
		}
	}
}

// parentRow finds the row of the nearest enclosing part of path.
func parentRow(path string, byPath map[string]docRow) (docRow, bool) {
	for p := filepath.Dir(path); p != "." && p != "/"; p = filepath.Dir(p) {
		if r, ok := byPath[p]; ok {
			return r, true
		}
	}
	return docRow{}, false
}
