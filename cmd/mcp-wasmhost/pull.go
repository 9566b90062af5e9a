package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"text/tabwriter"

	"github.com/mcp-wasmhost/mcp-wasmhost/config"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/cache"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/lock"
)

// runPull is `mcp-wasmhost pull [PLUGIN...]`: resolve the sources' tags, fetch and
// verify them, and write mcp-wasmhost.lock beside the config. Only pull changes the
// lockfile; a plugin whose pull fails keeps its previous entry and the command fails.
func runPull(ctx context.Context, configPath string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp-wasmhost pull", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mcp-wasmhost [--config FILE] pull [PLUGIN...]\n\nResolves each source = \"oci://...\" to its manifest digest, verifies its signature\nand writes %s beside the config (all source plugins, or those named).\n", lock.FileName)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	cfg, err := config.Load(configPath)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	client, err := registryClient(cfg.Server.Distribution)
	if err != nil {
		return err
	}
	store, err := cache.Open(cfg.Server.Distribution.Cache())
	if err != nil {
		return err
	}
	path := lock.Path(configPath)
	lf, err := lock.Read(path)
	if err != nil {
		return err
	}
	names := fs.Args()
	if !slices.ContainsFunc(cfg.Plugins, func(p config.Plugin) bool { return p.Source != "" }) {
		return fmt.Errorf("pull: no plugin in %s has a source (oci://...)", configPath)
	}
	next := &lock.File{Plugins: map[string]lock.Entry{}}
	var errs []error
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, pc := range cfg.Plugins {
		if pc.Source == "" {
			continue
		}
		prev, had := lf.Plugins[pc.Name]
		if len(names) > 0 && !slices.Contains(names, pc.Name) {
			if had {
				next.Plugins[pc.Name] = prev
			}
			continue
		}
		src, err := source(pc)
		if err == nil {
			var e lock.Entry
			var old *lock.Entry
			if had {
				old = &prev
			}
			if e, err = distrib.PullOrKeep(ctx, distrib.Options{Cache: store, Client: client, Logger: logger}, src, old); err == nil {
				next.Plugins[pc.Name] = e
				if had && prev.Digest != e.Digest {
					logger.Info("plugin updated", "plugin", pc.Name, "source", e.Source, "was", prev.Digest, "now", e.Digest)
				}
				signer := `unverified (verify = "none")`
				if e.Signer != nil {
					signer = e.Signer.String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", pc.Name, e.Source, e.Digest, signer)
				continue
			}
		}
		logger.Error("pull failed", "plugin", pc.Name, "err", err)
		errs = append(errs, err)
		if had {
			next.Plugins[pc.Name] = prev
		}
	}
	tw.Flush()
	for _, n := range names {
		if !slices.ContainsFunc(cfg.Plugins, func(p config.Plugin) bool { return p.Name == n && p.Source != "" }) {
			errs = append(errs, fmt.Errorf("no plugin %q with a source in %s", n, configPath))
		}
	}
	if err := next.Write(path); err != nil {
		return err
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d plugin(s) not pulled: %w", len(errs), errors.Join(errs...))
	}
	return nil
}
