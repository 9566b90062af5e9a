package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"

	"github.com/mcp-wasmhost/mcp-wasmhost/config"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/cache"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/lock"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/oci"
	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/verify"
)

// provenance is where one OCI plugin came from, for check.
type provenance struct {
	Plugin, Source, Digest string
	Signer                 string // "" when not verified
	Pulled                 string
}

// source turns a plugin's config into a distrib.Source, reading its policy's files.
func source(pc config.Plugin) (distrib.Source, error) {
	ref, err := oci.ParseRef(pc.Source)
	if err != nil {
		return distrib.Source{}, fmt.Errorf("plugin %q: %w", pc.Name, err)
	}
	src := distrib.Source{Name: pc.Name, Ref: ref}
	v := pc.Verify
	switch {
	case v.None:
	case v.Key != "":
		b, err := os.ReadFile(v.Key)
		if err != nil {
			return distrib.Source{}, fmt.Errorf("plugin %q: verify.key: %w", pc.Name, err)
		}
		src.Policy = &verify.Policy{KeyPEM: b}
	default:
		b, err := os.ReadFile(v.TrustedRoot)
		if err != nil {
			return distrib.Source{}, fmt.Errorf("plugin %q: verify.trusted_root: %w", pc.Name, err)
		}
		src.Policy = &verify.Policy{Identity: v.Identity, Issuer: v.Issuer, TrustedRootJSON: b}
	}
	return src, nil
}

// openSources resolves every plugin with a source from the lockfile and the cache,
// without the network: each becomes a plugin with the cached module's path and sha256.
// A source that cannot be opened is refused (logged, returned) and the others are
// served. It returns the plugins to load and the provenance of the opened sources.
func openSources(ctx context.Context, cfg *config.Config, configPath string, logger *slog.Logger) ([]config.Plugin, []provenance, []error) {
	var out []config.Plugin
	var prov []provenance
	var refused []error
	var lf *lock.File
	var store *cache.Cache
	var setupErr error
	for _, pc := range cfg.Plugins {
		if pc.Source == "" {
			out = append(out, pc)
			continue
		}
		if lf == nil && setupErr == nil {
			if lf, setupErr = lock.Read(lock.Path(configPath)); setupErr == nil {
				store, setupErr = cache.Open(cfg.Server.Distribution.Cache())
			}
		}
		err := setupErr
		var r distrib.Resolved
		var e lock.Entry
		if err == nil {
			var src distrib.Source
			if src, err = source(pc); err == nil {
				var locked *lock.Entry
				if le, ok := lf.Plugins[pc.Name]; ok {
					e, locked = le, &le
				}
				r, err = distrib.Open(ctx, distrib.Options{Cache: store, Logger: logger}, src, locked)
			}
		}
		if err != nil {
			logger.Error("plugin refused", "plugin", pc.Name, "err", err)
			refused = append(refused, err)
			continue
		}
		pc.Path, pc.SHA256 = r.Path, r.SHA256
		out = append(out, pc)
		p := provenance{Plugin: pc.Name, Source: e.Source, Digest: e.Digest, Pulled: e.Pulled.Format("2006-01-02T15:04:05Z")}
		if r.Signer != nil {
			p.Signer = r.Signer.String()
		}
		prov = append(prov, p)
	}
	return out, prov, refused
}

// printProvenance writes check's provenance lines: one per OCI plugin (source, pinned
// digest, verified signer, time pulled).
func printProvenance(w io.Writer, prov []provenance) {
	if len(prov) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PLUGIN\tSOURCE\tDIGEST\tSIGNER\tPULLED")
	for _, p := range prov {
		signer := p.Signer
		if signer == "" {
			signer = `unverified (verify = "none")`
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Plugin, p.Source, p.Digest, signer, p.Pulled)
	}
	tw.Flush()
}

// registryClient builds the registry client from [server.distribution].
func registryClient(d config.Distribution) (*oci.Client, error) {
	opts := oci.Options{DockerConfig: d.DockerConfigFile()}
	if _, err := os.Stat(opts.DockerConfig); errors.Is(err, os.ErrNotExist) {
		opts.DockerConfig = ""
	}
	for _, r := range d.Registries {
		pw, err := r.Password()
		if err != nil {
			return nil, err
		}
		opts.Registries = append(opts.Registries, oci.Registry{Host: r.Host, Username: r.Username, Password: pw, PlainHTTP: r.PlainHTTP})
	}
	return oci.NewClient(opts)
}
