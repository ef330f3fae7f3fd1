package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// KafkaVersion is the Apache Kafka release the helpers fetch.
const KafkaVersion = "4.1.1"

// CacheDir is ~/.cache/magnetar-<what>, created if needed.
func CacheDir(what string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(base, "magnetar-"+what)
	return dir, os.MkdirAll(dir, 0o755)
}

// MavenClasspath fetches the artifacts (groupId:artifactId:version, or
// groupId:artifactId:version:classifier) and all their runtime dependencies from Maven
// Central into ~/.cache/magnetar-maven/<name>/lib and returns the jars. The first call
// runs mvn (minutes); later calls, from any test process, find the jars in place. name
// must change when the artifact list changes.
func MavenClasspath(tb testing.TB, name string, artifacts ...string) []string {
	tb.Helper()
	jars, err := FetchMaven(name, artifacts...)
	if err != nil {
		tb.Fatalf("testenv: fetching %s from Maven Central: %v", name, err)
	}
	return jars
}

// FetchMaven is MavenClasspath for callers without a testing.TB (the benchmark harness).
func FetchMaven(name string, artifacts ...string) ([]string, error) {
	root, err := CacheDir("maven")
	if err != nil {
		return nil, err
	}
	return fetchMavenInto(filepath.Join(root, name), name, artifacts...)
}

// fetchMavenInto is FetchMaven with the jars in dir/lib.
func fetchMavenInto(dir, name string, artifacts ...string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// One fetch at a time per name, across test processes (go test runs packages in
	// parallel).
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	want := strings.Join(artifacts, "\n") + "\n"
	lib := filepath.Join(dir, "lib")
	if done, err := os.ReadFile(filepath.Join(dir, "done")); err == nil && string(done) == want {
		return listJars(lib)
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return nil, fmt.Errorf("mvn is not installed (Debian: apt-get install -y maven): %w", err)
	}
	pom, err := pomFor(name, artifacts)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "pom.xml"), pom, 0o644); err != nil {
		return nil, err
	}
	settings := filepath.Join(dir, "settings.xml")
	if err := os.WriteFile(settings, []byte(centralOnly), 0o644); err != nil {
		return nil, err
	}
	_ = os.RemoveAll(lib)
	cmd := exec.Command("mvn", "-B", "-q", "-s", settings, "-f", filepath.Join(dir, "pom.xml"),
		"dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+lib)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, tail(out.String(), 4000))
	}
	if err := os.WriteFile(filepath.Join(dir, "done"), []byte(want), 0o644); err != nil {
		return nil, err
	}
	return listJars(lib)
}

// centralOnly serves every repository a dependency's POM names from Maven Central, the
// one registry these machines reach (pulsar-broker's POMs name Confluent's).
const centralOnly = `<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
  <mirrors>
    <mirror><id>central-only</id><mirrorOf>*</mirrorOf><url>https://repo.maven.apache.org/maven2</url></mirror>
  </mirrors>
</settings>
`

func listJars(lib string) ([]string, error) {
	jars, err := filepath.Glob(filepath.Join(lib, "*.jar"))
	if err != nil {
		return nil, err
	}
	if len(jars) == 0 {
		return nil, fmt.Errorf("no jars in %s", lib)
	}
	slices.Sort(jars)
	return jars, nil
}

func pomFor(name string, artifacts []string) ([]byte, error) {
	var deps, boms strings.Builder
	for _, a := range artifacts {
		bom := strings.HasPrefix(a, BOMPrefix)
		p := strings.Split(strings.TrimPrefix(a, BOMPrefix), ":")
		if len(p) < 3 || len(p) > 4 || bom && len(p) != 3 {
			return nil, fmt.Errorf("artifact %q: want groupId:artifactId:version[:classifier] or %sgroupId:artifactId:version", a, BOMPrefix)
		}
		if bom {
			fmt.Fprintf(&boms, "      <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version><type>pom</type><scope>import</scope></dependency>\n", p[0], p[1], p[2])
			continue
		}
		fmt.Fprintf(&deps, "    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version>", p[0], p[1], p[2])
		if len(p) == 4 {
			fmt.Fprintf(&deps, "<classifier>%s</classifier>", p[3])
		}
		deps.WriteString("</dependency>\n")
	}
	managed := ""
	if boms.Len() > 0 {
		managed = "  <dependencyManagement>\n    <dependencies>\n" + boms.String() + "    </dependencies>\n  </dependencyManagement>\n"
	}
	return fmt.Appendf(nil, `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.magnetar.testenv</groupId>
  <artifactId>%s</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
%s  <dependencies>
%s  </dependencies>
</project>
`, sanitize(name), managed, deps.String()), nil
}

// BOMPrefix marks an artifact of FetchMaven whose dependencyManagement is imported (a
// BOM, or a project's parent POM) rather than fetched: the versions its project was built
// and tested with then win over Maven's nearest-first choice among transitive ones.
const BOMPrefix = "bom:"

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '-'
	}, s)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
