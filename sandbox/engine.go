package sandbox

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox/rootfs"
)

// ABIVersion is the guest ABI this host implements (docs/ABI.md).
const ABIVersion = 1

// Names of the exports the ABI requires.
const (
	exportABIVersion = "mcpwh_abi_version"
	exportDescribe   = "mcpwh_describe"
	exportCall       = "mcpwh_call"
)

// Options configures an [Engine]. The zero value is valid.
type Options struct {
	// CacheDir is where compiled code is cached across restarts; "" keeps the cache in
	// memory only, so every start compiles every plugin again.
	CacheDir string
	// Logger receives guest stdout/stderr and log lines; nil discards them.
	Logger *slog.Logger
}

// Engine owns what plugins share: the compilation cache and the logger. It is safe for
// concurrent use.
type Engine struct {
	cache    wazero.CompilationCache
	logger   *slog.Logger
	releaser *releaser
	pool     *memoryPool
}

// NewEngine creates an engine. Close it to release the compilation cache.
func NewEngine(ctx context.Context, opts Options) (*Engine, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cache := wazero.NewCompilationCache()
	if opts.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("open compilation cache %s: %w", opts.CacheDir, err)
		}
		cache = c
	}
	pool := &memoryPool{}
	return &Engine{cache: cache, logger: logger, releaser: newReleaser(pool), pool: pool}, nil
}

// Close releases the compilation cache. Close every Module first.
func (e *Engine) Close(ctx context.Context) error {
	e.releaser.close()
	e.pool.drain()
	return e.cache.Close(ctx)
}

// Releases returns how many times the engine has given memory back to the operating
// system after a burst of calls.
func (e *Engine) Releases() int64 { return e.releaser.releases.Load() }

// Limits bound one plugin's calls.
type Limits struct {
	MemoryMiB      int           // memory ceiling of one instance, linear memory and tables; 0 means 64
	Timeout        time.Duration // wall-clock time of one call; 0 means 30s
	MaxInputBytes  int           // the call input document; 0 means 1 MiB
	MaxOutputBytes int           // the output document; 0 means 1 MiB
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.MemoryMiB <= 0 {
		l.MemoryMiB = 64
	}
	if l.Timeout <= 0 {
		l.Timeout = 30 * time.Second
	}
	if l.MaxInputBytes <= 0 {
		l.MaxInputBytes = 1 << 20
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = 1 << 20
	}
	return l
}

// Dir is a host directory mounted into the guest.
type Dir struct {
	Host     string // absolute host path
	Guest    string // absolute guest path, such as "/data"
	Writable bool   // false mounts it read-only
}

// Grants is what a guest may reach beyond the ABI. The zero value grants nothing.
type Grants struct {
	Env  map[string]string // environment variables, exactly as given
	Dirs []Dir
}

// Spec describes a plugin to load.
type Spec struct {
	Name   string // used in messages and logs
	Wasm   []byte
	Limits Limits
	Grants Grants
	// VersionKnown says that this host has already seen these bytes report [ABIVersion]
	// (a cached describe, package plugins/manifests): Load then compiles the module and
	// checks its imports and exports as always, but runs none of its code. false runs
	// mcpwh_abi_version once, in a fresh instance.
	VersionKnown bool
}

// Module is one loaded plugin: compiled once, and every call starts from a fresh
// instance's state (kept.go). It is safe for concurrent use.
type Module struct {
	name     string
	limits   Limits
	logger   *slog.Logger
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
	config   wazero.ModuleConfig
	mounts   []*rootfs.FS // the granted directories, closed after the runtime
	memory   uint64       // bytes an instance's linear memory may grow to: the limit less its tables
	releaser *releaser    // the engine's
	pool     *memoryPool  // the engine's
	kept     keptInstances

	instances  atomic.Int64 // created so far
	live       atomic.Int64 // not yet closed
	liveMemory atomic.Int64 // bytes of linear memory the live instances hold
}

