package config

import (
	"encoding"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Defaults and limits. A zero in the file means the default; anything outside
// the range is refused rather than clamped, so the operator sees the mistake.
const (
	DefaultServerName = "mcp-wasmhost"
	DefaultLogLevel   = "info"

	// CacheOff as cache_dir turns the on-disk compilation cache off.
	CacheOff = "off"

	DefaultMemoryMiB = 64
	MaxMemoryMiB     = 4096 // 65536 Wasm pages: all a wasm32 module can address.

	DefaultTimeout = 30 * time.Second
	MinTimeout     = time.Millisecond
	MaxTimeout     = 24 * time.Hour

	DefaultMaxIOBytes = 1 << 20  // max_input_bytes and max_output_bytes
	MaxIOBytes        = 64 << 20 // max_input_bytes and max_output_bytes

	DefaultGCPercent = 200

	DefaultTaskTTL      = time.Hour
	DefaultMaxTaskTTL   = 24 * time.Hour
	MinTaskTTL          = time.Second
	MaxTaskTTL          = 30 * 24 * time.Hour
	DefaultPollInterval = time.Second
	DefaultMaxPerClient = 64
	DefaultMaxAnonymous = 256

	DefaultMaxResultBytes = 16 << 20
	DefaultMaxStoredTasks = 100_000
	DefaultMaxStoreMiB    = 1024

	maxPluginName = 32

	// Admission and worker pool ranges; their defaults live with their owners
	// (plugins.Admission, worker.DefaultProcesses).
	MaxConcurrentLimit = 1024    // max_concurrent
	MaxQueuedLimit     = 100_000 // max_queued
	MaxWorkers         = 16      // workers
)

// Config is the whole of config.toml.
//
// The zero Config is a server with default settings and no tools.
type Config struct {
	Server Server `toml:"server"`
	// Tasks holds the [tasks] table: how MCP Tasks are kept.
	Tasks Tasks `toml:"tasks"`
	// Plugins are the [[plugins]] tables, in file order. Nil or empty means
	// the server offers no tools.
	Plugins []Plugin `toml:"plugins"`
}

// Server holds the [server] table.
type Server struct {
	// Name is reported to clients as serverInfo.name.
	// "" means DefaultServerName.
	Name string `toml:"name"`
	// LogLevel is one of "debug", "info", "warn" or "error" (lower case).
	// "" means DefaultLogLevel.
	LogLevel string `toml:"log_level"`
	// CacheDir is where wazero keeps compiled modules between runs, and
	// (in its manifests/ folder) what each plugin described (package
	// plugins/manifests). Use
	// [Server.CompilationCacheDir] rather than reading it directly.
	// "" means a directory under os.UserCacheDir (see CompilationCacheDir);
	// CacheOff ("off") means no on-disk cache (write "./off" for a directory
	// of that name). Load and Parse replace "" with the default and make a
	// relative path absolute.
	CacheDir string `toml:"cache_dir"`
	// GCPercent is the Go garbage collector's target (debug.SetGCPercent),
	// 10..10000: the heap may grow this many percent over the live heap before a
	// collection. Every call allocates a fresh guest memory, so collections are
	// frequent; a higher target trades memory for speed. Worker processes use
	// four times this target. 0 means DefaultGCPercent. A GOGC environment
	// variable overrides it in the server process.
	GCPercent int `toml:"gc_percent"`
	// MemoryLimitMiB is a soft limit on the Go heap (debug.SetMemoryLimit),
	// 16..1048576: near it the collector runs as often as needed, whatever
	// GCPercent says. 0 means no limit. A GOMEMLIMIT environment variable
	// overrides it.
	MemoryLimitMiB int `toml:"memory_limit_mib"`
	// ResumableStreams makes Streamable HTTP resumable (MCP 2025-11-25): what the
	// server sends is kept for replay after Last-Event-ID, every SSE response opens
	// with a priming event id, and plugins may close a call's stream early
	// (close_stream). false means off: TypeScript SDK 1.x clients take an error
	// response on a resumable stream for a lost stream and reconnect, failing with
	// 409 Conflict (typescript-sdk pull request #2638 fixes it).
	ResumableStreams bool `toml:"resumable_streams"`
	// MaxMessageBytes caps one JSON-RPC message from a client: a stdio line or
	// a Streamable HTTP POST body, 65536..MaxIOBytes*2. Larger ones are
	// refused with an error answer and the server goes on. It must be above
	// every plugin's max_input_bytes (the command checks, as only it knows the
	// host's default). 0 means host.DefaultMaxMessageBytes (8 MiB).
	MaxMessageBytes int `toml:"max_message_bytes"`
	// BodyReadTimeout bounds reading one Streamable HTTP POST body, 10ms..1h;
	// a client still sending after it gets 408 and its connection is closed.
	// 0 means host.DefaultBodyReadTimeout (30s).
	BodyReadTimeout Duration `toml:"body_read_timeout"`
	// MaxSessions caps the live Streamable HTTP sessions, 1..1000000; an
	// initialize beyond it is refused with HTTP 503. 0 means
	// host.DefaultMaxSessions (1000).
	MaxSessions int `toml:"max_sessions"`
	// SessionIdleTimeout closes a Streamable HTTP session that sent no request
	// for this long, 1s..720h. 0 means host.DefaultSessionIdleTimeout (1h).
	SessionIdleTimeout Duration `toml:"session_idle_timeout"`
	// Auth is the [server.auth] table: who may call what over HTTP (auth.go).
	Auth Auth `toml:"auth"`
	// Audit is the [server.audit] table: the audit trail (audit.go).
	Audit Audit `toml:"audit"`
	// Distribution is the [server.distribution] table: plugins from OCI registries
	// (distribution.go).
	Distribution Distribution `toml:"distribution"`
	// Metrics is where Prometheus metrics are served, "host:port" (path /metrics).
	// The listener has no authentication: keep it on loopback or a private
	// network. "" means no metrics (and no cost per call).
	Metrics string `toml:"metrics"`
	// ReportMeta adds each call's resource report (queue, instantiate and run time,
	// CPU, peak memory, host calls) to the result's _meta under
	// "io.github.mcp-wasmhost/report". false means the report goes only to the
	// metrics and the debug log.
	ReportMeta bool `toml:"report_meta"`
	// Tracing is the [server.tracing] table (telemetry.go).
	Tracing Tracing `toml:"tracing"`
	// WorkerProfileDir, an existing directory, makes every worker process write
	// a CPU profile (runtime/pprof) of its life to <plugin>-<pid>.cpu.pprof there
	// when it exits (a killed worker writes none); for finding where a worker's
	// time goes, not for production. Load and Parse make a relative path
	// absolute. "" means no profiles.
	WorkerProfileDir string `toml:"worker_profile_dir"`
}

// CompilationCacheDir reports where compiled modules are cached on disk, and
// whether they are cached at all. For CacheDir "" it returns
// os.UserCacheDir()/mcp-wasmhost/compiled, or os.TempDir()/mcp-wasmhost-compiled
// when the user has no cache directory.
func (s Server) CompilationCacheDir() (dir string, enabled bool) {
	switch s.CacheDir {
	case CacheOff:
		return "", false
	case "":
		return defaultCacheDir(), true
	default:
		return s.CacheDir, true
	}
}

func defaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "mcp-wasmhost", "compiled")
	}
	return filepath.Join(os.TempDir(), "mcp-wasmhost-compiled")
}

