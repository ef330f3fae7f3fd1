package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/magnetar-io/magnetar/internal/admin"
	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/functions"
	"github.com/magnetar-io/magnetar/internal/functions/pkgstore"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/pkg/pf"
)

// functionsWorkerCmd is `magnetar functions-worker`: a functions worker of its own, against
// a cluster's metadata store and brokers, serving the functions REST API on --port (and
// HTTPS on workerPortTls). Its REST API is authenticated and authorized as a broker's
// (admin.Secure over the cluster's tenant and namespace permissions), and it calls the
// brokers and other workers with its brokerClient* credentials, which its instances connect
// with too.
func (a *app) functionsWorkerCmd() *cobra.Command {
	cfg := config.DefaultFunctionsWorkerRoleConfig()
	cmd := &cobra.Command{
		Use:   "functions-worker",
		Short: "Run a Pulsar Functions worker against a cluster (metadata store and brokers)",
		Args:  cobra.NoArgs,
	}
	b := bindFlags(cmd.Flags(), &cfg)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		logger, err := a.load(b, cfg.Validate)
		if err != nil {
			return err
		}
		if cfg.WorkerPortTLS >= 0 && !cfg.ServesTLS() {
			logger.Warn("workerPortTls is not served: tlsEnabled is false and no tlsCertificateFilePath is set (as Pulsar's worker, which serves it only with tlsEnabled)",
				"workerPortTls", cfg.WorkerPortTLS)
		}
		ctx := cmd.Context()
		store, err := metadataOpener(cfg.MetadataTLS)(ctx, cfg.MetadataStoreURL, logger)
		if err != nil {
			return fmt.Errorf("functions-worker: metadata store: %w", err)
		}
		defer store.Close()
		res := resources.New(store)
		sec, err := auth.NewBrokerSecurity(cfg.Security(), auth.CachedPolicies(resources.PermissionSource{R: res}, 2*time.Second, 10000), logger)
		if err != nil {
			return fmt.Errorf("functions-worker: security: %w", err)
		}
		httpc, err := auth.BrokerClientHTTP(cfg.Client, logger)
		if err != nil {
			return fmt.Errorf("functions-worker: brokerClient settings: %w", err)
		}
		bkTLS, err := auth.BookieClientTLS(cfg.Ledger.TLS, logger)
		if err != nil {
			return fmt.Errorf("functions-worker: bookie client TLS: %w", err)
		}
		bk := bookieproto.NewClient(bookieproto.ClientOptions{Logger: logger, TLS: bkTLS})
		defer bk.Close()
		lc, err := ledger.NewClient(ctx, ledger.ClientOptions{Config: cfg.Ledger, Store: store, Bookies: bk, Logger: logger})
		if err != nil {
			return fmt.Errorf("functions-worker: ledger client: %w", err)
		}
		defer lc.Close()
		ln, err := net.Listen("tcp", net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.WorkerPort)))
		if err != nil {
			return fmt.Errorf("functions-worker: listen (workerPort): %w", err)
		}
		var lnTLS net.Listener
		if cfg.ServesTLS() {
			if lnTLS, err = net.Listen("tcp", net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.WorkerPortTLS))); err != nil {
				_ = ln.Close()
				return fmt.Errorf("functions-worker: listen (workerPortTls): %w", err)
			}
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		webURL := "http://" + net.JoinHostPort(cfg.AdvertisedAddress, port)
		mount := &functions.Mount{}
		srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
			Handler: admin.Secure(mount.Wrap(http.NotFoundHandler()), admin.SecureConfig{Authn: sec.Authn, Authz: sec.Authz})}
		served := make(chan error, 2)
		go func() { served <- srv.Serve(ln) }()
		httpsURL := ""
		if lnTLS != nil {
			srv.TLSConfig = sec.TLS.Config() // Validate made sure a certificate is configured
			_, tport, _ := net.SplitHostPort(lnTLS.Addr().String())
			httpsURL = "https://" + net.JoinHostPort(cfg.AdvertisedAddress, tport)
			go func() { served <- srv.ServeTLS(lnTLS, "", "") }()
		}
		w, err := functions.Start(ctx, functions.Options{
			Config: cfg.Functions, Store: store, Resources: res,
			Packages:    &pkgstore.Ledgers{Client: lc, Replicas: cfg.Functions.NumFunctionPackageReplicas},
			ClusterName: cfg.ClusterName, BrokerServiceURL: cfg.Functions.PulsarServiceURL, WebServiceURL: webURL,
			BrokerWebServiceURL: cfg.Functions.PulsarWebServiceURL, HTTPClient: httpc,
			InstanceAuthPlugin: cfg.Client.AuthenticationPlugin, InstanceAuthParams: cfg.Client.AuthenticationParameters,
			InstanceTLSTrustCertsFile: cfg.Client.TrustCertsFilePath, InstanceTLSVerifyHostname: cfg.Client.HostnameVerification,
			DataDir: cfg.DataDir, Logger: logger, AuthorizePackage: admin.PackageUse(sec.Authz),
		})
		if err != nil {
			_ = srv.Close()
			return fmt.Errorf("functions-worker: %w", err)
		}
		mount.Set(w)
		if cfg.Functions.PulsarWebServiceURL == "" {
			logger.Warn("pulsarWebServiceUrl is not set: the input subscriptions of deleted functions and sinks stay (cleanupSubscription)")
		}
		logger.Info("magnetar functions worker ready", "http", webURL, "https", httpsURL, "workerId", w.ID(),
			"authenticationEnabled", sec.Authn.Enabled(), "authorizationEnabled", sec.Authz.Enabled())
		select {
		case <-ctx.Done():
			logger.Info("shutting down (signal received)")
		case err = <-served:
			logger.Error("the HTTP server stopped on its own; shutting down", "err", err)
		}
		mount.Set(nil)
		shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		return w.Close()
	}
	return cmd
}

