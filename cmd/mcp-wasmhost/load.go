package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/BurntSushi/toml"

	"github.com/mcp-wasmhost/mcp-wasmhost/config"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

// This file is the preamble that call and inspect share: one plugin, given as a
// .wasm file with grants from flags or as a [[plugins]] table of a config file,
// loaded exactly as the server loads it (config validation, pin, worker, limits).

// exitError carries the process's exit code: 1 for a failure, 2 for bad usage.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usage is a command-line mistake: exit code 2.
func usage(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// exitCode is the process exit code for run's error.
func exitCode(err error) int {
	if e, ok := errors.AsType[*exitError](err); ok {
		return e.code
	}
	return 1
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// pluginFlags are the flags that say which plugin to load and what it may use.
type pluginFlags struct {
	config    string
	dirs      listFlag
	env       listFlag
	net       listFlag
	memoryMiB int
	timeout   time.Duration
	trusted   bool
	logLevel  string
}

func (f *pluginFlags) register(fs *flag.FlagSet, grants bool) {
	fs.StringVar(&f.config, "config", "", "take the plugin from this config file (then PLUGIN is its name)")
	fs.IntVar(&f.memoryMiB, "memory-mib", 0, "the plugin's memory_mib (default: the config's, else 64)")
	fs.BoolVar(&f.trusted, "trusted", false, "run the plugin in this process instead of a worker process")
	fs.StringVar(&f.logLevel, "log-level", "warn", "the server's own log level on stderr: debug, info, warn or error")
	if !grants {
		return
	}
	fs.Var(&f.dirs, "dir", "grant a host directory: HOST:GUEST[:ro|:rw] (read-only unless :rw; repeatable)")
	fs.Var(&f.env, "env", "give the guest NAME=VALUE, or NAME from this environment (repeatable)")
	fs.Var(&f.net, "net", "let the guest reach ORIGIN (scheme://host[:port]; an IP literal host is allowed even if private; repeatable)")
	fs.DurationVar(&f.timeout, "timeout", 0, "the plugin's timeout per call (default: the config's, else 30s)")
}

// parseInterleaved parses fs over args, allowing flags after the positional
// arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// pluginConfig returns the config and the index of the plugin that target names:
// a .wasm file (with the flags' grants; the file is pinned to its own digest) or,
// with --config, the name of one of the file's plugins.
func (f *pluginFlags) pluginConfig(target string) (*config.Config, int, error) {
	if f.config != "" {
		if len(f.dirs)+len(f.env)+len(f.net) > 0 {
			return nil, 0, usage("--dir, --env and --net grant nothing with --config: the config's [[plugins]] table holds the grants")
		}
		cfg, err := config.Load(f.config)
		if err != nil {
			return nil, 0, err
		}
		var names []string
		for i := range cfg.Plugins {
			p := &cfg.Plugins[i]
			names = append(names, p.Name)
			if p.Name != target {
				continue
			}
			if f.memoryMiB != 0 {
				p.MemoryMiB = f.memoryMiB
			}
			if f.timeout != 0 {
				p.Timeout.Duration = f.timeout
			}
			p.Trusted = p.Trusted || f.trusted
			return cfg, i, nil
		}
		return nil, 0, usage("%s has no plugin named %q (it has: %s)", f.config, target, strings.Join(names, ", "))
	}
	doc, err := f.fileConfig(target)
	if err != nil {
		return nil, 0, err
	}
	cfg, err := config.Parse(doc, "command line", "")
	if err != nil {
		return nil, 0, err
	}
	return cfg, 0, nil
}

// fileConfig writes the config the flags describe for the .wasm file at path, so that
// the server's own validation checks every value.
func (f *pluginFlags) fileConfig(path string) ([]byte, error) {
	if filepath.Ext(path) != ".wasm" {
		return nil, usage("%s: want a .wasm file (or --config FILE and a plugin name)", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	sum, err := config.FileSHA256(abs)
	if err != nil {
		return nil, err
	}
	p := map[string]any{
		"name": pluginName(path), "prefix": "", "path": abs, "sha256": sum, "trusted": f.trusted,
	}
	if f.memoryMiB != 0 {
		p["memory_mib"] = f.memoryMiB
	}
	if f.timeout != 0 {
		p["timeout"] = f.timeout.String()
	}
	var dirs []map[string]any
	for _, d := range f.dirs {
		dir, err := parseDir(d)
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, dir)
	}
	if dirs != nil {
		p["dirs"] = dirs
	}
	env := map[string]string{}
	var inherit []string
	for _, e := range f.env {
		if name, value, ok := strings.Cut(e, "="); ok {
			env[name] = value
		} else {
			inherit = append(inherit, e)
		}
	}
	if len(env) > 0 {
		p["env"] = env
	}
	if inherit != nil {
		p["inherit_env"] = inherit
	}
	var nets []map[string]any
	for _, origin := range f.net {
		n := map[string]any{"origins": []string{origin}}
		if u, err := url.Parse(origin); err == nil {
			if ip := net.ParseIP(u.Hostname()); ip != nil {
				n["allow_addresses"] = []string{ip.String()}
			}
		}
		nets = append(nets, n)
	}
	if nets != nil {
		p["net"] = nets
	}
	var b strings.Builder
	err = toml.NewEncoder(&b).Encode(map[string]any{
		"server":  map[string]any{"log_level": "warn"},
		"tasks":   map[string]any{"store": config.StoreMemory},
		"plugins": []map[string]any{p},
	})
	return []byte(b.String()), err
}

// parseDir reads HOST:GUEST[:ro|:rw] into a [[plugins.dirs]] table.
func parseDir(s string) (map[string]any, error) {
	parts := strings.Split(s, ":")
	writable := false
	if n := len(parts); n == 3 && (parts[2] == "ro" || parts[2] == "rw") {
		writable = parts[2] == "rw"
		parts = parts[:2]
	}
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return nil, usage("--dir %q: want HOST:GUEST, HOST:GUEST:ro or HOST:GUEST:rw", s)
	}
	host, err := filepath.Abs(parts[0])
	if err != nil {
		return nil, err
	}
	return map[string]any{"host": host, "guest": parts[1], "writable": writable}, nil
}

// pluginName makes a plugin name from a file name: "My_Tool.wasm" is "my-tool".
func pluginName(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), ".wasm")
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(r)
		case b.Len() > 0:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		name = "plugin-" + name
	}
	return strings.TrimRight(name[:min(len(name), 32)], "-")
}