// Tasks holds the [tasks] table.
type Tasks struct {
	// DefaultTTL is how long a finished task is kept when the client asks for no
	// ttl, MinTaskTTL..MaxTTL. 0 means DefaultTaskTTL.
	DefaultTTL Duration `toml:"default_ttl"`
	// MaxTTL caps the ttl a client may ask for (longer ones are clamped and the
	// task reports what it got), MinTaskTTL..MaxTaskTTL. 0 means DefaultMaxTaskTTL.
	MaxTTL Duration `toml:"max_ttl"`
	// PollInterval is the polling interval suggested to clients, 10ms..1m.
	// 0 means DefaultPollInterval.
	PollInterval Duration `toml:"poll_interval"`
	// MaxPerClient caps the unfinished tasks of one client (the local user on
	// stdio, one session on HTTP), 1..100000. 0 means DefaultMaxPerClient.
	MaxPerClient int `toml:"max_per_client"`
	// MaxAnonymous caps the unfinished tasks of all anonymous stateless HTTP
	// clients together (each network source has its own max_per_client among
	// them), 1..10000000. 0 means DefaultMaxAnonymous.
	MaxAnonymous int `toml:"max_anonymous"`
	// SweepInterval is how often expired tasks are purged from the store (they
	// are not served after their ttl either way), 1s..1h. 0 means a quarter of
	// default_ttl, between 1s and 1m (tasks.Options.SweepEvery).
	SweepInterval Duration `toml:"sweep_interval"`
	// Store is where tasks are kept: StoreSQLite (a crash-safe file in DataDir,
	// tasks.sqlite, that every local server on the same DataDir shares),
	// StoreBolt (a crash-safe file, tasks.db, one server at a time) or
	// StoreMemory (gone when the server stops), or a PostgreSQL URL
	// (postgres://user:password@host:port/database?sslmode=..., or postgresql://)
	// that any number of replicas share (docs/STORE.md). "" means StoreSQLite.
	Store string `toml:"store"`
	// DataDir holds the task store file (tasks.sqlite or tasks.db), relative to the config
	// file's directory. "" means $XDG_STATE_HOME/mcp-wasmhost, or
	// ~/.local/state/mcp-wasmhost; Load and Parse return it absolute.
	DataDir string `toml:"data_dir"`
	// MaxResultBytes caps one stored result; a task whose result is larger
	// fails with a message saying so, 1..MaxIOBytes*16. 0 means
	// DefaultMaxResultBytes.
	MaxResultBytes int `toml:"max_result_bytes"`
	// MaxStoredTasks caps the tasks kept; while the store is full new tasks
	// are refused (nothing stored is dropped), 1..10000000. 0 means
	// DefaultMaxStoredTasks.
	MaxStoredTasks int `toml:"max_stored_tasks"`
	// MaxStoreMiB caps the bytes of stored results, 1..1048576. 0 means
	// DefaultMaxStoreMiB.
	MaxStoreMiB int `toml:"max_store_mib"`
	// MaxLogKiB is how much of a task's live log is kept: past it the oldest lines
	// are dropped (a reader is told how many bytes), 1..65536. 0 means
	// tasks.DefaultMaxLogBytes (256 KiB).
	MaxLogKiB int `toml:"max_log_kib"`
	// MaxCheckpointKiB caps one checkpoint of a resumable task, 1..1024 (the ABI's
	// bound). 0 means tasks.DefaultMaxCheckpointBytes (1 MiB).
	MaxCheckpointKiB int `toml:"max_checkpoint_kib"`
	// MaxResumes is how often a resumable task is started again after its server or
	// worker stopped under it (one count for both) before it is failed instead,
	// 1..100. 0 means tasks.DefaultMaxResumes (3).
	MaxResumes int `toml:"max_resumes"`
}

// Values of Tasks.Store.
const (
	StoreSQLite = "sqlite"
	StoreBolt   = "bolt"
	StoreMemory = "memory"
)

// IsPostgres reports whether store is a PostgreSQL URL (postgres:// or
// postgresql://).
func IsPostgres(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

// DefaultDataDir returns where the task store lives when data_dir is "".
func DefaultDataDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "mcp-wasmhost")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "mcp-wasmhost")
	}
	return filepath.Join(os.TempDir(), "mcp-wasmhost-state")
}