// Load compiles a plugin, checks its imports and exports against the ABI, and checks
// its ABI version by running it once (unless spec.VersionKnown). Errors name the
// plugin and say what is wrong.
func (e *Engine) Load(ctx context.Context, spec Spec) (_ *Module, err error) {
	limits := spec.Limits.WithDefaults()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCompilationCache(e.cache).
		WithMemoryLimitPages(uint32(limits.MemoryMiB)*16).
		// A context must be able to stop a guest that never calls the host. It costs
		// loop-heavy guests time (docs/DESIGN.md#stopping-a-guest-that-never-calls-the-host);
		// correctness comes first.
		WithCloseOnContextDone(true))
	var mounts []*rootfs.FS
	defer func() {
		if err != nil {
			_ = rt.Close(ctx)
			_ = closeMounts(mounts)
		}
	}()

	wasm, tables, err := boundTables(spec.Wasm)
	if err != nil {
		return nil, fmt.Errorf("plugin %q is not a valid WebAssembly module: %w", spec.Name, err)
	}
	if err := CheckInitialMemory(spec.Name, wasm, limits.MemoryMiB); err != nil {
		return nil, err
	}
	wasm, plan, whyFresh := restorable(wasm) // kept.go
	if len(spec.Grants.Dirs) > 0 {
		plan, whyFresh = nil, errors.New("it has directory grants")
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("plugin %q is not a valid WebAssembly module: %w", spec.Name, err)
	}
	wasi, err := wasiModule(ctx, rt)
	if err != nil {
		return nil, fmt.Errorf("compile WASI for plugin %q: %w", spec.Name, err)
	}
	host, err := hostModule(rt).Compile(ctx)
	if err != nil {
		return nil, fmt.Errorf("compile host functions for plugin %q: %w", spec.Name, err)
	}
	provided := map[string]wazero.CompiledModule{wasi_snapshot_preview1.ModuleName: wasi, hostModuleName: host}
	if err := checkImports(compiled, provided); err != nil {
		return nil, fmt.Errorf("plugin %q: %w", spec.Name, err)
	}
	if err := checkExports(compiled); err != nil {
		return nil, fmt.Errorf("plugin %q: %w", spec.Name, err)
	}
	limitBytes := uint64(limits.MemoryMiB) << 20
	mem := compiled.ExportedMemories()["memory"]
	if err := checkTables(tables, uint64(mem.Min())<<16, limitBytes); err != nil {
		return nil, fmt.Errorf("plugin %q: %w", spec.Name, err)
	}
	memory := limitBytes - tablesBytes(tables)
	if max, ok := mem.Max(); ok {
		memory = min(memory, uint64(max)<<16) // reserve no more than the guest may use
	}
	for _, c := range []wazero.CompiledModule{wasi, host} {
		if _, err := rt.InstantiateModule(ctx, c, wazero.NewModuleConfig()); err != nil {
			return nil, fmt.Errorf("instantiate host modules for plugin %q: %w", spec.Name, err)
		}
	}
	config, mounts, err := moduleConfig(spec.Grants)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %w", spec.Name, err)
	}
	m := &Module{
		name:     spec.Name,
		limits:   limits,
		logger:   e.logger.With("plugin", spec.Name),
		runtime:  rt,
		compiled: compiled,
		config:   config,
		mounts:   mounts,
		memory:   memory,
		releaser: e.releaser,
		pool:     e.pool,
		kept:     keptInstances{plan: plan},
	}
	if whyFresh != nil {
		m.logger.Debug("instances of this plugin are not reused", slog.String("reason", whyFresh.Error()))
	}
	if spec.VersionKnown {
		return m, nil
	}
	if err := m.checkVersion(ctx); err != nil {
		return nil, fmt.Errorf("plugin %q: %w", spec.Name, err)
	}
	return m, nil
}

// Limits returns the plugin's limits with defaults filled in.
func (m *Module) Limits() Limits { return m.limits }

// Instances returns how many times the module's code has been started so far (the
// version check, describes and calls): each in a fresh instance or in a kept one
// restored to the starting state ([Module.Reused] counts those).
func (m *Module) Instances() int64 { return m.instances.Load() + m.kept.reused.Load() }

// Live returns how many instances of the module serve a call now; idle kept instances
// (kept.go) are not counted.
func (m *Module) Live() int64 { return m.live.Load() }

// LiveMemory returns the bytes of linear memory the live instances hold now (a
// kept instance between calls is not live; nor is a reservation in the pool).
func (m *Module) LiveMemory() int64 { return m.liveMemory.Load() }

// Close releases the module's runtime and its granted directories. Calls still
// running end with an error.
func (m *Module) Close(ctx context.Context) error {
	for _, in := range m.kept.drain() {
		_ = in.mod.Close(ctx)
		m.pool.put(in.mem)
	}
	err := m.runtime.Close(ctx)
	return errors.Join(err, closeMounts(m.mounts))
}

