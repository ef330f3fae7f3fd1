package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// kind is how a suite's tests are prepared, listed and run: the Go client's test binaries,
// pytest modules, or a Maven module.
type kind interface {
	// prepare fetches and builds what the suite needs. It runs before the namespaces are
	// entered, where the registries can be reached.
	prepare(o options, s *suite) error
	// list names the suite's tests (inside the namespaces).
	list(o options, s *suite) ([]string, error)
	// run runs the tests against srv and reports each.
	run(ctx context.Context, o options, s *suite, names []string, logs string, srv server, progress func(result)) []result
}

// suite is one line of the results table.
type suite struct {
	Name string
	kind kind
	// Cluster: the suite runs against dev-cluster, else against a standalone started with
	// Conf and then set up by setup.
	Cluster bool
	Conf    string
	// Dir is the standalone's working directory (Pulsar's, for configs with relative paths).
	Dir   string
	setup func(ctx context.Context, s *standalone) error
}

// suites is every suite, in run order.
var suites = []*suite{
	{Name: "pulsar", kind: &goKind{Pkg: "pulsar"}, Conf: goCIConf, setup: goCIPermissions},
	{Name: "admin", kind: &goKind{Pkg: "pulsaradmin/pkg/admin"}, Conf: goCIConf, setup: goCIPermissions},
	// scripts/run-ci-clustered.sh: -tags clustered -run 'Test.*ClusteredTestSuite|TestTransactionDisabled' ./pulsar
	{Name: "clustered", kind: &goKind{Pkg: "pulsar", Tags: "clustered", Run: `^(Test.*ClusteredTestSuite|TestTransactionDisabled)$`}, Cluster: true},
	// Our own module over the official Python client (tests/compat/python).
	{Name: "python", kind: &pytestKind{ours: true}, Conf: goCIConf, setup: goCIPermissions},
	// The official Python client's own tests/ (apache/pulsar-client-python at -python-src),
	// against standalone started as its CI starts Pulsar.
	{Name: "python-official", kind: &pytestKind{}, Conf: "test-conf/standalone-ssl.conf", Dir: "/pulsar", setup: pythonCISetup},
	// The Java client, admin and pulsar-perf (tests/compat/java); example apps of
	// spring-boot-starter-pulsar and quarkus-messaging-pulsar (tests/compat/spring, quarkus).
	{Name: "java", kind: &mavenKind{Module: "java", Pre: [][]string{{"-f", "perf/pom.xml", "package"}}}, Conf: goCIConf, setup: goCIPermissions},
	{Name: "spring", kind: &mavenKind{Module: "spring"}, Conf: goCIConf, setup: goCIPermissions},
	{Name: "quarkus", kind: &mavenKind{Module: "quarkus"}, Conf: goCIConf, setup: goCIPermissions},
}

// goCIConf is where the Go client's CI has its standalone.conf (Dockerfile: COPY ...
// integration-tests/conf/standalone.conf /pulsar/conf/).
const goCIConf = "/pulsar/conf/standalone.conf"

func selected(o options) []*suite {
	var out []*suite
	for _, s := range suites {
		for _, name := range o.suites {
			if s.Name == strings.TrimSpace(name) {
				out = append(out, s)
			}
		}
	}
	return out
}

// goCIPermissions applies scripts/pulsar-test-service-start.sh's pulsar-admin commands.
func goCIPermissions(ctx context.Context, s *standalone) error {
	for _, c := range [][]string{
		{"tenants", "update", "public", "-r", "anonymous"},
		{"namespaces", "grant-permission", "public/default", "--actions", "produce,consume", "--role", "anonymous"},
		{"tenants", "create", "private"},
		{"namespaces", "create", "private/auth"},
		{"namespaces", "grant-permission", "private/auth", "--actions", "produce,consume", "--role", "token-principal"},
	} {
		if err := s.admin(ctx, c...); err != nil {
			return err
		}
	}
	return nil
}

// stageTree copies dir src into the stage's /pulsar at rel.
func stageTree(stageRoot, src, rel string) error {
	dst := filepath.Join(stageRoot, rel)
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := copyTree(src, dst); err != nil {
		return fmt.Errorf("stage %s: %w", rel, err)
	}
	return nil
}
