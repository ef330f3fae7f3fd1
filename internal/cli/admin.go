package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/magnetar-io/magnetar/internal/auth"
)

// adminCmd is `magnetar admin <group> <verb>`: pulsar-admin's command groups, verbs and
// flags over the admin REST API (--admin-url), as a table for people or -o json.
func (a *app) adminCmd() *cobra.Command {
	ac := &adminCLI{app: a}
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Administer clusters, tenants, namespaces, topics (pulsar-admin style)",
		Long: "Talks to the admin REST API of a broker (--admin-url). Verbs and flags follow\n" +
			"pulsar-admin; output is a table for people or JSON with -o json.",
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&ac.url, "admin-url", "http://localhost:8080", "admin REST URL of a broker (pulsar-admin --admin-url; env "+adminURLEnv+")")
	ac.urlFlag = pf.Lookup("admin-url")
	pf.StringVarP(&ac.output, "output", "o", "table", "output format: table or json")
	pf.DurationVar(&ac.timeout, "request-timeout", 30*time.Second, "timeout of each REST request")
	ac.sec.bind(pf)
	cmd.AddCommand(ac.clustersCmd(), ac.tenantsCmd(), ac.namespacesCmd(), ac.topicsCmd(), ac.brokersCmd(), ac.bookiesCmd(), ac.schemasCmd())
	ac.addNamespaceSchemaVerbs(cmd)
	ac.addTopicPolicyVerbs(cmd)                                            // admin_topic_policies.go
	ac.addClusterRecordVerbs(cmd)                                          // admin_cluster_records.go
	ac.addClusterVerbs(cmd)                                                // admin_cluster.go
	cmd.AddCommand(ac.functionsCmd())                                      // functions.go
	cmd.AddCommand(ac.connectorCmd(sourcesCLI), ac.connectorCmd(sinksCLI)) // admin_connectors.go
	cmd.AddCommand(ac.transactionsCmd())                                   // admin_transactions.go
	cmd.AddCommand(ac.packagesCmd())                                       // admin_packages.go
	return cmd
}

// adminURLEnv names the environment variable that sets --admin-url when the flag is not given.
const adminURLEnv = "MAGNETAR_ADMIN_URL"

type adminCLI struct {
	app     *app
	urlFlag *pflag.Flag
	url     string
	output  string
	timeout time.Duration
	sec     clientSecurity // --auth-plugin, --auth-params, TLS flags (clientconf.go)

	httpc *http.Client // built on first use from sec
	authn *auth.ClientAuth
}

// client returns the REST client with its TLS and credentials (flags, then --config).
func (ac *adminCLI) client() (*http.Client, *auth.ClientAuth, error) {
	if ac.httpc == nil {
		cc, err := ac.app.clientConfig()
		if err != nil {
			return nil, nil, err
		}
		ac.sec.load(cc)
		if ac.httpc, ac.authn, err = ac.sec.httpClient(); err != nil {
			return nil, nil, err
		}
	}
	return ac.httpc, ac.authn, nil
}

// baseURL is --admin-url, else MAGNETAR_ADMIN_URL, else webServiceUrl of --config (a
// client.conf, as pulsar-admin reads) or its environment overrides.
func (ac *adminCLI) baseURL() (string, error) {
	if ac.urlFlag.Changed {
		return ac.url, nil
	}
	for _, kv := range ac.app.env.Environ {
		if v, ok := strings.CutPrefix(kv, adminURLEnv+"="); ok && v != "" {
			return v, nil
		}
	}
	c, err := ac.app.clientConfig()
	if err != nil {
		return "", err
	}
	return c.WebServiceURL, nil
}

// errREST is a REST call answered with an error status.
var errREST = errors.New("admin request failed")

// call does one REST request. body (if not nil) is sent as JSON; the answer is returned raw.
func (ac *adminCLI) call(ctx context.Context, method, path string, body any) ([]byte, http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, ac.timeout)
	defer cancel()
	req, err := ac.newRequest(ctx, method, path, rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := ac.do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, err
	}
	return b, resp.Header, nil
}

// newRequest is a request to path on the admin URL.
func (ac *adminCLI) newRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	base, err := ac.baseURL()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(base, "/")+path, body)
	if err != nil {
		return nil, usageError(fmt.Errorf("--admin-url: %w", err))
	}
	return req, nil
}

