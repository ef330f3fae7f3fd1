package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/magnetar-io/magnetar/internal/functions"
)

// connectorKindCLI is what differs between `admin sources` and `admin sinks`.
type connectorKindCLI struct {
	use, noun, base, jsonField, builtins, available, reload string
}

var (
	sourcesCLI = connectorKindCLI{"sources", "source", "/admin/v3/sources", "sourceConfig", "builtinsources", "available-sources", "reloadBuiltInSources"}
	sinksCLI   = connectorKindCLI{"sinks", "sink", "/admin/v3/sinks", "sinkConfig", "builtinsinks", "available-sinks", "reloadBuiltInSinks"}
)

// connFlags are pulsar-admin's sources/sinks create and update flags. Only flags given on
// the command line are applied over the config file, so update changes just those.
type connFlags struct {
	tenant, namespace, name, connType, archive, className, configFile, configJSON string
	guarantees, secrets, runtimeFlags, logTopic                                   string
	cpu                                                                           float64
	ram, disk                                                                     int64
	parallelism                                                                   int
	// sources
	destTopic, serdeClass, schemaType, batchBuilder, producerConfig string
	// sinks
	inputs, topicsPattern, subsName, subsPosition, serdeInputs, schemaInputs, inputSpecs, deadLetter string
	maxRedeliver                                                                                     int
	timeoutMs, nackDelayMs                                                                           int64
	retainOrdering, retainKeyOrdering, autoAck, cleanupSub                                           bool
}

func (f *connFlags) bindName(fs *pflag.FlagSet, noun string) {
	fs.StringVar(&f.tenant, "tenant", "public", "the "+noun+"'s tenant")
	fs.StringVar(&f.namespace, "namespace", "default", "the "+noun+"'s namespace")
	fs.StringVar(&f.name, "name", "", "the "+noun+"'s name")
}

func (f *connFlags) bind(fs *pflag.FlagSet, k connectorKindCLI) {
	f.bindName(fs, k.noun)
	fs.StringVarP(&f.connType, k.noun+"-type", "t", "", "the built-in connector (same as --archive builtin://<type>)")
	fs.StringVarP(&f.archive, "archive", "a", "", "builtin://<connector> (connector packages do not run on Magnetar)")
	fs.StringVar(&f.className, "classname", "", "the connector class (informational for built-ins)")
	fs.StringVar(&f.configFile, k.noun+"-config-file", "", "a YAML or JSON file with the "+map[string]string{"source": "SourceConfig", "sink": "SinkConfig"}[k.noun])
	fs.StringVar(&f.configJSON, k.noun+"-config", "", "the connector's configs as JSON")
	fs.StringVar(&f.guarantees, "processing-guarantees", "", "ATLEAST_ONCE, ATMOST_ONCE or EFFECTIVELY_ONCE")
	fs.IntVar(&f.parallelism, "parallelism", 0, "number of instances")
	fs.StringVar(&f.secrets, "secrets", "", "secrets as JSON")
	fs.StringVar(&f.runtimeFlags, "runtime-flags", "", "runtime flags (accepted, unused by built-ins)")
	fs.StringVar(&f.logTopic, "log-topic", "", "the topic the instances' logs go to")
	fs.Float64Var(&f.cpu, "cpu", 0, "CPU cores per instance")
	fs.Int64Var(&f.ram, "ram", 0, "RAM bytes per instance")
	fs.Int64Var(&f.disk, "disk", 0, "disk bytes per instance")
	if k.noun == "source" {
		fs.StringVar(&f.destTopic, "destination-topic-name", "", "the topic the source publishes to")
		fs.StringVar(&f.serdeClass, "deserialization-classname", "", "SerDe class (informational)")
		fs.StringVar(&f.schemaType, "schema-type", "", "the destination topic's schema type")
		fs.StringVar(&f.batchBuilder, "batch-builder", "", "DEFAULT or KEY_BASED")
		fs.StringVar(&f.producerConfig, "producer-config", "", "ProducerConfig as JSON")
		return
	}
	fs.StringVarP(&f.inputs, "inputs", "i", "", "comma-separated input topics")
	fs.StringVar(&f.topicsPattern, "topics-pattern", "", "a regular expression of input topics")
	fs.StringVar(&f.subsName, "subs-name", "", "the subscription name")
	fs.StringVar(&f.subsPosition, "subs-position", "", "Latest or Earliest")
	fs.StringVar(&f.serdeInputs, "custom-serde-inputs", "", "topic to SerDe class, as JSON")
	fs.StringVar(&f.schemaInputs, "custom-schema-inputs", "", "topic to schema type, as JSON")
	fs.StringVar(&f.inputSpecs, "input-specs", "", "topic to ConsumerConfig, as JSON")
	fs.IntVar(&f.maxRedeliver, "max-redeliver-count", 0, "deliveries before a record goes to the dead-letter topic")
	fs.StringVar(&f.deadLetter, "dead-letter-topic", "", "the dead-letter topic")
	fs.BoolVar(&f.retainOrdering, "retain-ordering", false, "process records in order (one consumer)")
	fs.BoolVar(&f.retainKeyOrdering, "retain-key-ordering", false, "process each key's records in order (Key_Shared)")
	fs.BoolVar(&f.autoAck, "auto-ack", true, "acknowledge records automatically")
	fs.Int64Var(&f.timeoutMs, "timeout-ms", 0, "redeliver a record not acknowledged within this many ms")
	fs.Int64Var(&f.nackDelayMs, "negative-ack-redelivery-delay-ms", 0, "ms before a failed record is redelivered")
	fs.BoolVar(&f.cleanupSub, "cleanup-subscription", true, "delete the input subscriptions when the sink is deleted")
}