// fnFlags are pulsar-admin's function flags (create, update, localrun).
type fnFlags struct {
	tenant, namespace, name, fqfn, configFile                       string
	inputs, topicsPattern, output, logTopic, goPath, pyPath, jar    string
	wasmPath, className, guarantees, userConfig, subsName, subsPos  string
	deadLetter, secrets, customSchemaInputs, customSerdeInputs      string
	schemaType, inputSpecs, producerConfig, runtimeOpts, runtimeFl  string
	parallelism, maxRetries, windowCount, slideCount                int
	timeoutMs, ram, disk, windowDelayMs, slideDelayMs               int64
	cpu                                                             float64
	retainOrdering, retainKeyOrdering, autoAck, cleanupSubscription bool
	updateAuthData                                                  bool
}

func (f *fnFlags) bindName(fs *pflag.FlagSet) {
	fs.StringVar(&f.tenant, "tenant", "", "the function's tenant")
	fs.StringVar(&f.namespace, "namespace", "", "the function's namespace")
	fs.StringVar(&f.name, "name", "", "the function's name")
	fs.StringVar(&f.fqfn, "fqfn", "", "the fully qualified function name (tenant/namespace/name)")
}

func (f *fnFlags) bind(fs *pflag.FlagSet) {
	f.bindName(fs)
	fs.StringVar(&f.configFile, "function-config-file", "", "a YAML or JSON file with the FunctionConfig")
	fs.StringVar(&f.inputs, "inputs", "", "comma-separated input topics")
	fs.StringVar(&f.topicsPattern, "topics-pattern", "", "a regular expression of input topics")
	fs.StringVarP(&f.output, "output", "", "", "the output topic")
	fs.StringVar(&f.logTopic, "log-topic", "", "the topic the function's log goes to")
	fs.StringVar(&f.goPath, "go", "", "path of the function's Go binary")
	fs.StringVar(&f.pyPath, "py", "", "path of the function's Python file, wheel or zip")
	fs.StringVar(&f.wasmPath, "wasm", "", "path of the function's WebAssembly module")
	fs.StringVar(&f.jar, "jar", "", "a Java function (not supported)")
	fs.StringVar(&f.className, "classname", "", "the Python function's module.Class")
	fs.IntVar(&f.parallelism, "parallelism", 0, "number of instances")
	fs.StringVar(&f.guarantees, "processing-guarantees", "", "ATLEAST_ONCE, ATMOST_ONCE, EFFECTIVELY_ONCE or MANUAL")
	fs.StringVar(&f.userConfig, "user-config", "", "user config as JSON")
	fs.BoolVar(&f.retainOrdering, "retain-ordering", false, "process in order (Failover subscription)")
	fs.BoolVar(&f.retainKeyOrdering, "retain-key-ordering", false, "process in order per key (Key_Shared subscription)")
	fs.StringVar(&f.subsName, "subs-name", "", "the input subscription's name")
	fs.StringVar(&f.subsPos, "subs-position", "", "where a new subscription starts: Latest or Earliest")
	fs.BoolVar(&f.autoAck, "auto-ack", true, "acknowledge automatically (deprecated: use --processing-guarantees MANUAL)")
	fs.IntVar(&f.maxRetries, "max-message-retries", -1, "redeliveries before a message goes to the dead letter topic")
	fs.StringVar(&f.deadLetter, "dead-letter-topic", "", "where messages go after --max-message-retries")
	fs.Int64Var(&f.timeoutMs, "timeout-ms", 0, "the message timeout in ms")
	fs.Float64Var(&f.cpu, "cpu", 0, "CPU cores per instance")
	fs.Int64Var(&f.ram, "ram", 0, "memory per instance in bytes")
	fs.Int64Var(&f.disk, "disk", 0, "disk per instance in bytes")
	fs.IntVar(&f.windowCount, "window-length-count", 0, "messages per window")
	fs.Int64Var(&f.windowDelayMs, "window-length-delay-ms", 0, "window length in ms")
	fs.IntVar(&f.slideCount, "sliding-interval-count", 0, "messages after which a window slides")
	fs.Int64Var(&f.slideDelayMs, "sliding-interval-delay-ms", 0, "ms after which a window slides")
	fs.StringVar(&f.secrets, "secrets", "", "secrets as JSON (name -> env variable name or {\"path\": ...})")
	fs.StringVar(&f.customSchemaInputs, "custom-schema-inputs", "", "input topic -> schema type, as JSON")
	fs.StringVar(&f.customSerdeInputs, "custom-serde-inputs", "", "input topic -> serde class, as JSON")
	fs.StringVar(&f.schemaType, "schema-type", "", "the output's schema type")
	fs.StringVar(&f.inputSpecs, "input-specs", "", "input topic -> ConsumerConfig, as JSON")
	fs.StringVar(&f.producerConfig, "producer-config", "", "the output producer's ProducerConfig, as JSON")
	fs.StringVar(&f.runtimeOpts, "custom-runtime-options", "", "runtime options string")
	fs.StringVar(&f.runtimeFl, "runtime-flags", "", "flags passed to the runtime")
	fs.BoolVar(&f.cleanupSubscription, "cleanup-subscription", true, "delete the input subscriptions when the function is deleted")
}

