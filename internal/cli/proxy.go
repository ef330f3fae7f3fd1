package cli

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/proxy"
)

// proxyCmd is `magnetar proxy`: the stateless gateway in front of the brokers, serving until
// SIGINT or SIGTERM.
func (a *app) proxyCmd() *cobra.Command {
	cfg := config.DefaultProxyConfig()
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Run a proxy: a stateless gateway that forwards clients to owner brokers",
		Args:  cobra.NoArgs,
	}
	b := bindFlags(cmd.Flags(), &cfg)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		logger, err := a.load(b, cfg.Validate)
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		var store metadata.Store
		if cfg.MetadataStoreURL != "" {
			store, err = metadataOpener(cfg.MetadataTLS)(ctx, cfg.MetadataStoreURL, logger)
			if err != nil {
				return fmt.Errorf("proxy: metadata store: %w", err)
			}
			defer store.Close()
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		p, err := proxy.Start(ctx, proxy.Options{Config: cfg, Store: store, Logger: logger, Registerer: reg, Gatherer: reg})
		if err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
		logger.Info("magnetar proxy ready", "service", p.Addr(), "serviceTls", p.AddrTLS(), "http", p.HTTPAddr(), "https", p.HTTPSAddr())
		<-ctx.Done()
		logger.Info("shutting down (signal received)")
		return stopWithin(logger, "proxyShutdownTimeoutMs", cfg.ShutdownTimeoutMs, func(context.Context) error { return p.Close() })
	}
	return cmd
}