// do sends req with the CLI's credentials and TLS settings and returns the open response
// of a success; a status of 300 or more is errREST with the server's reason.
func (ac *adminCLI) do(req *http.Request) (*http.Response, error) {
	hc, authn, err := ac.client()
	if err != nil {
		return nil, err
	}
	if err := authn.SetHTTP(req); err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var r struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(b, &r) != nil || r.Reason == "" {
		r.Reason = strings.TrimSpace(string(b))
	}
	return nil, fmt.Errorf("%w: %d %s: %s", errREST, resp.StatusCode, http.StatusText(resp.StatusCode), r.Reason)
}

// show prints a JSON answer: as indented JSON with -o json, else as a table (lists one item
// per line, objects as KEY VALUE rows with nested values as compact JSON).
func (ac *adminCLI) show(cmd *cobra.Command, raw []byte) error {
	out := cmd.OutOrStdout()
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		_, err := out.Write(raw) // plain text (health check)
		return err
	}
	if ac.output == "json" {
		b, _ := json.MarshalIndent(v, "", "  ")
		_, err := fmt.Fprintln(out, string(b))
		return err
	}
	switch x := v.(type) {
	case []any:
		for _, item := range x {
			fmt.Fprintln(out, scalar(item))
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\n", k, scalar(x[k]))
		}
		return tw.Flush()
	default:
		fmt.Fprintln(out, scalar(x))
	}
	return nil
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "-"
	case float64, bool:
		b, _ := json.Marshal(x)
		return string(b)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// verb builds a subcommand with exactly nargs positional arguments whose run returns the
// REST answer to show (nil: nothing to print).
func (ac *adminCLI) verb(use, short string, nargs int, run func(ctx context.Context, args []string) ([]byte, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(nargs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ac.output != "table" && ac.output != "json" {
				return usageError(fmt.Errorf("--output must be table or json, got %q", ac.output))
			}
			b, err := run(cmd.Context(), args)
			if err != nil {
				return err
			}
			return ac.show(cmd, b)
		},
	}
}

// get, put, post and del are call without the headers.
func (ac *adminCLI) get(ctx context.Context, path string) ([]byte, error) {
	b, _, err := ac.call(ctx, http.MethodGet, path, nil)
	if err == nil && len(b) == 0 {
		b = []byte("null") // an unset policy: Pulsar answers 204, pulsar-admin prints null
	}
	return b, err
}

func (ac *adminCLI) send(ctx context.Context, method, path string, body any) ([]byte, error) {
	b, _, err := ac.call(ctx, method, path, body)
	return b, err
}

// nsPath checks a "tenant/namespace" argument and returns it path-escaped.
func nsPath(ns string) (string, error) {
	t, n, ok := strings.Cut(ns, "/")
	if !ok || t == "" || n == "" || strings.Contains(n, "/") {
		return "", usageError(fmt.Errorf("namespace must be tenant/namespace, got %q", ns))
	}
	return url.PathEscape(t) + "/" + url.PathEscape(n), nil
}

// topicPath expands a topic as pulsar-admin does ("t" is persistent://public/default/t,
// "tenant/ns/t" is persistent://tenant/ns/t) and returns "domain/tenant/ns/local".
func topicPath(topic string) (string, error) {
	domain, rest, ok := strings.Cut(topic, "://")
	if !ok {
		domain, rest = "persistent", topic
		if !strings.Contains(topic, "/") {
			rest = "public/default/" + topic
		}
	}
	parts := strings.Split(rest, "/")
	if (domain != "persistent" && domain != "non-persistent") || len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", usageError(fmt.Errorf("invalid topic name %q: want [persistent|non-persistent://]tenant/namespace/topic", topic))
	}
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return domain + "/" + strings.Join(parts, "/"), nil
}

func (ac *adminCLI) clustersCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "clusters", Short: "Operations about clusters"}
	cmd.AddCommand(
		ac.verb("list", "List clusters", 0, func(ctx context.Context, _ []string) ([]byte, error) {
			return ac.get(ctx, "/admin/v2/clusters")
		}),
		ac.verb("get <cluster>", "Get a cluster's configuration", 1, func(ctx context.Context, args []string) ([]byte, error) {
			return ac.get(ctx, "/admin/v2/clusters/"+url.PathEscape(args[0]))
		}),
	)
	return cmd
}