// moduleConfig builds the configuration every instance starts from. Granted
// directories are mounted through rootfs, which keeps a guest inside them even where
// symbolic links point out (wazero's own dir mounts follow those, issue #2321); the
// mounts it returns must be closed after the runtime.
func moduleConfig(g Grants) (wazero.ModuleConfig, []*rootfs.FS, error) {
	var mounts []*rootfs.FS
	fail := func(err error) (wazero.ModuleConfig, []*rootfs.FS, error) {
		_ = closeMounts(mounts)
		return nil, nil, err
	}
	fsc := wazero.NewFSConfig()
	for _, d := range g.Dirs {
		info, err := os.Stat(d.Host)
		if err != nil {
			return fail(fmt.Errorf("directory grant %s: %w", d.Host, err))
		}
		if !info.IsDir() {
			return fail(fmt.Errorf("directory grant %s: %w", d.Host, fs.ErrInvalid))
		}
		mount, err := rootfs.New(d.Host, d.Writable)
		if err != nil {
			return fail(fmt.Errorf("directory grant %s: %w", d.Host, err))
		}
		mounts = append(mounts, mount)
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(mount, d.Guest)
	}
	c := wazero.NewModuleConfig().
		WithName(""). // anonymous, so that many instances can live at once
		WithStartFunctions("_initialize").
		WithRandSource(rand.Reader).
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep().
		WithFSConfig(fsc)
	keys := make([]string, 0, len(g.Env))
	for k := range g.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		c = c.WithEnv(k, g.Env[k])
	}
	return c, mounts, nil
}

func closeMounts(mounts []*rootfs.FS) error {
	var errs []error
	for _, m := range mounts {
		errs = append(errs, m.Close())
	}
	return errors.Join(errs...)
}

func checkImports(m wazero.CompiledModule, provided map[string]wazero.CompiledModule) error {
	for _, mem := range m.ImportedMemories() {
		mod, name, _ := mem.Import()
		return fmt.Errorf("imports memory %s.%s, but the host provides no memory; export one instead", mod, name)
	}
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		host, ok := provided[mod]
		if !ok {
			return fmt.Errorf("imports %s.%s, but the host provides no module %q (it provides %s and %s)",
				mod, name, mod, wasi_snapshot_preview1.ModuleName, hostModuleName)
		}
		want, ok := host.ExportedFunctions()[name]
		if !ok {
			return fmt.Errorf("imports %s.%s, which the host does not provide", mod, name)
		}
		if !sameSignature(f, want) {
			return fmt.Errorf("imports %s.%s with signature %s, but the host's is %s",
				mod, name, signature(f), signature(want))
		}
	}
	return nil
}

func checkExports(m wazero.CompiledModule) error {
	if _, ok := m.ExportedMemories()["memory"]; !ok {
		return fmt.Errorf("does not export its memory as %q", "memory")
	}
	fns := m.ExportedFunctions()
	if _, ok := fns["_start"]; ok {
		return fmt.Errorf("exports _start: it is a WASI command, but plugins must be reactors (clang -mexec-model=reactor, go build -buildmode=c-shared)")
	}
	for _, name := range []string{exportABIVersion, exportDescribe, exportCall} {
		f, ok := fns[name]
		if !ok {
			return fmt.Errorf("does not export %s: it was not built for the mcp-wasmhost guest ABI (docs/ABI.md)", name)
		}
		if len(f.ParamTypes()) != 0 || !slices.Equal(f.ResultTypes(), []api.ValueType{api.ValueTypeI32}) {
			return fmt.Errorf("exports %s with signature %s, want () -> (i32)", name, signature(f))
		}
	}
	if f, ok := fns["_initialize"]; ok && (len(f.ParamTypes()) != 0 || len(f.ResultTypes()) != 0) {
		return fmt.Errorf("exports _initialize with signature %s, want () -> ()", signature(f))
	}
	return nil
}

func sameSignature(a, b api.FunctionDefinition) bool {
	return slices.Equal(a.ParamTypes(), b.ParamTypes()) && slices.Equal(a.ResultTypes(), b.ResultTypes())
}

func signature(f api.FunctionDefinition) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return strings.Join(s, ", ")
	}
	return "(" + names(f.ParamTypes()) + ") -> (" + names(f.ResultTypes()) + ")"
}

func (m *Module) checkVersion(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.limits.Timeout)
	defer cancel()
	st := newCallState(nil, nil, m.limits)
	ctx = withCallState(ctx, st)
	in, err := m.instantiate(ctx, st)
	if err != nil {
		return m.guestError(ctx, st, err)
	}
	res, err := callExport(ctx, in, exportABIVersion)
	m.finish(ctx, st, in, err == nil && ctx.Err() == nil)
	if err != nil {
		return m.guestError(ctx, st, err)
	}
	if v := int32(res[0]); v != ABIVersion {
		return fmt.Errorf("built for guest ABI version %d, but this host implements version %d", v, ABIVersion)
	}
	return nil
}