// path is /tenant/namespace/name from the name flags.
func (f *fnFlags) path() (string, error) {
	t, ns, n := f.tenant, f.namespace, f.name
	if f.fqfn != "" {
		parts := strings.Split(f.fqfn, "/")
		if len(parts) != 3 {
			return "", usageError(fmt.Errorf("--fqfn %q: want tenant/namespace/name", f.fqfn))
		}
		t, ns, n = parts[0], parts[1], parts[2]
	}
	if t == "" {
		t = "public"
	}
	if ns == "" {
		ns = "default"
	}
	if n == "" {
		return "", usageError(fmt.Errorf("--name (or --fqfn) is required"))
	}
	return "/" + url.PathEscape(t) + "/" + url.PathEscape(ns) + "/" + url.PathEscape(n), nil
}

func jsonFlag(name, v string, into any) error {
	if v == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(v), into); err != nil {
		return usageError(fmt.Errorf("--%s: not valid JSON: %w", name, err))
	}
	return nil
}

// config builds the FunctionConfig from the file and the flags (flags win) and returns the
// package path.
func (f *fnFlags) config(cmd *cobra.Command) (*functions.FunctionConfig, string, error) {
	c := &functions.FunctionConfig{}
	if f.configFile != "" {
		raw, err := os.ReadFile(f.configFile)
		if err != nil {
			return nil, "", usageError(err)
		}
		j, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, "", usageError(fmt.Errorf("--function-config-file: %w", err))
		}
		if c, err = functions.ParseFunctionConfig(j); err != nil {
			return nil, "", usageError(err)
		}
	}
	set := func(name string) bool { return cmd.Flags().Changed(name) }
	if f.fqfn != "" {
		if parts := strings.Split(f.fqfn, "/"); len(parts) == 3 {
			c.Tenant, c.Namespace, c.Name = parts[0], parts[1], parts[2]
		}
	}
	if f.tenant != "" {
		c.Tenant = f.tenant
	}
	if f.namespace != "" {
		c.Namespace = f.namespace
	}
	if f.name != "" {
		c.Name = f.name
	}
	if f.inputs != "" {
		c.Inputs = strings.Split(f.inputs, ",")
	}
	if f.topicsPattern != "" {
		c.TopicsPattern = &f.topicsPattern
	}
	for _, s := range []struct {
		v   string
		dst *string
	}{{f.output, &c.Output}, {f.logTopic, &c.LogTopic}, {f.className, &c.ClassName}, {f.guarantees, &c.ProcessingGuarantees},
		{f.subsName, &c.SubName}, {f.subsPos, &c.SubscriptionPosition}, {f.deadLetter, &c.DeadLetterTopic},
		{f.schemaType, &c.OutputSchemaType}, {f.runtimeOpts, &c.CustomRuntimeOptions}, {f.runtimeFl, &c.RuntimeFlags}} {
		if s.v != "" {
			*s.dst = s.v
		}
	}
	pkg := ""
	switch {
	case f.goPath != "":
		c.Go, c.Runtime, pkg = &f.goPath, functions.RuntimeGo, f.goPath
	case f.pyPath != "":
		c.Py, c.Runtime, pkg = &f.pyPath, functions.RuntimePython, f.pyPath
	case f.wasmPath != "":
		c.Wasm, c.Runtime, pkg = &f.wasmPath, functions.RuntimeWasm, f.wasmPath
	case f.jar != "":
		return nil, "", usageError(fmt.Errorf("--jar: Java functions are not supported; use --go, --py or --wasm"))
	case c.Go != nil:
		pkg = *c.Go
	case c.Py != nil:
		pkg = *c.Py
	case c.Wasm != nil:
		pkg = *c.Wasm
	}
	if f.parallelism > 0 {
		c.Parallelism = f.parallelism
	}
	if set("retain-ordering") {
		c.RetainOrdering = f.retainOrdering
	}
	if set("retain-key-ordering") {
		c.RetainKeyOrdering = f.retainKeyOrdering
	}
	if set("cleanup-subscription") {
		c.CleanupSubscription = &f.cleanupSubscription
	}
	if set("auto-ack") && !f.autoAck && c.ProcessingGuarantees == "" {
		c.ProcessingGuarantees = "MANUAL"
	}
	if f.maxRetries >= 0 {
		c.MaxMessageRetries = &f.maxRetries
	}
	if f.timeoutMs > 0 {
		c.TimeoutMs = &f.timeoutMs
	}
	if f.cpu > 0 || f.ram > 0 || f.disk > 0 {
		r := functions.Resources{CPU: 1, RAM: 1 << 30, Disk: 10 << 30}
		if c.Resources != nil {
			r = *c.Resources
		}
		if f.cpu > 0 {
			r.CPU = f.cpu
		}
		if f.ram > 0 {
			r.RAM = f.ram
		}
		if f.disk > 0 {
			r.Disk = f.disk
		}
		c.Resources = &r
	}
	if f.windowCount > 0 || f.windowDelayMs > 0 || f.slideCount > 0 || f.slideDelayMs > 0 {
		if c.WindowConfig == nil {
			c.WindowConfig = &pf.WindowConfig{}
		}
		if f.windowCount > 0 {
			c.WindowConfig.WindowLengthCount = &f.windowCount
		}
		if f.windowDelayMs > 0 {
			c.WindowConfig.WindowLengthDurationMs = &f.windowDelayMs
		}
		if f.slideCount > 0 {
			c.WindowConfig.SlidingIntervalCount = &f.slideCount
		}
		if f.slideDelayMs > 0 {
			c.WindowConfig.SlidingIntervalDurationMs = &f.slideDelayMs
		}
	}
	for _, j := range []struct {
		name, v string
		into    any
	}{{"user-config", f.userConfig, &c.UserConfig}, {"secrets", f.secrets, &c.Secrets},
		{"custom-schema-inputs", f.customSchemaInputs, &c.CustomSchemaInputs}, {"custom-serde-inputs", f.customSerdeInputs, &c.CustomSerdeInputs},
		{"input-specs", f.inputSpecs, &c.InputSpecs}} {
		if err := jsonFlag(j.name, j.v, j.into); err != nil {
			return nil, "", err
		}
	}
	if f.producerConfig != "" {
		raw := json.RawMessage(f.producerConfig)
		if !json.Valid(raw) {
			return nil, "", usageError(fmt.Errorf("--producer-config: not valid JSON"))
		}
		c.ProducerConfig = &raw
	}
	return c, pkg, nil
}