// Plugin holds one [[plugins]] table: a .wasm file and what it may use.
type Plugin struct {
	// Name identifies the plugin in logs and tool names: 1 to 32 characters
	// of a-z, 0-9 and '-', starting with a letter, unique in the file.
	// Required.
	Name string `toml:"name"`
	// Prefix is put before the plugin's tool and prompt names, joined with '_'
	// (prefix "kit" offers the guest's tool "sha256" as "kit_sha256"): 1 to 32
	// characters like Name, unique among the prefixes in the file. "" offers the
	// names exactly as the guest declares them, for clients or test suites that
	// expect fixed names; a name offered by two plugins is then refused when the
	// plugins load. Nil means Name.
	Prefix *string `toml:"prefix"`
	// Path is the .wasm file, relative to the config file's directory.
	// Load and Parse return it absolute. Exactly one of Path and Source is
	// required. Its existence and hash are checked when the plugin is loaded,
	// not here.
	Path string `toml:"path"`
	// SHA256 is the expected hex digest of the file at Path. Required with Path,
	// refused with Source; upper case is accepted and returned lower case.
	SHA256 string `toml:"sha256"`
	// Source is an OCI reference, "oci://REGISTRY/REPOSITORY:TAG" or
	// "...@sha256:HEX", instead of Path: `mcp-wasmhost pull` resolves it and pins
	// the manifest digest in mcp-wasmhost.lock beside the config; the server only
	// reads the pinned digest from the cache (distribution.go).
	Source string `toml:"source"`
	// Verify is the source's signature policy ([plugins.verify], or
	// verify = "none"). Required with Source, refused with Path.
	Verify Verify `toml:"verify"`
	// MemoryMiB caps the guest's linear memory, 1..MaxMemoryMiB.
	// 0 means DefaultMemoryMiB.
	MemoryMiB int `toml:"memory_mib"`
	// Timeout bounds one call's run time, MinTimeout..MaxTimeout, written as a
	// duration string such as "30s" or "1m30s"; time the guest spends waiting
	// for an answer to a request for input does not count (InputTimeout bounds
	// it). 0 means DefaultTimeout.
	Timeout Duration `toml:"timeout"`
	// InputTimeout bounds one wait of the guest for an answer to a request for
	// input (elicit, elicit_all, sample), MinTimeout..MaxTimeout; in a task it is
	// also held to the task's ttl. 0 means plugins.DefaultInputTimeout (1h).
	InputTimeout Duration `toml:"input_timeout"`
	// MaxInputBytes caps the request document given to the guest,
	// 1..MaxIOBytes. 0 means DefaultMaxIOBytes.
	MaxInputBytes int `toml:"max_input_bytes"`
	// MaxOutputBytes caps the result document the guest may write,
	// 1..MaxIOBytes. 0 means DefaultMaxIOBytes.
	MaxOutputBytes int `toml:"max_output_bytes"`
	// Env is the guest's environment, exactly: names match
	// [A-Za-z_][A-Za-z0-9_]* and values hold no NUL byte.
	// Nil means the guest sees no variables (the server's own environment is
	// never passed through, as that would leak the host's secrets).
	Env map[string]string `toml:"env"`
	// InheritEnv names variables copied from the server's environment into
	// the guest's when the server has them set. A name may not also be in
	// Env. Nil means none.
	InheritEnv []string `toml:"inherit_env"`
	// Dirs are the host directories the guest may open ([[plugins.dirs]]).
	// Nil means the guest has no file system.
	Dirs []Dir `toml:"dirs"`
	// Trusted runs the plugin inside the server process, which saves the
	// worker process's cost per call. False (the default) runs it in a
	// supervised worker process that is killed if a call does not stop: only
	// there can a hostile guest never stall the server.
	Trusted bool `toml:"trusted"`
	// MaxConcurrent is how many calls of the plugin run at once (each a fresh
	// instance), 1..MaxConcurrentLimit. 0 means plugins.DefaultMaxConcurrent
	// of memory_mib: 2048 MiB / memory_mib, kept within 4..64.
	MaxConcurrent int `toml:"max_concurrent"`
	// MaxQueued is how many more calls may wait for a free slot, 1..MaxQueuedLimit;
	// past it a call is refused at once. 0 means 16 x max_concurrent.
	MaxQueued int `toml:"max_queued"`
	// QueueTimeout is how long a call may wait for a slot before it is refused,
	// MinTimeout..MaxTimeout. 0 means plugins.DefaultQueueTimeout (30s).
	QueueTimeout Duration `toml:"queue_timeout"`
	// Workers is how many worker processes share the plugin's calls,
	// 1..MaxWorkers; a client's calls go to one of them, so a call that gets its
	// worker killed takes down only the calls in that worker. Not for a trusted
	// plugin. 0 means worker.DefaultProcesses (2).
	Workers int `toml:"workers"`
	// Net are the origins the plugin may reach over HTTP ([[plugins.net]], see
	// net.go). Nil means no network.
	Net []Net `toml:"net"`
	// NetLimits bound its requests ([plugins.net_limits]); zero means the defaults.
	NetLimits NetLimits `toml:"net_limits"`

	// Where is the place in the file that declares the plugin, "config.toml:12" (its
	// path key, else its [[plugins]] header), for messages about it after the file
	// was read, such as a refused load. Load and Parse set it; it is not a key.
	Where string `toml:"-"`
	// Lines holds the line of each key written directly in the plugin's table, such
	// as Lines["memory_mib"], for a message about that key. Load and Parse set it.
	Lines map[string]int `toml:"-"`
}

// WhereKey is Where for a message about one key: "config.toml:15" for the line of
// key when the file has it, else Where.
func (p Plugin) WhereKey(key string) string {
	if l := p.Lines[key]; l > 0 {
		name, _, _ := strings.Cut(p.Where, ":")
		return fmt.Sprintf("%s:%d", name, l)
	}
	return p.Where
}

