package kafka

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDocsListEveryAPI keeps docs/kafka.md's API table and apis in step.
func TestDocsListEveryAPI(t *testing.T) {
	doc, err := os.ReadFile("../../docs/kafka.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## APIs and versions")
	section, _, _ = strings.Cut(section, "\n## ")
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| ") && strings.Contains(line, ") | ") && !strings.HasPrefix(line, "| API (key)") {
			rows++
		}
	}
	for key, a := range apis {
		row := fmt.Sprintf("| %s (%d) | %d-%d |", kmsg.NameForKey(key), key, a.min, a.max)
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/kafka.md lacks the row %q", row)
		}
	}
	if rows != len(apis) {
		t.Errorf("docs/kafka.md lists %d APIs, the code serves %d", rows, len(apis))
	}
}