// multipart sends a multipart request to the admin API, with the CLI's credentials and TLS
// settings (adminCLI.stream), the file streamed from disk while the request is sent.
func (ac *adminCLI) multipart(ctx context.Context, method, path string, fields map[string]string, jsonFields map[string]any, file, fileField string) ([]byte, error) {
	var f *os.File
	if file != "" {
		var err error
		if f, err = os.Open(file); err != nil {
			return nil, usageError(err)
		}
		defer f.Close()
	}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() { pw.CloseWithError(writeMultipart(mw, fields, jsonFields, f, file, fileField)) }()
	resp, cancel, err := ac.stream(ctx, method, path, mw.FormDataContentType(), pr)
	pr.Close() // the writer stops if the answer came before the whole body was sent
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, 16<<20))
}

// writeMultipart writes the parts of multipart: the JSON fields, the plain ones, then the
// file (f, named after file's base name) as fileField.
func writeMultipart(mw *multipart.Writer, fields map[string]string, jsonFields map[string]any, f *os.File, file, fileField string) error {
	for k, v := range jsonFields {
		h := make(map[string][]string)
		h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="%s"`, k)}
		h["Content-Type"] = []string{"application/json"}
		w, err := mw.CreatePart(h)
		if err != nil {
			return err
		}
		if err := json.NewEncoder(w).Encode(v); err != nil {
			return err
		}
	}
	for k, v := range fields {
		if err := mw.WriteField(k, v); err != nil {
			return err
		}
	}
	if f != nil {
		w, err := mw.CreateFormFile(fileField, filepath.Base(file))
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, f); err != nil {
			return err
		}
	}
	return mw.Close()
}

const functionsBase = "/admin/v3/functions"

// functionsCmd is `magnetar admin functions ...` (pulsar-admin functions).
func (ac *adminCLI) functionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "functions", Short: "Manage Pulsar Functions (pulsar-admin functions)"}
	createOrUpdate := func(use, method string) *cobra.Command {
		f := &fnFlags{}
		c := &cobra.Command{Use: use, Short: use + " a function", Args: cobra.NoArgs}
		f.bind(c.Flags())
		if method == http.MethodPut {
			c.Flags().BoolVar(&f.updateAuthData, "update-auth-data", false, "update the function's auth data")
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error {
			cfg, pkg, err := f.config(cmd)
			if err != nil {
				return err
			}
			if cfg.Name == "" {
				return usageError(fmt.Errorf("--name (or --fqfn) is required"))
			}
			if cfg.Tenant == "" {
				cfg.Tenant = "public"
			}
			if cfg.Namespace == "" {
				cfg.Namespace = "default"
			}
			path := functionsBase + "/" + url.PathEscape(cfg.Tenant) + "/" + url.PathEscape(cfg.Namespace) + "/" + url.PathEscape(cfg.Name)
			js := map[string]any{"functionConfig": cfg}
			fields := map[string]string{}
			if method == http.MethodPut {
				js["updateOptions"] = map[string]bool{"updateAuthData": f.updateAuthData}
			}
			file := pkg
			if strings.Contains(pkg, "://") {
				fields["url"], file = pkg, ""
			}
			if _, err := ac.multipart(cmd.Context(), method, path, fields, js, file, "data"); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s successfully\n", map[string]string{http.MethodPost: "Created", http.MethodPut: "Updated"}[method])
			return err
		}
		return c
	}
	named := func(use, short string, run func(ctx context.Context, cmd *cobra.Command, path string, f *fnFlags, id int) ([]byte, error), extra func(*pflag.FlagSet, *fnFlags)) *cobra.Command {
		f := &fnFlags{}
		id := -1
		c := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs}
		f.bindName(c.Flags())
		c.Flags().IntVar(&id, "instance-id", -1, "one instance (default: all)")
		if extra != nil {
			extra(c.Flags(), f)
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error {
			p, err := f.path()
			if err != nil {
				return err
			}
			b, err := run(cmd.Context(), cmd, functionsBase+p, f, id)
			if err != nil {
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
		return named(verb, verb+" function instances", func(ctx context.Context, cmd *cobra.Command, path string, _ *fnFlags, id int) ([]byte, error) {
			return ac.send(ctx, http.MethodPost, inst(path, id, verb), nil)
		}, nil)
	}
	var trigValue, trigFile, trigTopic, stateKey, stateJSON string
	var watch bool
	cmd.AddCommand(
		createOrUpdate("create", http.MethodPost),
		createOrUpdate("update", http.MethodPut),
		named("delete", "delete a function", func(ctx context.Context, _ *cobra.Command, path string, _ *fnFlags, _ int) ([]byte, error) {
			return ac.send(ctx, http.MethodDelete, path, nil)
		}, nil),
		named("get", "show a function's config", func(ctx context.Context, _ *cobra.Command, path string, _ *fnFlags, _ int) ([]byte, error) {
			return ac.get(ctx, path)
		}, nil),
		named("status", "show a function's status", func(ctx context.Context, _ *cobra.Command, path string, _ *fnFlags, id int) ([]byte, error) {
			return ac.get(ctx, inst(path, id, "status"))
		}, nil),
		named("stats", "show a function's stats", func(ctx context.Context, _ *cobra.Command, path string, _ *fnFlags, id int) ([]byte, error) {
			return ac.get(ctx, inst(path, id, "stats"))
		}, nil),
		action("start"), action("stop"), action("restart"),
		named("trigger", "send a value to a function and show its output", func(ctx context.Context, _ *cobra.Command, path string, _ *fnFlags, _ int) ([]byte, error) {
			fields := map[string]string{}
			if trigValue != "" {
				fields["data"] = trigValue
			}
			if trigTopic != "" {
				fields["topic"] = trigTopic
			}
			return ac.multipart(ctx, http.MethodPost, path+"/trigger", fields, nil, trigFile, "dataStream")
		}, func(fs *pflag.FlagSet, _ *fnFlags) {
			fs.StringVar(&trigValue, "trigger-value", "", "the value to send")
			fs.StringVar(&trigFile, "trigger-file", "", "a file whose content to send")
			fs.StringVar(&trigTopic, "topic", "", "the input topic to send to")
		}),
		named("querystate", "show a state key", func(ctx context.Context, cmd *cobra.Command, path string, _ *fnFlags, _ int) ([]byte, error) {
			if stateKey == "" {
				return nil, usageError(fmt.Errorf("--key is required"))
			}
			for {
				b, err := ac.get(ctx, path+"/state/"+url.PathEscape(stateKey))
				if !watch || err != nil {
					return b, err
				}
				if err := ac.show(cmd, b); err != nil {
					return nil, err
				}
				select {
				case <-ctx.Done():
					return nil, nil
				case <-time.After(time.Second):
				}
			}
		}, func(fs *pflag.FlagSet, _ *fnFlags) {
			fs.StringVarP(&stateKey, "key", "k", "", "the state key")
			fs.BoolVarP(&watch, "watch", "w", false, "keep showing it every second")
		}),
		named("putstate", "set a state key", func(ctx context.Context, _ *cobra.Command, path string, _ *fnFlags, _ int) ([]byte, error) {
			var st map[string]any
			if err := jsonFlag("state", stateJSON, &st); err != nil || st == nil {
				return nil, usageError(fmt.Errorf("--state: a FunctionState JSON document ({\"key\":..., \"stringValue\"|\"numberValue\":...}) is required"))
			}
			key, _ := st["key"].(string)
			if key == "" {
				return nil, usageError(fmt.Errorf("--state: key is required"))
			}
			return ac.multipart(ctx, http.MethodPost, path+"/state/"+url.PathEscape(key), nil, map[string]any{"state": st}, "", "")
		}, func(fs *pflag.FlagSet, _ *fnFlags) {
			fs.StringVarP(&stateJSON, "state", "s", "", "the FunctionState as JSON")
		}),
	)
	var listTenant, listNS string
	list := &cobra.Command{Use: "list", Short: "list the functions of a namespace", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := ac.get(cmd.Context(), functionsBase+"/"+url.PathEscape(listTenant)+"/"+url.PathEscape(listNS))
			if err != nil {
				return err
			}
			return ac.show(cmd, b)
		}}
	list.Flags().StringVar(&listTenant, "tenant", "public", "the tenant")
	list.Flags().StringVar(&listNS, "namespace", "default", "the namespace")
	cmd.AddCommand(list)
	return cmd
}

// functionsToolCmd is `magnetar functions localrun`: run a function here, without a worker.
func (a *app) functionsToolCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "functions", Short: "Run functions locally (pulsar-admin functions localrun)"}
	f := &fnFlags{}
	wcfg := config.DefaultFunctionsWorkerConfig()
	var brokerURL, authPlugin, authParams, stateURL, dir string
	var offset int
	lr := &cobra.Command{Use: "localrun", Short: "Run a function's instances on this machine against a cluster", Args: cobra.NoArgs}
	f.bind(lr.Flags())
	fs := lr.Flags()
	fs.StringVar(&brokerURL, "broker-service-url", "pulsar://localhost:6650", "the cluster's pulsar:// URL")
	fs.StringVar(&authPlugin, "client-auth-plugin", "", "client authentication plugin")
	fs.StringVar(&authParams, "client-auth-params", "", "client authentication parameters")
	fs.StringVar(&stateURL, "state-storage-service-url", "", "a state service for the function's state")
	fs.IntVar(&offset, "instance-id-offset", 0, "the first instance id")
	fs.StringVar(&dir, "dir", filepath.Join(os.TempDir(), "magnetar-localrun"), "directory for virtualenvs and logs")
	lr.RunE = func(cmd *cobra.Command, _ []string) error {
		logger, err := a.load(nil, nil)
		if err != nil {
			return err
		}
		cfg, pkg, err := f.config(cmd)
		if err != nil {
			return err
		}
		if pkg == "" {
			return usageError(fmt.Errorf("one of --go, --py or --wasm is required"))
		}
		return functions.LocalRun(cmd.Context(), functions.LocalRunOptions{
			Config: *cfg, Package: pkg, BrokerServiceURL: brokerURL, StateStorageServiceURL: stateURL,
			AuthPlugin: authPlugin, AuthParams: authParams, InstanceIDOffset: offset, Dir: dir, Worker: wcfg, Logger: logger,
		})
	}
	cmd.AddCommand(lr)
	return cmd
}