// config builds the SourceConfig or SinkConfig document: the config file, then the flags
// given.
func (f *connFlags) config(cmd *cobra.Command, k connectorKindCLI) (map[string]any, error) {
	doc := map[string]any{}
	if f.configFile != "" {
		b, err := os.ReadFile(f.configFile)
		if err != nil {
			return nil, usageError(err)
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return nil, usageError(fmt.Errorf("--%s-config-file: %w", k.noun, err))
		}
	}
	fl := cmd.Flags()
	set := func(flag, key string, v any) {
		if fl.Changed(flag) {
			doc[key] = v
		}
	}
	setJSON := func(flag, key, v string) error {
		if !fl.Changed(flag) {
			return nil
		}
		var x any
		if err := jsonFlag(flag, v, &x); err != nil {
			return err
		}
		doc[key] = x
		return nil
	}
	set("tenant", "tenant", f.tenant)
	set("namespace", "namespace", f.namespace)
	set("name", "name", f.name)
	set("classname", "className", f.className)
	set("processing-guarantees", "processingGuarantees", f.guarantees)
	set("parallelism", "parallelism", f.parallelism)
	set("runtime-flags", "runtimeFlags", f.runtimeFlags)
	set("log-topic", "logTopic", f.logTopic)
	switch {
	case fl.Changed("archive"):
		doc["archive"] = f.archive
	case fl.Changed(k.noun + "-type"):
		doc["archive"] = "builtin://" + f.connType
	}
	if fl.Changed("cpu") || fl.Changed("ram") || fl.Changed("disk") {
		r := functions.Resources{CPU: 1, RAM: 1 << 30, Disk: 10 << 30}
		if fl.Changed("cpu") {
			r.CPU = f.cpu
		}
		if fl.Changed("ram") {
			r.RAM = f.ram
		}
		if fl.Changed("disk") {
			r.Disk = f.disk
		}
		doc["resources"] = r
	}
	errs := []error{setJSON(k.noun+"-config", "configs", f.configJSON), setJSON("secrets", "secrets", f.secrets)}
	if k.noun == "source" {
		set("destination-topic-name", "topicName", f.destTopic)
		set("deserialization-classname", "serdeClassName", f.serdeClass)
		set("schema-type", "schemaType", f.schemaType)
		set("batch-builder", "batchBuilder", f.batchBuilder)
		errs = append(errs, setJSON("producer-config", "producerConfig", f.producerConfig))
	} else {
		if fl.Changed("inputs") {
			var in []string
			for _, s := range strings.Split(f.inputs, ",") {
				if s = strings.TrimSpace(s); s != "" {
					in = append(in, s)
				}
			}
			doc["inputs"] = in
		}
		set("topics-pattern", "topicsPattern", f.topicsPattern)
		set("subs-name", "sourceSubscriptionName", f.subsName)
		set("subs-position", "sourceSubscriptionPosition", f.subsPosition)
		set("max-redeliver-count", "maxMessageRetries", f.maxRedeliver)
		set("dead-letter-topic", "deadLetterTopic", f.deadLetter)
		set("retain-ordering", "retainOrdering", f.retainOrdering)
		set("retain-key-ordering", "retainKeyOrdering", f.retainKeyOrdering)
		set("auto-ack", "autoAck", f.autoAck)
		set("timeout-ms", "timeoutMs", f.timeoutMs)
		set("negative-ack-redelivery-delay-ms", "negativeAckRedeliveryDelayMs", f.nackDelayMs)
		set("cleanup-subscription", "cleanupSubscription", f.cleanupSub)
		errs = append(errs, setJSON("custom-serde-inputs", "topicToSerdeClassName", f.serdeInputs),
			setJSON("custom-schema-inputs", "topicToSchemaType", f.schemaInputs), setJSON("input-specs", "inputSpecs", f.inputSpecs))
	}
	for _, err := range errs {
		if err != nil {
			return nil, usageError(err)
		}
	}
	for _, key := range []string{"tenant", "namespace"} {
		if _, ok := doc[key]; !ok {
			doc[key] = map[string]string{"tenant": "public", "namespace": "default"}[key]
		}
	}
	if n, _ := doc["name"].(string); n == "" {
		return nil, usageError(fmt.Errorf("--name is required"))
	}
	return doc, nil
}

var pastTense = map[string]string{"delete": "Deleted", "start": "Started", "stop": "Stopped", "restart": "Restarted"}

