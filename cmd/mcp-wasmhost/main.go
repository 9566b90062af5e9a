// Command mcp-wasmhost is an MCP server whose tools are sandboxed WebAssembly plugins.
//
//	mcp-wasmhost                      serve ./config.toml over stdio
//	mcp-wasmhost --config FILE        serve another config
//	mcp-wasmhost --http 127.0.0.1:8080  serve Streamable HTTP at /mcp instead
//	mcp-wasmhost --log-level debug    override [server] log_level
//	mcp-wasmhost check [--strict]     load the config and every plugin, print a table per
//	                                  plugin and the tools, and fail if anything is
//	                                  refused (--strict: also on a warning)
//	mcp-wasmhost pull [PLUGIN...]     resolve source = "oci://..." plugins, verify their
//	                                  signatures and write mcp-wasmhost.lock
//	mcp-wasmhost push FILE.wasm oci://REGISTRY/REPO:TAG
//	                                  publish a module; prints the digest to sign
//	mcp-wasmhost version              print the version (also --version)
//
// Logs go to stderr, never to stdout, which carries the stdio protocol.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/audit"
	"github.com/mcp-wasmhost/mcp-wasmhost/authn"
	"github.com/mcp-wasmhost/mcp-wasmhost/config"
	"github.com/mcp-wasmhost/mcp-wasmhost/host"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins/manifests"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/boltstore"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/sqlstore"
	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

func main() {
	if worker.IsWorker(os.Args) {
		os.Exit(worker.Main()) // this process runs one untrusted plugin for a server
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-wasmhost:", err)
		os.Exit(exitCode(err))
	}
}

