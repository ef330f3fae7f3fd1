package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// schemasCmd is `magnetar admin schemas get|upload|delete|compatibility|version`, after
// pulsar-admin schemas. Upload, compatibility and version read a schema file in
// pulsar-admin's format: {"type": "AVRO", "schema": "<definition as a string>",
// "properties": {...}}.
func (ac *adminCLI) schemasCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "schemas", Short: "Operations about schemas"}
	var version int64
	var all, force bool
	var file string

	get := ac.verb("get <topic>", "Get the latest schema of a topic (--version N for one version, --all for every version)", 1,
		func(ctx context.Context, args []string) ([]byte, error) {
			base, err := schemaPath(args[0])
			if err != nil {
				return nil, err
			}
			switch {
			case all:
				return ac.get(ctx, base+"/schemas")
			case version >= 0:
				return ac.get(ctx, base+"/schema/"+strconv.FormatInt(version, 10))
			}
			return ac.get(ctx, base+"/schema")
		})
	get.Flags().Int64VarP(&version, "version", "v", -1, "the schema version to get")
	get.Flags().BoolVarP(&all, "all", "a", false, "get every version")

	del := ac.verb("delete <topic>", "Delete the schema of a topic (soft: versions stay readable; --force removes them)", 1,
		func(ctx context.Context, args []string) ([]byte, error) {
			base, err := schemaPath(args[0])
			if err != nil {
				return nil, err
			}
			return ac.send(ctx, http.MethodDelete, base+"/schema?force="+strconv.FormatBool(force), nil)
		})
	del.Flags().BoolVarP(&force, "force", "f", false, "remove every version instead of adding a deletion marker")

	withFile := func(use, short, suffix string) *cobra.Command {
		c := ac.verb(use+" <topic>", short, 1, func(ctx context.Context, args []string) ([]byte, error) {
			base, err := schemaPath(args[0])
			if err != nil {
				return nil, err
			}
			payload, err := readSchemaFile(file)
			if err != nil {
				return nil, err
			}
			return ac.send(ctx, http.MethodPost, base+suffix, payload)
		})
		c.Flags().StringVarP(&file, "filename", "f", "", "schema file: {\"type\":..., \"schema\":..., \"properties\":{...}} (required)")
		return c
	}
	cmd.AddCommand(get, del,
		withFile("upload", "Upload a schema (a new version if it is compatible)", "/schema"),
		withFile("compatibility", "Test whether a schema could be uploaded under the namespace's strategy", "/compatibility"),
		withFile("version", "Get the version of an uploaded schema", "/version"),
	)
	return cmd
}

// schemaPath is /admin/v2/schemas/<tenant>/<ns>/<topic>: no domain, as Pulsar's.
func schemaPath(topic string) (string, error) {
	tp, err := topicPath(topic)
	if err != nil {
		return "", err
	}
	_, rest, _ := strings.Cut(tp, "/")
	return "/admin/v2/schemas/" + rest, nil
}

// readSchemaFile loads pulsar-admin's schema file format, checking it is the expected
// shape so a wrong file is a usage error here rather than a 400 from the broker.
func readSchemaFile(name string) (any, error) {
	if name == "" {
		return nil, usageError(fmt.Errorf("--filename is required"))
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, usageError(fmt.Errorf("--filename: %w", err))
	}
	var p struct {
		Type       string            `json:"type"`
		Schema     string            `json:"schema"`
		Properties map[string]string `json:"properties"`
	}
	if err := json.Unmarshal(b, &p); err != nil || p.Type == "" {
		return nil, usageError(fmt.Errorf("--filename %s: want {\"type\":..., \"schema\":\"...\", \"properties\":{}}: %v", name, err))
	}
	if p.Properties == nil {
		p.Properties = map[string]string{}
	}
	return p, nil
}

// addNamespaceSchemaVerbs adds pulsar-admin's namespace schema-policy verbs to the
// namespaces group.
func (ac *adminCLI) addNamespaceSchemaVerbs(admin *cobra.Command) {
	var ns *cobra.Command
	for _, c := range admin.Commands() {
		if c.Name() == "namespaces" {
			ns = c
		}
	}
	if ns == nil {
		return
	}
	var strategy string
	set := ac.verb("set-schema-compatibility-strategy <tenant/namespace>", "Set the namespace's schema compatibility strategy", 1,
		func(ctx context.Context, args []string) ([]byte, error) {
			p, err := nsPath(args[0])
			if err != nil {
				return nil, err
			}
			if strategy == "" {
				return nil, usageError(fmt.Errorf("--compatibility is required"))
			}
			return ac.send(ctx, http.MethodPut, "/admin/v2/namespaces/"+p+"/schemaCompatibilityStrategy", strings.ToUpper(strategy))
		})
	set.Flags().StringVarP(&strategy, "compatibility", "c", "", "ALWAYS_COMPATIBLE, ALWAYS_INCOMPATIBLE, BACKWARD, FORWARD, FULL, BACKWARD_TRANSITIVE, FORWARD_TRANSITIVE, FULL_TRANSITIVE or UNDEFINED (required)")
	var enable, disable bool
	autoUpdate := ac.verb("set-is-allow-auto-update-schema <tenant/namespace>", "Let producers and consumers register new schema versions (--enable or --disable)", 1,
		func(ctx context.Context, args []string) ([]byte, error) {
			p, err := nsPath(args[0])
			if err != nil {
				return nil, err
			}
			if enable == disable {
				return nil, usageError(fmt.Errorf("give exactly one of --enable and --disable"))
			}
			return ac.send(ctx, http.MethodPost, "/admin/v2/namespaces/"+p+"/isAllowAutoUpdateSchema", enable)
		})
	autoUpdate.Flags().BoolVarP(&enable, "enable", "e", false, "allow")
	autoUpdate.Flags().BoolVarP(&disable, "disable", "d", false, "refuse")
	nsGet := func(use, short, suffix string) *cobra.Command {
		return ac.verb(use+" <tenant/namespace>", short, 1, func(ctx context.Context, args []string) ([]byte, error) {
			p, err := nsPath(args[0])
			if err != nil {
				return nil, err
			}
			return ac.get(ctx, "/admin/v2/namespaces/"+p+"/"+suffix)
		})
	}
	ns.AddCommand(set, autoUpdate,
		nsGet("get-schema-compatibility-strategy", "Get the namespace's schema compatibility strategy", "schemaCompatibilityStrategy"),
		nsGet("get-is-allow-auto-update-schema", "Tell whether producers and consumers may register new schema versions", "isAllowAutoUpdateSchema"),
	)
}