func (ac *adminCLI) tenantsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "tenants", Short: "Operations about tenants"}
	var roles, clusters []string
	info := func() any {
		return map[string][]string{"adminRoles": nonNil(roles), "allowedClusters": nonNil(clusters)}
	}
	create := ac.verb("create <tenant>", "Create a tenant", 1, func(ctx context.Context, args []string) ([]byte, error) {
		return ac.send(ctx, http.MethodPut, "/admin/v2/tenants/"+url.PathEscape(args[0]), info())
	})
	update := ac.verb("update <tenant>", "Update a tenant's admin roles and allowed clusters", 1, func(ctx context.Context, args []string) ([]byte, error) {
		return ac.send(ctx, http.MethodPost, "/admin/v2/tenants/"+url.PathEscape(args[0]), info())
	})
	for _, c := range []*cobra.Command{create, update} {
		c.Flags().StringSliceVarP(&roles, "admin-roles", "r", nil, "comma-separated admin roles")
		c.Flags().StringSliceVarP(&clusters, "allowed-clusters", "c", nil, "comma-separated allowed clusters")
	}
	var force bool
	del := ac.verb("delete <tenant>", "Delete a tenant (with its namespaces: -f, when the broker allows it)", 1, func(ctx context.Context, args []string) ([]byte, error) {
		p := "/admin/v2/tenants/" + url.PathEscape(args[0])
		if force {
			p += "?force=true"
		}
		return ac.send(ctx, http.MethodDelete, p, nil)
	})
	del.Flags().BoolVarP(&force, "force", "f", false, "delete its namespaces and their topics first (forceDeleteTenantAllowed)")
	cmd.AddCommand(
		ac.verb("list", "List tenants", 0, func(ctx context.Context, _ []string) ([]byte, error) {
			return ac.get(ctx, "/admin/v2/tenants")
		}),
		ac.verb("get <tenant>", "Get a tenant's admin roles and allowed clusters", 1, func(ctx context.Context, args []string) ([]byte, error) {
			return ac.get(ctx, "/admin/v2/tenants/"+url.PathEscape(args[0]))
		}),
		create, update, del,
	)
	return cmd
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (ac *adminCLI) brokersCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "brokers", Short: "Operations about brokers"}
	cmd.AddCommand(
		ac.verb("list <cluster>", "List the active brokers of a cluster", 1, func(ctx context.Context, args []string) ([]byte, error) {
			return ac.get(ctx, "/admin/v2/brokers/"+url.PathEscape(args[0]))
		}),
		ac.verb("leader-broker", "Get the leader broker", 0, func(ctx context.Context, _ []string) ([]byte, error) {
			return ac.get(ctx, "/admin/v2/brokers/leaderBroker")
		}),
		ac.verb("healthcheck", "Run a health check against the broker", 0, func(ctx context.Context, _ []string) ([]byte, error) {
			b, err := ac.get(ctx, "/admin/v2/brokers/health")
			if err == nil && !bytes.HasSuffix(b, []byte("\n")) {
				b = append(b, '\n')
			}
			return b, err
		}),
		ac.verb("list-dynamic-config", "List the configuration keys that can change at run time", 0, func(ctx context.Context, _ []string) ([]byte, error) {
			return ac.get(ctx, "/admin/v2/brokers/configuration")
		}),
		ac.verb("get-all-dynamic-config", "Get the values of the dynamic configuration", 0, func(ctx context.Context, _ []string) ([]byte, error) {
			return ac.get(ctx, "/admin/v2/brokers/configuration/values")
		}),
		ac.verb("get-runtime-config", "Get the runtime configuration", 0, func(ctx context.Context, _ []string) ([]byte, error) {
			return ac.get(ctx, "/admin/v2/brokers/configuration/runtime")
		}),
	)
	cmd.AddCommand(ac.dynamicConfigVerbs()...)
	return cmd
}

func (ac *adminCLI) bookiesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bookies", Short: "Operations about bookies"}
	cmd.AddCommand(
		ac.verb("list-bookies", "List the registered bookies", 0, func(ctx context.Context, _ []string) ([]byte, error) {
			return ac.get(ctx, "/admin/v2/bookies/all")
		}),
		ac.verb("racks-placement", "Show the bookies' rack placement", 0, func(ctx context.Context, _ []string) ([]byte, error) {
			return ac.get(ctx, "/admin/v2/bookies/racks-info")
		}),
		ac.verb("list", "List bookies with their state (writable, readonly, gone) and rack", 0, func(ctx context.Context, _ []string) ([]byte, error) {
			return ac.get(ctx, "/admin/v2/bookies/state")
		}),
		ac.verb("under-replicated", "List ledgers with fragments on lost bookies (the auditor's backlog)", 0, func(ctx context.Context, _ []string) ([]byte, error) {
			return ac.get(ctx, "/admin/v2/bookies/under-replicated")
		}),
	)
	return cmd
}