// Dir holds one [[plugins.dirs]] table: a host directory mounted in the guest.
type Dir struct {
	// Host is the directory on the host, relative to the config file's
	// directory. Load and Parse return it absolute and check that it exists
	// and is a directory. Required.
	Host string `toml:"host"`
	// Guest is where the guest sees it: an absolute, clean slash path other
	// than "/", such as "/data", unique within the plugin. Required.
	Guest string `toml:"guest"`
	// Writable lets the guest create, change and delete files there.
	// false means read-only.
	Writable bool `toml:"writable"`
}

// Duration is a time.Duration written in TOML as a string such as "30s",
// "1m30s" or "250ms" (the syntax of time.ParseDuration).
type Duration struct{ time.Duration }

var (
	_ encoding.TextUnmarshaler = (*Duration)(nil)
	_ encoding.TextMarshaler   = Duration{}
)

// UnmarshalText parses a duration string such as "30s".
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf("invalid duration %q (want a string like \"30s\" or \"1m30s\")", text)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as time.Duration.String does, e.g. "1m30s".
func (d Duration) MarshalText() ([]byte, error) {
	return []byte(d.String()), nil
}

// Load reads the config file at path, decodes it strictly, fills in defaults
// and validates it. Relative paths in the file are resolved against the
// file's directory and returned absolute. Errors name path, and the line
// where one is known; when the file is invalid, every problem is reported in
// one error (see the package documentation).
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err) // *fs.PathError names the path
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("load config %s: %w", path, err)
	}
	return Parse(data, path, filepath.Dir(abs))
}

// Parse does what Load does for a file already read: data is its content,
// name is used in messages (such as "config.toml"), and dir is the directory
// that relative paths are resolved against ("" means the working directory).
// Host directories named in dirs must exist, as in Load.
func Parse(data []byte, name, dir string) (*Config, error) {
	if name == "" {
		name = "config"
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: resolve directory: %w", name, err)
	}

	// Stage 1: syntax. [server] and each plugin are kept raw here and decoded
	// one by one below, so that a type error in one plugin does not hide those
	// in another.
	var raw struct {
		Server  toml.Primitive   `toml:"server"`
		Tasks   toml.Primitive   `toml:"tasks"`
		Plugins []toml.Primitive `toml:"plugins"`
	}
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			msg := pe.Message
			if pe.LastKey != "" {
				msg += fmt.Sprintf(" (last key %q)", pe.LastKey)
			}
			return nil, &fileError{name: name, line: pe.Position.Line, msg: msg, err: err}
		}
		// A type error at the top level, such as plugins = 5.
		return nil, typeError(name, "", keyLines(string(data)), -1, err)
	}

	// Stage 2: types and unknown keys.
	lines := keyLines(string(data))
	var errs []error
	cfg := &Config{Plugins: make([]Plugin, len(raw.Plugins))}
	if err := md.PrimitiveDecode(raw.Server, &cfg.Server); err != nil {
		errs = append(errs, typeError(name, "server: ", lines, -1, err))
	}
	if err := md.PrimitiveDecode(raw.Tasks, &cfg.Tasks); err != nil {
		errs = append(errs, typeError(name, "tasks: ", lines, -1, err))
	}
	for i, p := range raw.Plugins {
		if err := md.PrimitiveDecode(p, &cfg.Plugins[i]); err != nil {
			errs = append(errs, typeError(name, fmt.Sprintf("plugins[%d]: ", i), lines, i, err))
		}
	}
	typesOK := len(errs) == 0
	errs = append(errs, unknownKeys(name, &md, lines)...)
	if !typesOK {
		// Values after a type error were never decoded; validating them would
		// only add noise.
		return nil, errors.Join(errs...)
	}

	// Stage 3: defaults, paths and rules.
	errs = append(errs, cfg.finish(name, dir, lines)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return cfg, nil
}

// fileError is one problem in a config file: "name:line: msg", or
// "name: msg" when the line is not known.
type fileError struct {
	name string
	line int // 0 when unknown
	msg  string
	err  error // the cause, if any
}

func (e *fileError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.name, e.line, e.msg)
	}
	return fmt.Sprintf("%s: %s", e.name, e.msg)
}

func (e *fileError) Unwrap() error { return e.err }

// typeError rewrites an error from decoding a value of the wrong type. The
// toml package reports the key, but its line is that of the key's last
// occurrence in the file, which is wrong when several [[plugins]] use the
// key; the line is looked up here instead, among the lines of plugin index
// plugin (-1: anywhere), and left out when it is not unique.
func typeError(name, where string, lines []keyLine, plugin int, err error) error {
	key, msg := splitDecodeError(err)
	if key == "" {
		return &fileError{name: name, msg: where + msg, err: err}
	}
	line := 0
	for _, kl := range lines {
		if kl.key != key || (plugin >= 0 && kl.plugin != plugin) {
			continue
		}
		if line != 0 {
			line = 0
			break
		}
		line = kl.line
	}
	return &fileError{name: name, line: line, msg: fmt.Sprintf("%skey %q: %s", where, key, msg), err: err}
}

// splitDecodeError takes the key and the message out of a decode error. A
// toml.ParseError carries them as fields; the toml package formats its other
// decode errors as `toml: line N (last key "K"): message`.
func splitDecodeError(err error) (key, msg string) {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return pe.LastKey, pe.Message
	}
	msg = strings.TrimPrefix(err.Error(), "toml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if _, after, ok := strings.Cut(rest, " "); ok {
			msg = after
		}
	}
	if rest, ok := strings.CutPrefix(msg, "(last key "); ok {
		if quoted, after, ok := strings.Cut(rest, "): "); ok {
			if k, err := strconv.Unquote(quoted); err == nil {
				return k, after
			}
		}
	}
	return "", msg
}

