package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/logging"
)

// Version is set at build time with -ldflags "-X github.com/magnetar-io/magnetar/internal/cli.Version=...".
var Version = "dev"

// ExitError carries an exit code out of a command.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// usageError marks configuration and argument errors (exit 2).
func usageError(err error) error { return &ExitError{Code: 2, Err: err} }

// errNotAvailable is returned by subcommands whose issue has not landed yet.
func errNotAvailable(name string) error {
	return &ExitError{Code: 2, Err: fmt.Errorf("magnetar %s: not available yet in this build", name)}
}

// Env is what a command sees of the process: its streams and environment. Tests pass their own.
type Env struct {
	Stdout, Stderr io.Writer
	Environ        []string
}

// app holds the state the root command shares with subcommands.
type app struct {
	env        Env
	configFile string
	log        config.LogConfig
	logBinding *config.Binding
	client     *config.ClientConfig // clientConfig's result
}

// Main runs the magnetar command line with args (without the program name) and returns the
// process exit code.
func Main(args []string) int {
	return Run(args, Env{Stdout: os.Stdout, Stderr: os.Stderr, Environ: os.Environ()})
}

// Run is Main with explicit streams and environment.
func Run(args []string, env Env) int {
	root := newRoot(env)
	root.SetArgs(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(env.Stderr, "error:", err)
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return 1
}

func newRoot(env Env) *cobra.Command {
	a := &app{env: env, log: config.DefaultLogConfig()}
	root := &cobra.Command{
		Use:           "magnetar",
		Short:         "Magnetar: Pulsar-compatible messaging and streaming in one binary",
		Long:          "Magnetar speaks the Pulsar binary protocol and admin REST API.\nOne binary runs every role; `magnetar standalone` runs them all in one process.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	pf := root.PersistentFlags()
	pf.StringVar(&a.configFile, "config", "", "config file (Java-properties key=value, or YAML if named *.yml/*.yaml; env MAGNETAR_CONFIG)")
	b, err := config.Bind(pf, &a.log)
	if err != nil {
		panic(err) // a programming error in LogConfig's tags
	}
	a.logBinding = b
	for _, r := range roles(a) {
		root.AddCommand(r)
	}
	return root
}

// load applies file, environment and flags to the role config bound in b (plus logging),
// validates both and returns the process logger.
func (a *app) load(b *config.Binding, validate func() error) (*slog.Logger, error) {
	file := a.configPath()
	bindings := []*config.Binding{a.logBinding}
	if b != nil {
		bindings = append(bindings, b)
	}
	report, err := config.Apply(file, a.env.Environ, bindings...)
	if err != nil {
		return nil, usageError(err)
	}
	if err := errors.Join(a.log.Validate(), callValidate(validate)); err != nil {
		return nil, usageError(config.Locate(err, bindings...))
	}
	logger, err := logging.New(a.env.Stderr, a.log.Format, a.log.Level)
	if err != nil {
		return nil, usageError(err)
	}
	if len(report.NotApplicable)+len(report.Unknown) > 0 {
		// One warning for all of them: a Pulsar file has dozens (ZooKeeper, JVM, class names).
		logger.Warn("configuration keys that do not apply to this magnetar command were ignored",
			"file", file, "pulsarKeys", report.NotApplicable, "unknownKeys", report.Unknown)
	}
	if b != nil {
		if changed := b.Changed(); len(changed) > 0 {
			logger.Info("configuration", "nonDefault", changed)
		}
	}
	return logger, nil
}

// configPath is --config, or MAGNETAR_CONFIG.
func (a *app) configPath() string {
	file := a.configFile
	if file == "" {
		for _, kv := range a.env.Environ {
			if v, ok := cutPrefix(kv, "MAGNETAR_CONFIG="); ok {
				file = v
			}
		}
	}
	return file
}

// clientConfig reads the tools' client.conf keys (webServiceUrl, brokerServiceUrl) from
// --config and the environment, once. Keys that do not apply to a tool (a client.conf's
// TLS and authentication settings while this build has none) get one warning on stderr.
func (a *app) clientConfig() (config.ClientConfig, error) {
	if a.client != nil {
		return *a.client, nil
	}
	c := config.DefaultClientConfig()
	b, err := config.Bind(nil, &c)
	if err != nil {
		panic(err) // a programming error in ClientConfig's tags
	}
	file := a.configPath()
	rep, err := config.Apply(file, a.env.Environ, b)
	if err == nil {
		err = config.Locate(c.Validate(), b)
	}
	if err != nil {
		return c, usageError(err)
	}
	if file != "" && len(rep.NotApplicable)+len(rep.Unknown) > 0 {
		fmt.Fprintf(a.env.Stderr, "warning: %s: keys that do not apply here were ignored: %s\n", file,
			strings.Join(append(rep.NotApplicable, rep.Unknown...), " "))
	}
	a.client = &c
	return c, nil
}

func callValidate(f func() error) error {
	if f == nil {
		return nil
	}
	return f()
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return "", false
}

// bindFlags binds a role config to a command's flags.
func bindFlags(fs *pflag.FlagSet, cfgs ...any) *config.Binding {
	b, err := config.Bind(fs, cfgs...)
	if err != nil {
		panic(err) // a programming error in a config struct's tags
	}
	return b
}