// run is the whole program: main only adds signals and the exit code.
func run(ctx context.Context, args []string, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp-wasmhost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "config.toml", "the config file")
	httpAddr := fs.String("http", "", "serve Streamable HTTP at ADDR/mcp instead of stdio (e.g. 127.0.0.1:8080)")
	logLevel := fs.String("log-level", "", "debug, info, warn or error (default: the config's log_level)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of the server (not of its workers) to FILE until it exits (go tool pprof FILE)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mcp-wasmhost [flags]\n       mcp-wasmhost [flags] check [--strict]\n       mcp-wasmhost [flags] pull [PLUGIN...]\n       mcp-wasmhost [flags] push FILE.wasm oci://REGISTRY/REPO:TAG\n       mcp-wasmhost version\n       mcp-wasmhost call|inspect|new|pin ...   a plugin author's tools (docs/AUTHORING.md)\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *showVersion {
		printVersion(stdout)
		return nil
	}
	if cmd, ok := toolkit[fs.Arg(0)]; ok {
		return cmd(ctx, fs.Args()[1:], stdin, stdout, stderr)
	}
	check, strict := false, false
	switch fs.Arg(0) {
	case "":
	case "check":
		check = true
		var err error
		if strict, err = checkFlags(fs.Args()[1:], stderr); err != nil {
			return err
		}
	case "push":
		return runPush(ctx, *configPath, fs.Args()[1:], stdout, stderr)
	case "pull":
		return runPull(ctx, *configPath, fs.Args()[1:], stdout, stderr)
	case "version":
		printVersion(stdout)
		return nil
	default:
		fs.Usage()
		return fmt.Errorf("unknown command %q", fs.Arg(0))
	}

	cfg, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	if err := checkMessageLimit(cfg); err != nil {
		return err
	}
	if *logLevel != "" {
		cfg.Server.LogLevel = *logLevel
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.Server.LogLevel)); err != nil {
		return fmt.Errorf("log level %q: want debug, info, warn or error", cfg.Server.LogLevel)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	tuneGC(cfg.Server)
	if *cpuProfile != "" && !check {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}

	tel := &telemetry{}
	if !check {
		if tel, err = startTelemetry(ctx, cfg.Server, logger); err != nil {
			return err
		}
		defer tel.stop(context.WithoutCancel(ctx))
	}
	var trail *audit.Log // nil: no audit trail
	if !check {
		if trail, err = openAudit(cfg.Server.Audit, logger); err != nil {
			return err
		}
		// Closed after the server and the HTTP listener (deferred before them):
		// the last tasks' lines, and the last refusals', go in.
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := trail.Close(cctx); err != nil {
				logger.Error("audit trail not closed", "err", err)
			}
		}()
	}
	var guard *authn.Authenticator
	if *httpAddr != "" && !check {
		if err := checkExposure(*httpAddr, cfg.Server.Auth, logger); err != nil {
			return err
		}
		if guard, err = authenticator(cfg.Server.Auth, logger, tel.metrics, trail); err != nil {
			return err
		}
	}

	cacheDir, cacheOn := cfg.Server.CompilationCacheDir()
	engine, err := sandbox.NewEngine(ctx, sandbox.Options{CacheDir: cacheDir, Logger: logger})
	if err != nil {
		return err
	}
	defer engine.Close(context.WithoutCancel(ctx))
	var described *manifests.Cache
	if cacheOn {
		described = openManifests(cacheDir, logger)
	}
	// A worker's live heap is small (one compiled module), so the same percentage
	// would collect after every Go-guest call; workers get four times the server's
	// target (a Go-guest call in a worker: 8.3-9.4 ms at 200, 7.7-7.9 ms at 800; in
	// process 7.2-7.5 ms).
	workers, err := worker.NewSupervisor(worker.Options{CacheDir: cacheDir, GCPercent: 4 * cfg.Server.GCPercent, Logger: logger,
		Events: tel.metrics.Events(), ProfileDir: cfg.Server.WorkerProfileDir})
	if err != nil {
		return err
	}
	configured := len(cfg.Plugins)
	var provenance []provenance
	var unopened []error
	cfg.Plugins, provenance, unopened = openSources(ctx, cfg, *configPath, logger) // source = "oci://...": lockfile and cache only
	if configured > 0 && len(cfg.Plugins) == 0 && !check {
		return fmt.Errorf("no plugin could be loaded: %w", errors.Join(unopened...))
	}
	// The start waits for the first worker of each plugin; the others start after.
	release := workers.Hold()
	loaded, errs := loadEach(ctx, engine, workers, described, cfg, tel, logger)
	release()
	catalog, refused, err := catalogOf(cfg, loaded, errs, logger)
	if err != nil && check {
		printProvenance(stdout, provenance)
		return errors.Join(checkReport(stdout, cfg, loaded, errs, nil, nil, strict), err, errors.Join(unopened...))
	}
	if err != nil {
		return err
	}
	tel.live.catalog.Store(catalog)
	defer catalog.Close(context.WithoutCancel(ctx))
	refused = append(unopened, refused...)
	if check {
		printProvenance(stdout, provenance)
		return checkReport(stdout, cfg, loaded, errs, catalog, append(refused, host.Vet(catalog)...), strict)
	}

	store, err := openStore(ctx, cfg.Tasks, logger)
	if err != nil {
		return err
	}
	defer store.Close()
	// Servers sharing a task store share the request-state key and used nonces too,
	// so that a state one issued is accepted once by any of them.
	var stateKey []byte
	var nonces host.Nonces
	var createWindow time.Duration
	if shared, ok := store.(*sqlstore.Store); ok {
		createWindow = sqlstore.CreateWindow
		if stateKey, err = host.LoadStateKey(filepath.Join(cfg.Tasks.DataDir, "state.key")); err != nil {
			return err
		}
		nonces = shared
	}
	srv, err := host.New(catalog, host.Options{Audit: trail, Name: cfg.Server.Name, Version: version(), Logger: logger,
		StateKey: stateKey, Nonces: nonces,
		Grants:             grants(guard),
		MaxParked:          cfg.Server.Auth.MaxParked,
		MaxToolConcurrency: cfg.Server.Auth.MaxToolConcurrency,
		Metrics:            tel.metrics,
		Tracer:             tel.tracer,
		ReportMeta:         cfg.Server.ReportMeta,
		ResumableStreams:   cfg.Server.ResumableStreams,
		MaxMessageBytes:    cfg.Server.MaxMessageBytes,
		BodyReadTimeout:    cfg.Server.BodyReadTimeout.Duration,
		MaxSessions:        cfg.Server.MaxSessions,
		SessionIdleTimeout: cfg.Server.SessionIdleTimeout.Duration,
		Tasks: tasks.Options{
			Store:          store,
			DefaultTTL:     cfg.Tasks.DefaultTTL.Duration,
			MaxTTL:         cfg.Tasks.MaxTTL.Duration,
			PollInterval:   cfg.Tasks.PollInterval.Duration,
			MaxPerOwner:    cfg.Tasks.MaxPerClient,
			MaxShared:      cfg.Tasks.MaxAnonymous,
			SweepEvery:     cfg.Tasks.SweepInterval.Duration,
			MaxResultBytes: cfg.Tasks.MaxResultBytes,
			MaxStoredTasks: cfg.Tasks.MaxStoredTasks,
			MaxStoreBytes:  int64(cfg.Tasks.MaxStoreMiB) << 20,
			CreateWindow:   createWindow,

			MaxLogBytes:        cfg.Tasks.MaxLogKiB << 10,
			MaxCheckpointBytes: cfg.Tasks.MaxCheckpointKiB << 10,
			MaxResumes:         cfg.Tasks.MaxResumes,
		}})
	if err != nil {
		return err
	}
	defer srv.Close(context.WithoutCancel(ctx))
	if *httpAddr != "" {
		return serveHTTP(ctx, srv, guard, *httpAddr, logger)
	}
	logger.Info("serving over stdio", "tools", len(catalog.Tools()))
	return srv.ServeStdio(ctx, stdin, stdout)
}