// unknownKeys reports every key in the file that Config does not have, once
// per occurrence, with its line. Keys below an unknown table are not reported
// again. The toml package matches field names case-insensitively; that is
// undone here, so "Memory_MiB" is an error that suggests "memory_mib".
func unknownKeys(name string, md *toml.MetaData, lines []keyLine) []error {
	undecoded := make(map[string]bool)
	for _, k := range md.Undecoded() {
		undecoded[k.String()] = true
	}
	// Keys and lines are both in file order, so the n-th occurrence of a key
	// in one is the n-th in the other.
	lineQueue := make(map[string][]int)
	for _, kl := range lines {
		lineQueue[kl.key] = append(lineQueue[kl.key], kl.line)
	}
	reported := make(map[string]bool)
	var errs []error
	for _, k := range md.Keys() {
		ks := k.String()
		line := 0
		if q := lineQueue[ks]; len(q) > 0 {
			line, lineQueue[ks] = q[0], q[1:]
		}
		exact, suggestion := lookupKey(reflect.TypeFor[Config](), k)
		if exact {
			continue // Undecoded lists these too after a type error.
		}
		under := false
		for j := 1; j < len(k) && !under; j++ {
			under = reported[k[:j].String()]
		}
		if under {
			continue
		}
		reported[ks] = true
		msg := fmt.Sprintf("unknown key %q", ks)
		if !undecoded[ks] && suggestion != "" {
			msg += fmt.Sprintf(" (keys are case-sensitive: did you mean %q?)", suggestion)
		}
		errs = append(errs, &fileError{name: name, line: line, msg: msg})
	}
	return errs
}

// lookupKey reports whether key names a field of t, following toml tags
// exactly; any key below a map field matches. If key matches only when case
// is ignored, suggestion is its correct spelling.
func lookupKey(t reflect.Type, key toml.Key) (exact bool, suggestion string) {
	exact = true
	canon := make(toml.Key, 0, len(key))
	for i, part := range key {
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Map {
			return exact, append(canon, key[i:]...).String()
		}
		if t.Kind() != reflect.Struct || t == reflect.TypeFor[Duration]() {
			return false, ""
		}
		match := -1
		for j := range t.NumField() {
			name := tomlName(t.Field(j))
			if name == "-" {
				continue // not read from the file, such as Plugin.Where
			}
			if name == part {
				match = j
				break
			}
			if match < 0 && strings.EqualFold(name, part) {
				match = j
			}
		}
		if match < 0 {
			return false, ""
		}
		f := t.Field(match)
		name := tomlName(f)
		exact = exact && name == part
		canon = append(canon, name)
		t = f.Type
	}
	return exact, canon.String()
}

func tomlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return name
}