// loadedPlugin is one plugin loaded as the server loads it.
type loadedPlugin struct {
	cfg     *config.Config
	plugin  config.Plugin
	engine  *sandbox.Engine
	catalog *plugins.Catalog
}

// loadPlugin loads the plugin cfg.Plugins[i] with the server's engine, worker
// supervisor and loading code.
func loadPlugin(ctx context.Context, cfg *config.Config, i int, logger *slog.Logger) (*loadedPlugin, error) {
	one := *cfg
	one.Plugins = []config.Plugin{cfg.Plugins[i]}
	if err := checkMessageLimit(&one); err != nil {
		return nil, err
	}
	cacheDir, _ := one.Server.CompilationCacheDir()
	engine, err := sandbox.NewEngine(ctx, sandbox.Options{CacheDir: cacheDir, Logger: logger})
	if err != nil {
		return nil, err
	}
	workers, err := worker.NewSupervisor(worker.Options{CacheDir: cacheDir, GCPercent: 4 * one.Server.GCPercent, Logger: logger,
		ProfileDir: one.Server.WorkerProfileDir})
	if err != nil {
		engine.Close(ctx)
		return nil, err
	}
	catalog, _, err := loadPlugins(ctx, engine, workers, &one, nil, logger)
	if err != nil {
		engine.Close(ctx)
		return nil, err
	}
	return &loadedPlugin{cfg: &one, plugin: one.Plugins[0], engine: engine, catalog: catalog}, nil
}

// Close unloads the plugin (ending its worker processes) and the engine.
func (l *loadedPlugin) Close(ctx context.Context) {
	l.catalog.Close(ctx)
	l.engine.Close(ctx)
}

// stderrLogger is the server's logger for call and inspect: text on stderr.
func stderrLogger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usage("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