// checkMessageLimit refuses a plugin whose max_input_bytes no client message could
// carry: [server] max_message_bytes (0: the host's default) must be larger.
func checkMessageLimit(cfg *config.Config) error {
	limit := cfg.Server.MaxMessageBytes
	if limit == 0 {
		limit = host.DefaultMaxMessageBytes
	}
	var errs []error
	for _, p := range cfg.Plugins {
		if p.MaxInputBytes >= limit {
			errs = append(errs, fmt.Errorf("plugin %q: max_input_bytes %d is not below [server] max_message_bytes %d: raise max_message_bytes",
				p.Name, p.MaxInputBytes, limit))
		}
	}
	return errors.Join(errs...)
}

// tuneGC applies [server] gc_percent and memory_limit_mib, unless the Go runtime's own
// GOGC / GOMEMLIMIT environment variables say otherwise.
func tuneGC(s config.Server) {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(s.GCPercent)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set && s.MemoryLimitMiB > 0 {
		debug.SetMemoryLimit(int64(s.MemoryLimitMiB) << 20)
	}
}

// startCPUProfile profiles the server's CPU into path until the returned function is
// called (at exit). The file is created mode 0600: a profile shows the server's code
// paths and timing, not data, but it is the operator's.
func startCPUProfile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpu-profile %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// report prints the tools a check found and fails if any plugin was refused.
func report(w io.Writer, c *plugins.Catalog, refused []error) error {
	for _, t := range c.Tools() {
		desc, _, _ := strings.Cut(t.Description, "\n")
		fmt.Fprintf(w, "%-32s %-9s %s\n", t.Name, t.TaskSupport, desc)
	}
	for _, p := range c.Prompts() {
		fmt.Fprintf(w, "%-32s %-9s %s\n", p.Name, "prompt", firstLine(p.Description))
	}
	for _, r := range c.Resources() {
		fmt.Fprintf(w, "%-32s %-9s %s\n", r.URI, "resource", firstLine(r.Description))
	}
	for _, t := range c.Templates() {
		fmt.Fprintf(w, "%-32s %-9s %s\n", t.URITemplate, "template", firstLine(t.Description))
	}
	if len(refused) > 0 {
		return fmt.Errorf("%d plugin(s) refused: %w", len(refused), errors.Join(refused...))
	}
	return nil
}