// finish fills in defaults, makes paths absolute and checks every rule,
// returning all the problems found.
func (c *Config) finish(name, dir string, lines []keyLine) []error {
	var errs []error
	fail := func(where, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		errs = append(errs, &fileError{name: name, line: lineOf(lines, where, msg), msg: where + ": " + msg})
	}

	s := &c.Server
	if s.Name == "" {
		s.Name = DefaultServerName
	}
	switch s.LogLevel {
	case "":
		s.LogLevel = DefaultLogLevel
	case "debug", "info", "warn", "error":
	default:
		fail("server", "log_level %q is not one of debug, info, warn, error", s.LogLevel)
	}
	switch {
	case s.GCPercent == 0:
		s.GCPercent = DefaultGCPercent
	case s.GCPercent < 10 || s.GCPercent > 10000:
		fail("server", "gc_percent %d out of range 10..10000", s.GCPercent)
	}
	if s.MemoryLimitMiB != 0 && (s.MemoryLimitMiB < 16 || s.MemoryLimitMiB > 1<<20) {
		fail("server", "memory_limit_mib %d out of range 16..1048576", s.MemoryLimitMiB)
	}
	// The transport limits keep 0, which the host reads as its default (one
	// source per default: host.DefaultMaxMessageBytes and its siblings).
	if v := s.MaxMessageBytes; v != 0 && (v < 64<<10 || v > 2*MaxIOBytes) {
		fail("server", "max_message_bytes %d out of range 65536..%d", v, 2*MaxIOBytes)
	}
	if d := s.BodyReadTimeout.Duration; d != 0 && (d < 10*time.Millisecond || d > time.Hour) {
		fail("server", "body_read_timeout %s out of range 10ms..1h0m0s", d)
	}
	if v := s.MaxSessions; v != 0 && (v < 1 || v > 1_000_000) {
		fail("server", "max_sessions %d out of range 1..1000000", v)
	}
	if d := s.SessionIdleTimeout.Duration; d != 0 && (d < time.Second || d > 720*time.Hour) {
		fail("server", "session_idle_timeout %s out of range 1s..720h0m0s", d)
	}
	s.Auth.finish(dir, fail)
	s.Audit.finish(dir, fail)
	s.Distribution.finish(dir, fail)
	s.finishTelemetry(fail)
	if s.WorkerProfileDir != "" {
		s.WorkerProfileDir = resolve(dir, s.WorkerProfileDir)
		switch fi, err := os.Stat(s.WorkerProfileDir); {
		case errors.Is(err, fs.ErrNotExist):
			fail("server", "worker_profile_dir %q does not exist", s.WorkerProfileDir)
		case err != nil:
			fail("server", "worker_profile_dir %q: %v", s.WorkerProfileDir, err)
		case !fi.IsDir():
			fail("server", "worker_profile_dir %q is not a directory", s.WorkerProfileDir)
		}
	}
	switch s.CacheDir {
	case "":
		s.CacheDir = defaultCacheDir()
	case CacheOff:
	default:
		s.CacheDir = resolve(dir, s.CacheDir)
	}

	tk := &c.Tasks
	defaultDuration := func(key string, d *Duration, def, lo, hi time.Duration) {
		switch {
		case d.Duration == 0:
			d.Duration = def
		case d.Duration < lo || d.Duration > hi:
			fail("tasks", "%s %s out of range %s..%s", key, d.Duration, lo, hi)
		}
	}
	defaultDuration("max_ttl", &tk.MaxTTL, DefaultMaxTaskTTL, MinTaskTTL, MaxTaskTTL)
	defaultDuration("default_ttl", &tk.DefaultTTL, min(DefaultTaskTTL, tk.MaxTTL.Duration), MinTaskTTL, tk.MaxTTL.Duration)
	defaultDuration("poll_interval", &tk.PollInterval, DefaultPollInterval, 10*time.Millisecond, time.Minute)
	defaultDuration("sweep_interval", &tk.SweepInterval, 0, time.Second, time.Hour)
	switch {
	case tk.MaxPerClient == 0:
		tk.MaxPerClient = DefaultMaxPerClient
	case tk.MaxPerClient < 1 || tk.MaxPerClient > 100000:
		fail("tasks", "max_per_client %d out of range 1..100000", tk.MaxPerClient)
	}
	switch {
	case tk.MaxAnonymous == 0:
		tk.MaxAnonymous = DefaultMaxAnonymous
	case tk.MaxAnonymous < 1 || tk.MaxAnonymous > 10_000_000:
		fail("tasks", "max_anonymous %d out of range 1..10000000", tk.MaxAnonymous)
	}
	switch tk.Store {
	case "":
		tk.Store = StoreSQLite
	case StoreSQLite, StoreBolt, StoreMemory:
	default:
		switch {
		case IsPostgres(tk.Store):
		case strings.Contains(tk.Store, "://"): // not shown: it may hold a password
			fail("tasks", "store is a URL but not a postgres:// or postgresql:// one")
		default:
			fail("tasks", "store %q is not %q, %q, %q or a postgres:// URL", tk.Store, StoreSQLite, StoreBolt, StoreMemory)
		}
	}
	if tk.DataDir == "" {
		tk.DataDir = DefaultDataDir()
	} else {
		tk.DataDir = resolve(dir, tk.DataDir)
	}
	defaultInt := func(key string, v *int, def, lo, hi int) {
		switch {
		case *v == 0:
			*v = def
		case *v < lo || *v > hi:
			fail("tasks", "%s %d out of range %d..%d", key, *v, lo, hi)
		}
	}
	defaultInt("max_result_bytes", &tk.MaxResultBytes, DefaultMaxResultBytes, 1, MaxIOBytes*16)
	defaultInt("max_stored_tasks", &tk.MaxStoredTasks, DefaultMaxStoredTasks, 1, 10_000_000)
	defaultInt("max_store_mib", &tk.MaxStoreMiB, DefaultMaxStoreMiB, 1, 1<<20)
	// 0 stays 0: the task manager owns these defaults.
	inRange := func(key string, v, lo, hi int) {
		if v != 0 && (v < lo || v > hi) {
			fail("tasks", "%s %d out of range %d..%d", key, v, lo, hi)
		}
	}
	inRange("max_log_kib", tk.MaxLogKiB, 1, 1<<16)
	inRange("max_checkpoint_kib", tk.MaxCheckpointKiB, 1, 1<<10)
	inRange("max_resumes", tk.MaxResumes, 1, 100)

	firstByName := make(map[string]int)
	firstByPrefix := make(map[string]int)
	for i := range c.Plugins {
		p := &c.Plugins[i]
		where := fmt.Sprintf("plugins[%d]", i)
		if p.Name != "" {
			where += fmt.Sprintf(" (%q)", p.Name)
		}
		switch {
		case p.Name == "":
			fail(where, "name is required")
		case !validPluginName(p.Name):
			fail(where, "name %q must be 1-%d characters of a-z, 0-9 and '-', starting with a letter", p.Name, maxPluginName)
		}
		j, nameDup := firstByName[p.Name]
		if nameDup {
			fail(where, "name %q is already used by plugins[%d]", p.Name, j)
		} else if p.Name != "" {
			firstByName[p.Name] = i
		}

		prefix := p.Name
		if p.Prefix != nil {
			prefix = *p.Prefix
			if prefix != "" && !validPluginName(prefix) {
				fail(where, "prefix %q must be \"\" or 1-%d characters of a-z, 0-9 and '-', starting with a letter", prefix, maxPluginName)
			}
		}
		// A prefix defaulted from a duplicate name is already reported as the name.
		if j, dup := firstByPrefix[prefix]; dup && prefix != "" && (p.Prefix != nil || !nameDup) {
			fail(where, "prefix %q is already used by plugins[%d]; tool names would collide", prefix, j)
		} else if prefix != "" {
			firstByPrefix[prefix] = i
		}

		p.finishSource(where, dir, fail) // path and sha256, or source and verify (distribution.go)

		p.Where = name
		if l := lineOf(lines, where, "path"); l > 0 {
			p.Where = fmt.Sprintf("%s:%d", name, l)
		}
		p.Lines = keysOf(lines, where)
		if p.MemoryMiB == 0 && written(lines, where, "memory_mib") {
			// Written as 0: the range is 1..MaxMemoryMiB; leaving the key out means the default.
			fail(where, "memory_mib 0 out of range 1..%d (leave memory_mib out for the default, %d)", MaxMemoryMiB, DefaultMemoryMiB)
		} else if p.MemoryMiB == 0 {
			p.MemoryMiB = DefaultMemoryMiB
		} else if p.MemoryMiB < 1 || p.MemoryMiB > MaxMemoryMiB {
			fail(where, "memory_mib %d out of range 1..%d", p.MemoryMiB, MaxMemoryMiB)
		}
		if p.Timeout.Duration == 0 {
			p.Timeout.Duration = DefaultTimeout
		} else if p.Timeout.Duration < MinTimeout || p.Timeout.Duration > MaxTimeout {
			fail(where, "timeout %v out of range %v..%v", p.Timeout.Duration, MinTimeout, MaxTimeout)
		}
		for _, lim := range []struct {
			key string
			v   int
			max int
		}{{"max_concurrent", p.MaxConcurrent, MaxConcurrentLimit}, {"max_queued", p.MaxQueued, MaxQueuedLimit}, {"workers", p.Workers, MaxWorkers}} {
			if lim.v < 0 || lim.v > lim.max {
				fail(where, "%s %d out of range 1..%d", lim.key, lim.v, lim.max)
			}
		}
		if d := p.InputTimeout.Duration; d != 0 && (d < MinTimeout || d > MaxTimeout) {
			fail(where, "input_timeout %v out of range %v..%v", d, MinTimeout, MaxTimeout)
		}
		if d := p.QueueTimeout.Duration; d != 0 && (d < MinTimeout || d > MaxTimeout) {
			fail(where, "queue_timeout %v out of range %v..%v", d, MinTimeout, MaxTimeout)
		}
		if p.Trusted && p.Workers != 0 {
			fail(where, "workers %d is set, but a trusted plugin runs in the server process; remove one", p.Workers)
		}
		for _, lim := range []struct {
			key string
			v   *int
		}{{"max_input_bytes", &p.MaxInputBytes}, {"max_output_bytes", &p.MaxOutputBytes}} {
			if *lim.v == 0 {
				*lim.v = DefaultMaxIOBytes
			} else if *lim.v < 1 || *lim.v > MaxIOBytes {
				fail(where, "%s %d out of range 1..%d", lim.key, *lim.v, MaxIOBytes)
			}
		}

		for _, k := range slices.Sorted(maps.Keys(p.Env)) {
			if !validEnvName(k) {
				fail(where, "env name %q is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)", k)
			}
			if strings.IndexByte(p.Env[k], 0) >= 0 {
				fail(where, "env %q: value contains a NUL byte", k)
			}
		}
		seen := make(map[string]bool)
		for _, k := range p.InheritEnv {
			switch _, inEnv := p.Env[k]; {
			case !validEnvName(k):
				fail(where, "inherit_env name %q is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)", k)
			case seen[k]:
				fail(where, "inherit_env lists %q more than once", k)
			case inEnv:
				fail(where, "inherit_env %q is also set in env; keep one", k)
			}
			seen[k] = true
		}

		p.finishNet(where, dir, fail)

		firstByGuest := make(map[string]int)
		for j := range p.Dirs {
			d := &p.Dirs[j]
			dwhere := fmt.Sprintf("%s: dirs[%d]", where, j)
			if d.Host == "" {
				fail(dwhere, "host is required")
			} else {
				d.Host = resolve(dir, d.Host)
				switch fi, err := os.Stat(d.Host); {
				case errors.Is(err, fs.ErrNotExist):
					fail(dwhere, "host %q does not exist", d.Host)
				case err != nil:
					fail(dwhere, "host %q: %v", d.Host, err)
				case !fi.IsDir():
					fail(dwhere, "host %q is not a directory", d.Host)
				}
			}
			switch {
			case d.Guest == "":
				fail(dwhere, "guest is required")
			case !path.IsAbs(d.Guest):
				fail(dwhere, "guest %q must be an absolute path such as \"/data\"", d.Guest)
			case path.Clean(d.Guest) != d.Guest:
				fail(dwhere, "guest %q must be a clean path (%q)", d.Guest, path.Clean(d.Guest))
			case d.Guest == "/":
				fail(dwhere, "guest %q cannot be the root; mount under a directory such as \"/data\"", d.Guest)
			default:
				if k, dup := firstByGuest[d.Guest]; dup {
					fail(dwhere, "guest %q is already used by dirs[%d]", d.Guest, k)
				} else {
					firstByGuest[d.Guest] = j
				}
			}
		}
	}
	return errs
}