func connectorPath(k connectorKindCLI, doc map[string]any) string {
	s := func(key string) string { v, _ := doc[key].(string); return url.PathEscape(v) }
	return k.base + "/" + s("tenant") + "/" + s("namespace") + "/" + s("name")
}

// connectorCmd is `magnetar admin sources|sinks ...` (pulsar-admin sources / sinks).
func (ac *adminCLI) connectorCmd(k connectorKindCLI) *cobra.Command {
	cmd := &cobra.Command{Use: k.use, Short: "Manage Pulsar IO " + k.use + " (pulsar-admin " + k.use + ")"}
	createOrUpdate := func(use, method string) *cobra.Command {
		f := &connFlags{}
		var updateAuth bool
		c := &cobra.Command{Use: use, Short: use + " a " + k.noun, Args: cobra.NoArgs}
		f.bind(c.Flags(), k)
		if method == http.MethodPut {
			c.Flags().BoolVar(&updateAuth, "update-auth-data", false, "update the "+k.noun+"'s auth data")
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error {
			doc, err := f.config(cmd, k)
			if err != nil {
				return err
			}
			js := map[string]any{k.jsonField: doc}
			if method == http.MethodPut {
				js["updateOptions"] = map[string]bool{"updateAuthData": updateAuth}
			}
			fields := map[string]string{}
			file := ""
			if a, _ := doc["archive"].(string); a != "" && !strings.Contains(a, "://") {
				file = a // a local package: the server refuses it with its reason
			}
			if _, err := ac.multipart(cmd.Context(), method, connectorPath(k, doc), fields, js, file, "data"); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s successfully\n", map[string]string{http.MethodPost: "Created", http.MethodPut: "Updated"}[method])
			return err
		}
		return c
	}
	named := func(use, short string, instance bool, run func(ctx context.Context, path string, id int) ([]byte, error)) *cobra.Command {
		f := &connFlags{}
		id := -1
		c := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs}
		f.bindName(c.Flags(), k.noun)
		if instance {
			c.Flags().IntVar(&id, "instance-id", -1, "one instance (default: all)")
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error {
			if f.name == "" {
				return usageError(fmt.Errorf("--name is required"))
			}
			b, err := run(cmd.Context(), connectorPath(k, map[string]any{"tenant": f.tenant, "namespace": f.namespace, "name": f.name}), id)
			if err != nil {
				return err
			}
			if done := pastTense[use]; done != "" && len(b) == 0 {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s successfully\n", done)
				return err
			}
			return ac.show(cmd, b)
		}
		return c
	}
	inst := func(path string, id int, suffix string) string {
		if id >= 0 {
			return path + "/" + strconv.Itoa(id) + "/" + suffix
		}
		return path + "/" + suffix
	}
	action := func(verb string) *cobra.Command {
		return named(verb, verb+" "+k.noun+" instances", true, func(ctx context.Context, path string, id int) ([]byte, error) {
			return ac.send(ctx, http.MethodPost, inst(path, id, verb), nil)
		})
	}
	var listTenant, listNS string
	list := &cobra.Command{Use: "list", Short: "list the " + k.use + " of a namespace", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := ac.get(cmd.Context(), k.base+"/"+url.PathEscape(listTenant)+"/"+url.PathEscape(listNS))
			if err != nil {
				return err
			}
			return ac.show(cmd, b)
		}}
	list.Flags().StringVar(&listTenant, "tenant", "public", "the tenant")
	list.Flags().StringVar(&listNS, "namespace", "default", "the namespace")
	cmd.AddCommand(
		createOrUpdate("create", http.MethodPost),
		createOrUpdate("update", http.MethodPut),
		named("delete", "delete a "+k.noun, false, func(ctx context.Context, path string, _ int) ([]byte, error) {
			return ac.send(ctx, http.MethodDelete, path, nil)
		}),
		named("get", "show a "+k.noun+"'s config", false, func(ctx context.Context, path string, _ int) ([]byte, error) {
			return ac.get(ctx, path)
		}),
		named("status", "show a "+k.noun+"'s status", true, func(ctx context.Context, path string, id int) ([]byte, error) {
			return ac.get(ctx, inst(path, id, "status"))
		}),
		action("start"), action("stop"), action("restart"),
		list,
		&cobra.Command{Use: k.available, Short: "list the built-in " + k.use, Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				b, err := ac.get(cmd.Context(), k.base+"/"+k.builtins)
				if err != nil {
					return err
				}
				return ac.show(cmd, b)
			}},
		&cobra.Command{Use: "reload", Short: "reload the built-in " + k.use, Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if _, err := ac.send(cmd.Context(), http.MethodPost, k.base+"/"+k.reload, nil); err != nil {
					return err
				}
				_, err := fmt.Fprintln(cmd.OutOrStdout(), "Reloaded successfully")
				return err
			}},
		&cobra.Command{Use: "localrun", Short: "not supported: run the " + k.noun + " through a worker (create)", Args: cobra.ArbitraryArgs,
			DisableFlagParsing: true,
			RunE: func(*cobra.Command, []string) error {
				return usageError(fmt.Errorf("%s localrun is not supported: built-in connectors run in the functions worker; use %s create", k.use, k.use))
			}},
	)
	return cmd
}