// loadPlugins loads every configured plugin, in parallel (tel may be nil: no
// telemetry), describing each afresh. A plugin that fails to load
// is refused and logged with the reason; the server serves the others. It fails only
// when plugins were configured and none loaded.
func loadPlugins(ctx context.Context, e *sandbox.Engine, workers *worker.Supervisor, cfg *config.Config, tel *telemetry, logger *slog.Logger) (*plugins.Catalog, []error, error) {
	loaded, errs := loadEach(ctx, e, workers, nil, cfg, tel, logger)
	return catalogOf(cfg, loaded, errs, logger)
}

// openManifests opens the cache of plugins' describes beside the compilation cache
// in dir. A cache that cannot be used is logged, and every plugin is described.
func openManifests(dir string, logger *slog.Logger) *manifests.Cache {
	exe, err := os.Executable()
	var host string
	if err == nil {
		host, err = manifests.HostID(exe)
	}
	var c *manifests.Cache
	if err == nil {
		c, err = manifests.Open(manifests.Options{Dir: filepath.Join(dir, "manifests"), Host: host, Logger: logger})
	}
	if err != nil {
		logger.Warn("plugins are described at every start", "err", err)
		return nil
	}
	return c
}

// loadEach loads every configured plugin, in parallel: loaded[i] is cfg.Plugins[i],
// or nil and errs[i] says why it was refused, starting with where the config
// declares it ("config.toml:12: ..."). described caches their describes; nil
// describes each.
func loadEach(ctx context.Context, e *sandbox.Engine, workers *worker.Supervisor, described *manifests.Cache, cfg *config.Config, tel *telemetry, logger *slog.Logger) ([]*plugins.Plugin, []error) {
	loaded := make([]*plugins.Plugin, len(cfg.Plugins))
	errs := make([]error, len(cfg.Plugins))
	// Plugins load in parallel, except those pinned to the same file, which load one
	// after another: wazero v1.12.0 publishes a module read from its on-disk cache
	// before finishing it, so a second Runtime loading the same module at that moment
	// can crash (index out of range in NewFunction; seen 1 in 40 starts of a config
	// with one .wasm under two prefixes).
	byDigest := map[string][]int{}
	var digests []string
	for i, pc := range cfg.Plugins {
		if _, seen := byDigest[pc.SHA256]; !seen {
			digests = append(digests, pc.SHA256)
		}
		byDigest[pc.SHA256] = append(byDigest[pc.SHA256], i)
	}
	var wg sync.WaitGroup
	for _, d := range digests {
		wg.Go(func() {
			for _, i := range byDigest[d] {
				pc := cfg.Plugins[i]
				start := time.Now()
				spec := pluginSpec(pc)
				spec.Manifests = described
				if !pc.Trusted {
					spec.Workers = workers
				}
				spec.Net, errs[i] = netClient(pc, tel, logger)
				if errs[i] == nil {
					loaded[i], errs[i] = plugins.Load(ctx, e, spec)
				}
				if errs[i] == nil {
					logger.Info("plugin loaded", "plugin", pc.Name, "tools", len(loaded[i].Tools), "runs", runsIn(loaded[i]),
						"took", time.Since(start).Round(time.Millisecond))
					if len(loaded[i].Tools) == 0 {
						logger.Warn("plugin declares no tools", "plugin", pc.Name, "where", pc.Where, "hint", initRule)
					}
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			continue
		}
		where := cfg.Plugins[i].Where
		if _, ok := errors.AsType[*sandbox.MemoryTooSmallError](err); ok {
			where = cfg.Plugins[i].WhereKey("memory_mib")
		}
		errs[i] = fmt.Errorf("%s: %w", where, err)
	}
	return loaded, errs
}

// catalogOf logs the refused plugins and makes a catalog of the others.
func catalogOf(cfg *config.Config, loaded []*plugins.Plugin, errs []error, logger *slog.Logger) (*plugins.Catalog, []error, error) {
	var ok []*plugins.Plugin
	var refused []error
	for i, p := range loaded {
		if errs[i] != nil {
			logger.Error("plugin refused", "plugin", cfg.Plugins[i].Name, "err", errs[i])
			refused = append(refused, errs[i])
			continue
		}
		ok = append(ok, p)
	}
	if len(cfg.Plugins) > 0 && len(ok) == 0 {
		return nil, nil, fmt.Errorf("no plugin could be loaded: %w", errors.Join(errs...))
	}
	c, err := plugins.NewCatalog(ok)
	return c, refused, err
}

func runsIn(p *plugins.Plugin) string {
	if p.Isolated {
		return "worker process"
	}
	return "in process (trusted)"
}

// taskStore is a tasks.Store that is closed when the server stops.
type taskStore interface {
	tasks.Store
	Close() error
}

type memoryStore struct{ *tasks.MemoryStore }

func (memoryStore) Close() error { return nil }

// openStore opens the configured task store. On "sqlite" this process becomes an
// instance of a store that the other local servers on the same data_dir share, and
// on a PostgreSQL URL one of the replicas sharing that database; Close ends the
// instance.
func openStore(ctx context.Context, c config.Tasks, logger *slog.Logger) (taskStore, error) {
	switch c.Store {
	case config.StoreMemory:
		return memoryStore{tasks.NewMemoryStore()}, nil
	case config.StoreBolt:
		return boltstore.Open(filepath.Join(c.DataDir, "tasks.db"))
	}
	if config.IsPostgres(c.Store) {
		return sqlstore.OpenPostgres(ctx, c.Store, sqlstore.Options{Logger: logger})
	}
	return sqlstore.Open(ctx, filepath.Join(c.DataDir, "tasks.sqlite"), sqlstore.Options{Logger: logger})
}

func pluginSpec(pc config.Plugin) plugins.Spec {
	env := map[string]string{}
	for _, name := range pc.InheritEnv {
		if v, ok := os.LookupEnv(name); ok {
			env[name] = v
		}
	}
	for k, v := range pc.Env {
		env[k] = v
	}
	dirs := make([]sandbox.Dir, len(pc.Dirs))
	for i, d := range pc.Dirs {
		dirs[i] = sandbox.Dir{Host: d.Host, Guest: d.Guest, Writable: d.Writable}
	}
	s := plugins.Spec{
		Name: pc.Name, Path: pc.Path, SHA256: pc.SHA256,
		Limits: sandbox.Limits{MemoryMiB: pc.MemoryMiB, Timeout: pc.Timeout.Duration,
			MaxInputBytes: pc.MaxInputBytes, MaxOutputBytes: pc.MaxOutputBytes},
		Grants: sandbox.Grants{Env: env, Dirs: dirs},
		Admission: plugins.Admission{MaxConcurrent: pc.MaxConcurrent, MaxQueued: pc.MaxQueued,
			QueueTimeout: pc.QueueTimeout.Duration},
		Processes:    pc.Workers,
		InputTimeout: pc.InputTimeout.Duration,
	}
	if pc.Prefix != nil {
		s.Prefix, s.Unprefixed = *pc.Prefix, *pc.Prefix == ""
	}
	return s
}

func serveHTTP(ctx context.Context, srv *host.Server, guard *authn.Authenticator, addr string, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	handler := srv.HTTPHandler()
	if guard != nil {
		handler = guard.Wrap(handler)
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	hs.RegisterOnShutdown(srv.EndListens) // a listen's response ends with its result
	logger.Info("serving Streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp")
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil {
		hs.Close()
	}
	<-done
	return nil
}