// resolve returns p made absolute against dir, which is absolute.
func resolve(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

func validPluginName(s string) bool {
	if len(s) < 1 || len(s) > maxPluginName || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func validSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// keyLine is one key as the toml package's MetaData.Keys lists it (every
// table header, key/value and inline-table key, with dotted parts joined),
// and the line it is on. MetaData keeps key positions private, so keyLines
// finds them again by scanning the text.
type keyLine struct {
	key    string // as toml.Key.String formats it
	line   int    // 1-based
	plugin int    // index of the enclosing plugins entry, -1 outside any
	header bool   // a table header such as [server] or [[plugins.dirs]]
}

// keyLines lists the keys of a TOML document in file order. The document has
// already been parsed successfully, so the scanner can be lenient; on input it
// does not understand it stops early or skips ahead, and never fails.
func keyLines(doc string) []keyLine {
	// Skip a byte order mark as the toml package does.
	for _, bom := range []string{"\xef\xbb\xbf", "\xff\xfe", "\xfe\xff"} {
		if rest, ok := strings.CutPrefix(doc, bom); ok {
			doc = rest
			break
		}
	}
	sc := &keyScanner{s: doc, line: 1, plugin: -1}
	sc.document()
	return sc.out
}

type keyScanner struct {
	s       string
	i       int
	line    int
	plugin  int // index of the current plugins entry
	plugins int // plugins entries seen so far
	out     []keyLine
}

func (sc *keyScanner) peek(n int) byte {
	if sc.i+n < len(sc.s) {
		return sc.s[sc.i+n]
	}
	return 0
}

func (sc *keyScanner) add(key toml.Key, line int, header bool) {
	sc.out = append(sc.out, keyLine{key: key.String(), line: line, plugin: sc.plugin, header: header})
}

func (sc *keyScanner) document() {
	var table toml.Key
	for {
		sc.skipBlank(true)
		if sc.i >= len(sc.s) {
			return
		}
		start, line := sc.i, sc.line
		if sc.peek(0) == '[' {
			array := sc.peek(1) == '['
			sc.i++
			if array {
				sc.i++
			}
			table = sc.key()
			if array && table.String() == "plugins" {
				sc.plugin = sc.plugins
				sc.plugins++
			}
			sc.add(table, line, true)
		} else if key := sc.key(); len(key) > 0 {
			full := append(slices.Clone(table), key...)
			sc.add(full, line, false)
			sc.skipBlank(false)
			if sc.peek(0) == '=' {
				sc.i++
			}
			sc.value(full)
		}
		sc.skipLine()
		if sc.i == start {
			sc.i++ // always make progress
		}
	}
}

// skipBlank skips spaces and tabs, and with newlines also line ends and
// comments.
func (sc *keyScanner) skipBlank(newlines bool) {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\r':
			sc.i++
		case '\n':
			if !newlines {
				return
			}
			sc.i++
			sc.line++
		case '#':
			if !newlines {
				return
			}
			sc.skipLine()
		default:
			return
		}
	}
}

