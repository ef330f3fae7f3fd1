// Command bench-compare runs the Magnetar vs NATS JetStream comparison (see harness).
// main only wires flags, logging and signals.
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/magnetar-io/magnetar/bench/harness"
)

func main() {
	cfg := harness.DefaultConfig()
	fs := flag.NewFlagSet("bench-compare", flag.ExitOnError)
	f := cfg.BindFlags(fs)
	render := fs.String("render", "", "only re-render -out and -png from this results.json")
	_ = fs.Parse(os.Args[1:])
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "bench-compare")
	if *render != "" {
		res, err := harness.Load(*render)
		if err == nil && res.Config.Pairs == 0 {
			res.Config = cfg // results written before the config was recorded
		}
		if err == nil {
			err = harness.Render(res, cfg.OutMD, cfg.OutPNG)
		}
		if err != nil {
			log.Error("render", "err", err)
			os.Exit(1)
		}
		return
	}
	if err := f.Finish(); err != nil {
		log.Error("config", "err", err)
		os.Exit(2)
	}
	if cfg.Command == "" {
		cfg.Command = "bench-compare " + strings.Join(os.Args[1:], " ")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := harness.Run(ctx, cfg, log); err != nil {
		log.Error("run", "err", err)
		os.Exit(1)
	}
}