// skipLine skips to the start of the next line.
func (sc *keyScanner) skipLine() {
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		sc.i++
		if c == '\n' {
			sc.line++
			return
		}
	}
}

// key reads a possibly dotted key and the blanks around it.
func (sc *keyScanner) key() toml.Key {
	var key toml.Key
	for {
		sc.skipBlank(false)
		var part string
		switch sc.peek(0) {
		case '"':
			part = unquoteBasic(sc.str('"', true))
		case '\'':
			raw := sc.str('\'', false)
			part = strings.TrimSuffix(strings.TrimPrefix(raw, "'"), "'")
		default:
			start := sc.i
			for sc.i < len(sc.s) && !strings.ContainsRune(" \t\r\n.=]#,}", rune(sc.s[sc.i])) {
				sc.i++
			}
			if sc.i == start {
				return key
			}
			part = sc.s[start:sc.i]
		}
		key = append(key, part)
		sc.skipBlank(false)
		if sc.peek(0) != '.' {
			return key
		}
		sc.i++
	}
}

// str reads a one-line string starting at its quote and returns it raw,
// quotes included.
func (sc *keyScanner) str(quote byte, escapes bool) string {
	start := sc.i
	sc.i++
	for sc.i < len(sc.s) && sc.s[sc.i] != '\n' {
		c := sc.s[sc.i]
		sc.i++
		if c == '\\' && escapes {
			sc.i++
		} else if c == quote {
			break
		}
	}
	return sc.s[start:min(sc.i, len(sc.s))]
}

// value skips one value; keys of inline tables in it are recorded under path.
func (sc *keyScanner) value(path toml.Key) {
	sc.skipBlank(false)
	switch c := sc.peek(0); {
	case (c == '"' || c == '\'') && sc.peek(1) == c && sc.peek(2) == c:
		sc.i += 3
		for sc.i < len(sc.s) {
			if sc.s[sc.i] == '\\' && c == '"' {
				sc.i++
			} else if sc.s[sc.i] == c && sc.peek(1) == c && sc.peek(2) == c {
				for sc.peek(0) == c { // up to two quotes may end the content
					sc.i++
				}
				return
			}
			if sc.i < len(sc.s) && sc.s[sc.i] == '\n' {
				sc.line++
			}
			sc.i++
		}
	case c == '"' || c == '\'':
		sc.str(c, c == '"')
	case c == '[':
		sc.i++
		for n := 0; sc.i < len(sc.s); {
			sc.skipBlank(true)
			switch sc.peek(0) {
			case ']':
				sc.i++
				return
			case ',':
				sc.i++
				n++
				continue
			}
			if path.String() == "plugins" {
				sc.plugin = n
			}
			start := sc.i
			sc.value(path)
			if sc.i == start {
				sc.i++
			}
		}
	case c == '{':
		sc.i++
		for sc.i < len(sc.s) {
			sc.skipBlank(true)
			switch sc.peek(0) {
			case '}':
				sc.i++
				return
			case ',':
				sc.i++
				continue
			}
			start, line := sc.i, sc.line
			if key := sc.key(); len(key) > 0 {
				full := append(slices.Clone(path), key...)
				sc.add(full, line, false)
				if sc.peek(0) == '=' {
					sc.i++
				}
				sc.value(full)
			}
			if sc.i == start {
				sc.i++
			}
		}
	default: // number, boolean or date-time: up to the next delimiter
		for sc.i < len(sc.s) && !strings.ContainsRune(",]}#\r\n", rune(sc.s[sc.i])) {
			sc.i++
		}
	}
}

// unquoteBasic returns the content of a TOML basic string such as "a\tb",
// given with its quotes. The string has already been accepted by the toml
// package, so an escape it does not know is kept as written.
func unquoteBasic(raw string) string {
	raw = strings.TrimSuffix(strings.TrimPrefix(raw, `"`), `"`)
	if !strings.Contains(raw, `\`) {
		return raw
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 == len(raw) {
			b.WriteByte(raw[i])
			continue
		}
		i++
		hex := 0
		switch raw[i] {
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'e':
			b.WriteByte(0x1b)
		case '"', '\\':
			b.WriteByte(raw[i])
		case 'x':
			hex = 2
		case 'u':
			hex = 4
		case 'U':
			hex = 8
		default:
			b.WriteByte('\\')
			b.WriteByte(raw[i])
		}
		if hex > 0 {
			r, err := strconv.ParseUint(raw[i+1:min(i+1+hex, len(raw))], 16, 32)
			if err != nil || i+hex >= len(raw) {
				b.WriteByte('\\')
				b.WriteByte(raw[i])
				continue
			}
			b.WriteRune(rune(r))
			i += hex
		}
	}
	return b.String()
}
