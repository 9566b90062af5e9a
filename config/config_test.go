package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

const sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// plugin returns a valid [[plugins]] table named name, followed by extra lines.
func plugin(name string, extra ...string) string {
	s := "[[plugins]]\nname = \"" + name + "\"\npath = \"" + name + ".wasm\"\nsha256 = \"" + sha + "\"\n"
	for _, e := range extra {
		s += e + "\n"
	}
	return s
}

// withoutLines drops the line numbers from messages ("config.toml:5: x" reads
// "config.toml: x"), for tests of what the messages say; TestValueErrorLines tests
// their lines.
func withoutLines(msgs []string) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, lineNumber.ReplaceAllString(m, "$1:"))
	}
	return out
}

var lineNumber = regexp.MustCompile(`^([^:]*):\d+:`)

// errorLines returns the messages joined in err, one per problem.
func errorLines(err error) []string {
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var lines []string
	for _, e := range errs {
		lines = append(lines, e.Error())
	}
	return lines
}

// testDir returns a directory holding a directory "data" and a file "file.txt".
func testDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestParseDefaults(t *testing.T) {
	dir := testDir(t)
	defaultServer := Server{Name: DefaultServerName, LogLevel: DefaultLogLevel, CacheDir: defaultCacheDir(), GCPercent: DefaultGCPercent}
	defaultTasks := Tasks{DefaultTTL: Duration{DefaultTaskTTL}, MaxTTL: Duration{DefaultMaxTaskTTL},
		PollInterval: Duration{DefaultPollInterval}, MaxPerClient: DefaultMaxPerClient, MaxAnonymous: DefaultMaxAnonymous,
		Store: StoreSQLite, DataDir: DefaultDataDir(), MaxResultBytes: DefaultMaxResultBytes,
		MaxStoredTasks: DefaultMaxStoredTasks, MaxStoreMiB: DefaultMaxStoreMiB}
	defaultPlugin := func(name string) Plugin {
		return Plugin{
			Name:           name,
			Path:           filepath.Join(dir, name+".wasm"),
			SHA256:         sha,
			MemoryMiB:      DefaultMemoryMiB,
			Timeout:        Duration{DefaultTimeout},
			MaxInputBytes:  DefaultMaxIOBytes,
			MaxOutputBytes: DefaultMaxIOBytes,
		}
	}
	with := func(p Plugin, f func(*Plugin)) Plugin { f(&p); return p }

	tests := []struct {
		name string
		toml string
		want *Config
	}{
		{"empty file", "", &Config{Server: defaultServer, Plugins: []Plugin{}}},
		{"comments only", "# nothing here\n\n", &Config{Server: defaultServer, Plugins: []Plugin{}}},
		{"minimal plugin", plugin("toolbox"), &Config{Server: defaultServer, Plugins: []Plugin{defaultPlugin("toolbox")}}},
		{
			"explicit zeros mean defaults",
			plugin("toolbox", `timeout = "0s"`, "max_input_bytes = 0", "max_output_bytes = 0"),
			&Config{Server: defaultServer, Plugins: []Plugin{defaultPlugin("toolbox")}},
		},
		{
			"server settings kept",
			"[server]\nname = \"demo\"\nlog_level = \"debug\"\ncache_dir = \"/var/cache/wasm\"\n",
			&Config{Server: Server{Name: "demo", LogLevel: "debug", CacheDir: "/var/cache/wasm", GCPercent: DefaultGCPercent}, Plugins: []Plugin{}},
		},
		{
			"cache off kept",
			"[server]\ncache_dir = \"off\"\n",
			&Config{Server: Server{Name: DefaultServerName, LogLevel: DefaultLogLevel, CacheDir: CacheOff, GCPercent: DefaultGCPercent}, Plugins: []Plugin{}},
		},
		{
			"relative cache dir",
			"[server]\ncache_dir = \"./off\"\n",
			&Config{Server: Server{Name: DefaultServerName, LogLevel: DefaultLogLevel, CacheDir: filepath.Join(dir, "off"), GCPercent: DefaultGCPercent}, Plugins: []Plugin{}},
		},
		{
			"limits at their maximum",
			plugin("toolbox", "memory_mib = 4096", `timeout = "24h"`, "max_input_bytes = 67108864", "max_output_bytes = 67108864"),
			&Config{Server: defaultServer, Plugins: []Plugin{with(defaultPlugin("toolbox"), func(p *Plugin) {
				p.MemoryMiB, p.Timeout, p.MaxInputBytes, p.MaxOutputBytes = 4096, Duration{24 * time.Hour}, 64<<20, 64<<20
			})}},
		},
		{
			"limits at their minimum",
			plugin("toolbox", "memory_mib = 1", `timeout = "1ms"`, "max_input_bytes = 1", "max_output_bytes = 1"),
			&Config{Server: defaultServer, Plugins: []Plugin{with(defaultPlugin("toolbox"), func(p *Plugin) {
				p.MemoryMiB, p.Timeout, p.MaxInputBytes, p.MaxOutputBytes = 1, Duration{time.Millisecond}, 1, 1
			})}},
		},
		{
			"upper-case sha256 lowered",
			strings.Replace(plugin("toolbox"), sha, strings.ToUpper(sha), 1),
			&Config{Server: defaultServer, Plugins: []Plugin{defaultPlugin("toolbox")}},
		},
		{
			"trusted",
			plugin("toolbox", "trusted = true"),
			&Config{Server: defaultServer, Plugins: []Plugin{with(defaultPlugin("toolbox"), func(p *Plugin) { p.Trusted = true })}},
		},
		{
			"env, inherit_env and dirs",
			plugin("toolbox",
				`env = { GREETING = "hello", _x1 = "" }`,
				`inherit_env = ["TZ", "LANG"]`,
				"[[plugins.dirs]]", `host = "data"`, `guest = "/data"`,
				"[[plugins.dirs]]", `host = "data"`, `guest = "/out"`, "writable = true"),
			&Config{Server: defaultServer, Plugins: []Plugin{with(defaultPlugin("toolbox"), func(p *Plugin) {
				p.Env = map[string]string{"GREETING": "hello", "_x1": ""}
				p.InheritEnv = []string{"TZ", "LANG"}
				p.Dirs = []Dir{
					{Host: filepath.Join(dir, "data"), Guest: "/data"},
					{Host: filepath.Join(dir, "data"), Guest: "/out", Writable: true},
				}
			})}},
		},
		{
			"env as a table",
			plugin("toolbox", "[plugins.env]", `A = "1"`, `"B" = "2"`),
			&Config{Server: defaultServer, Plugins: []Plugin{with(defaultPlugin("toolbox"), func(p *Plugin) {
				p.Env = map[string]string{"A": "1", "B": "2"}
			})}},
		},
		{
			"plugins as an inline array",
			`plugins = [{ name = "a", path = "a.wasm", sha256 = "` + sha + `" }, { name = "b", path = "b.wasm", sha256 = "` + sha + `" }]`,
			&Config{Server: defaultServer, Plugins: []Plugin{defaultPlugin("a"), defaultPlugin("b")}},
		},
		{
			"32-character name",
			plugin("a-23456789012345678901234567890z"),
			&Config{Server: defaultServer, Plugins: []Plugin{defaultPlugin("a-23456789012345678901234567890z")}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.toml), "config.toml", dir)
			want := *tc.want
			want.Tasks = defaultTasks // [tasks] has its own test
			if got != nil {
				for i := range got.Plugins {
					got.Plugins[i].Where, got.Plugins[i].Lines = "", nil // TestWhere has its own test
				}
			}
			if err != nil || !reflect.DeepEqual(got, &want) {
				t.Errorf("Parse(%q) = %+v, %v, want %+v, nil", tc.toml, got, err, &want)
			}
		})
	}
}

func TestParseValidation(t *testing.T) {
	dir := testDir(t)
	file := filepath.Join(dir, "file.txt")
	missing := filepath.Join(dir, "missing")
	const where = `config.toml: plugins[0] ("toolbox"): `

	tests := []struct {
		name string
		toml string
		want []string
	}{
		{"log level", "[server]\nlog_level = \"INFO\"", []string{`config.toml: server: log_level "INFO" is not one of debug, info, warn, error`}},
		{"name missing", "[[plugins]]\npath = \"a.wasm\"\nsha256 = \"" + sha + "\"", []string{`config.toml: plugins[0]: name is required`}},
		{"name upper case", plugin("Toolbox"), []string{`config.toml: plugins[0] ("Toolbox"): name "Toolbox" must be 1-32 characters of a-z, 0-9 and '-', starting with a letter`}},
		{"name starts with digit", plugin("1tool"), []string{`config.toml: plugins[0] ("1tool"): name "1tool" must be 1-32 characters of a-z, 0-9 and '-', starting with a letter`}},
		{"name starts with dash", plugin("-tool"), []string{`config.toml: plugins[0] ("-tool"): name "-tool" must be 1-32 characters of a-z, 0-9 and '-', starting with a letter`}},
		{"name underscore", plugin("tool_box"), []string{`config.toml: plugins[0] ("tool_box"): name "tool_box" must be 1-32 characters of a-z, 0-9 and '-', starting with a letter`}},
		{"name too long", plugin("a23456789012345678901234567890123"), []string{`config.toml: plugins[0] ("a23456789012345678901234567890123"): name "a23456789012345678901234567890123" must be 1-32 characters of a-z, 0-9 and '-', starting with a letter`}},
		{
			"duplicate names",
			plugin("toolbox") + plugin("other") + plugin("toolbox") + plugin("toolbox"),
			[]string{
				`config.toml: plugins[2] ("toolbox"): name "toolbox" is already used by plugins[0]`,
				`config.toml: plugins[3] ("toolbox"): name "toolbox" is already used by plugins[0]`,
			},
		},
		{"path missing", "[[plugins]]\nname = \"toolbox\"\nsha256 = \"" + sha + "\"", []string{where + "path is required"}},
		{"sha256 missing", "[[plugins]]\nname = \"toolbox\"\npath = \"a.wasm\"", []string{where + "sha256 is required"}},
		{"sha256 short", strings.Replace(plugin("toolbox"), sha, sha[:63], 1), []string{where + `sha256 "` + sha[:63] + `" must be 64 hexadecimal characters`}},
		{"sha256 not hex", strings.Replace(plugin("toolbox"), sha, "g"+sha[1:], 1), []string{where + `sha256 "g` + sha[1:] + `" must be 64 hexadecimal characters`}},
		{"memory too big", plugin("other") + plugin("toolbox", "memory_mib = 9000"), []string{`config.toml: plugins[1] ("toolbox"): memory_mib 9000 out of range 1..4096`}},
		{"memory negative", plugin("toolbox", "memory_mib = -1"), []string{where + "memory_mib -1 out of range 1..4096"}},
		{"max_concurrent too big", plugin("toolbox", "max_concurrent = 1025"), []string{where + "max_concurrent 1025 out of range 1..1024"}},
		{"max_concurrent negative", plugin("toolbox", "max_concurrent = -1"), []string{where + "max_concurrent -1 out of range 1..1024"}},
		{"max_queued too big", plugin("toolbox", "max_queued = 100001"), []string{where + "max_queued 100001 out of range 1..100000"}},
		{"queue_timeout too short", plugin("toolbox", `queue_timeout = "999us"`), []string{where + "queue_timeout 999µs out of range 1ms..24h0m0s"}},
		{"input_timeout too long", plugin("toolbox", `input_timeout = "25h"`), []string{where + "input_timeout 25h0m0s out of range 1ms..24h0m0s"}},
		{"input_timeout negative", plugin("toolbox", `input_timeout = "-1s"`), []string{where + "input_timeout -1s out of range 1ms..24h0m0s"}},
		{"workers too many", plugin("toolbox", "workers = 17"), []string{where + "workers 17 out of range 1..16"}},
		{"workers for a trusted plugin", plugin("toolbox", "workers = 2", "trusted = true"),
			[]string{where + "workers 2 is set, but a trusted plugin runs in the server process; remove one"}},
		{"timeout too long", plugin("toolbox", `timeout = "24h1s"`), []string{where + "timeout 24h0m1s out of range 1ms..24h0m0s"}},
		{"timeout too short", plugin("toolbox", `timeout = "999us"`), []string{where + "timeout 999µs out of range 1ms..24h0m0s"}},
		{"timeout negative", plugin("toolbox", `timeout = "-1s"`), []string{where + "timeout -1s out of range 1ms..24h0m0s"}},
		{"max input too big", plugin("toolbox", "max_input_bytes = 67108865"), []string{where + "max_input_bytes 67108865 out of range 1..67108864"}},
		{"max input negative", plugin("toolbox", "max_input_bytes = -5"), []string{where + "max_input_bytes -5 out of range 1..67108864"}},
		{"max output too big", plugin("toolbox", "max_output_bytes = 67108865"), []string{where + "max_output_bytes 67108865 out of range 1..67108864"}},
		{
			"env names",
			plugin("toolbox", `env = { "1A" = "x", "A-B" = "x", "" = "x", "A B" = "x", "é" = "x", OK_1 = "x" }`),
			[]string{
				where + `env name "" is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)`,
				where + `env name "1A" is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)`,
				where + `env name "A B" is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)`,
				where + `env name "A-B" is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)`,
				where + `env name "é" is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)`,
			},
		},
		{"env value with NUL", plugin("toolbox", `env = { A = "x\u0000y" }`), []string{where + `env "A": value contains a NUL byte`}},
		{
			"inherit_env",
			plugin("toolbox", `env = { HOME = "/" }`, `inherit_env = ["TZ", "9X", "TZ", "HOME"]`),
			[]string{
				where + `inherit_env name "9X" is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)`,
				where + `inherit_env lists "TZ" more than once`,
				where + `inherit_env "HOME" is also set in env; keep one`,
			},
		},
		{"worker_profile_dir does not exist", "[server]\nworker_profile_dir = \"missing\"", []string{`config.toml: server: worker_profile_dir "` + missing + `" does not exist`}},
		{"worker_profile_dir is a file", "[server]\nworker_profile_dir = \"file.txt\"", []string{`config.toml: server: worker_profile_dir "` + file + `" is not a directory`}},
		{"dir host missing", plugin("toolbox", "[[plugins.dirs]]", `guest = "/data"`), []string{where + "dirs[0]: host is required"}},
		{"dir host does not exist", plugin("toolbox", "[[plugins.dirs]]", `host = "missing"`, `guest = "/data"`), []string{where + `dirs[0]: host "` + missing + `" does not exist`}},
		{"dir host is a file", plugin("toolbox", "[[plugins.dirs]]", `host = "file.txt"`, `guest = "/data"`), []string{where + `dirs[0]: host "` + file + `" is not a directory`}},
		{"dir guest missing", plugin("toolbox", "[[plugins.dirs]]", `host = "data"`), []string{where + "dirs[0]: guest is required"}},
		{"dir guest relative", plugin("toolbox", "[[plugins.dirs]]", `host = "data"`, `guest = "data"`), []string{where + `dirs[0]: guest "data" must be an absolute path such as "/data"`}},
		{"dir guest trailing slash", plugin("toolbox", "[[plugins.dirs]]", `host = "data"`, `guest = "/data/"`), []string{where + `dirs[0]: guest "/data/" must be a clean path ("/data")`}},
		{"dir guest dot-dot", plugin("toolbox", "[[plugins.dirs]]", `host = "data"`, `guest = "/a/../b"`), []string{where + `dirs[0]: guest "/a/../b" must be a clean path ("/b")`}},
		{"dir guest root", plugin("toolbox", "[[plugins.dirs]]", `host = "data"`, `guest = "/"`), []string{where + `dirs[0]: guest "/" cannot be the root; mount under a directory such as "/data"`}},
		{
			"duplicate guest paths",
			plugin("toolbox",
				"[[plugins.dirs]]", `host = "data"`, `guest = "/data"`,
				"[[plugins.dirs]]", `host = "data"`, `guest = "/other"`,
				"[[plugins.dirs]]", `host = "."`, `guest = "/data"`),
			[]string{where + `dirs[2]: guest "/data" is already used by dirs[0]`},
		},
		{"prefix empty", plugin("toolbox", `prefix = ""`), nil},
		{"prefix other", plugin("toolbox", `prefix = "kit"`) + plugin("other"), nil},
		{"prefix invalid", plugin("toolbox", `prefix = "Kit_"`), []string{where + `prefix "Kit_" must be "" or 1-32 characters of a-z, 0-9 and '-', starting with a letter`}},
		{"prefix too long", plugin("toolbox", `prefix = "`+strings.Repeat("k", 33)+`"`), []string{where + `prefix "` + strings.Repeat("k", 33) + `" must be "" or 1-32 characters of a-z, 0-9 and '-', starting with a letter`}},
		{"prefix not a string", plugin("toolbox", `prefix = 5`), []string{`config.toml:5: plugins[0]: key "plugins.prefix": incompatible types: TOML value has type int64; destination has type string`}},
		{
			"prefix taken by another plugin's name",
			plugin("other") + plugin("toolbox", `prefix = "other"`),
			[]string{`config.toml: plugins[1] ("toolbox"): prefix "other" is already used by plugins[0]; tool names would collide`},
		},
		{
			"two unprefixed plugins are checked when they load",
			plugin("other", `prefix = ""`) + plugin("toolbox", `prefix = ""`),
			nil,
		},
		{
			"same guest path in two plugins is fine",
			plugin("a", "[[plugins.dirs]]", `host = "data"`, `guest = "/data"`) + plugin("b", "[[plugins.dirs]]", `host = "data"`, `guest = "/data"`),
			nil,
		},
		{
			"every problem at once",
			"[server]\nlog_level = \"loud\"\n" +
				"[[plugins]]\nmemory_mib = 5000\n" +
				plugin("x", "[[plugins.dirs]]", `host = "missing"`, `guest = "/"`),
			[]string{
				`config.toml: server: log_level "loud" is not one of debug, info, warn, error`,
				`config.toml: plugins[0]: name is required`,
				`config.toml: plugins[0]: path is required`,
				`config.toml: plugins[0]: sha256 is required`,
				`config.toml: plugins[0]: memory_mib 5000 out of range 1..4096`,
				`config.toml: plugins[1] ("x"): dirs[0]: host "` + missing + `" does not exist`,
				`config.toml: plugins[1] ("x"): dirs[0]: guest "/" cannot be the root; mount under a directory such as "/data"`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.toml), "config.toml", dir)
			if got := withoutLines(errorLines(err)); !reflect.DeepEqual(got, withoutLines(tc.want)) {
				t.Errorf("Parse(%q) = %q, want %q", tc.toml, got, tc.want)
			}
		})
	}
}

func TestParseUnknownKeys(t *testing.T) {
	dir := testDir(t)
	tests := []struct {
		name string
		toml string
		want []string
	}{
		{"top level", "name = \"x\"\n", []string{`config.toml:1: unknown key "name"`}},
		{"in server", "# comment\n[server]\nname = \"x\"\nnmae = \"x\"\n", []string{`config.toml:4: unknown key "server.nmae"`}},
		{"dotted at top level", "server.name = \"x\"\nserver . log_levle = \"info\"\n", []string{`config.toml:2: unknown key "server.log_levle"`}},
		{"in plugins", plugin("toolbox", "memroy_mib = 64"), []string{`config.toml:5: unknown key "plugins.memroy_mib"`}},
		{
			"in every plugin",
			plugin("a", "memroy_mib = 64") + plugin("b") + plugin("c", "memroy_mib = 64"),
			[]string{`config.toml:5: unknown key "plugins.memroy_mib"`, `config.toml:14: unknown key "plugins.memroy_mib"`},
		},
		{
			"in plugins.dirs",
			plugin("toolbox", "[[plugins.dirs]]", `host = "data"`, `guets = "/data"`, `guest = "/data"`),
			[]string{`config.toml:7: unknown key "plugins.dirs.guets"`},
		},
		{
			"in an inline dirs table",
			plugin("toolbox", `dirs = [`, `  { host = "data", guest = "/a" },`, `  { host = "data", guest = "/b", rw = true }, # comment`, `]`),
			[]string{`config.toml:7: unknown key "plugins.dirs.rw"`},
		},
		{"quoted key", plugin("toolbox", `"memory mib" = 64`), []string{`config.toml:5: unknown key "plugins.\"memory mib\""`}},
		{"literal quoted key", plugin("toolbox", `'mem' = 64`), []string{`config.toml:5: unknown key "plugins.mem"`}},
		{"unknown table", "[servr]\nname = \"x\"\nlog_level = \"info\"\n", []string{`config.toml:1: unknown key "servr"`}},
		{"unknown sub-table", plugin("toolbox", "[plugins.limits]", "memory = 1"), []string{`config.toml:5: unknown key "plugins.limits"`}},
		{"unknown array of tables", "[[plugin]]\nname = \"a\"\n[[plugin]]\nname = \"b\"\n", []string{`config.toml:1: unknown key "plugin"`, `config.toml:3: unknown key "plugin"`}},
		{"wrong case", plugin("toolbox", "Memory_MiB = 64"), []string{`config.toml:5: unknown key "plugins.Memory_MiB" (keys are case-sensitive: did you mean "plugins.memory_mib"?)`}},
		{"wrong case table", "[Server]\nname = \"x\"\n", []string{`config.toml:1: unknown key "Server" (keys are case-sensitive: did you mean "server"?)`}},
		{"env keys are never unknown", plugin("toolbox", `env = { ANYTHING = "x", _else = "y" }`), nil},
		{
			"after a multi-line string",
			"[server]\nname = \"\"\"\nnmae = 1\n\"\"\"\nnmae = 1\n",
			[]string{`config.toml:5: unknown key "server.nmae"`},
		},
		{"empty config with unknown key", "[server]\nlog_levle = \"debug\"\n", []string{`config.toml:2: unknown key "server.log_levle"`}},
		{
			"with validation errors",
			plugin("toolbox", "memory_mib = 9000", "memroy_mib = 1"),
			[]string{`config.toml:6: unknown key "plugins.memroy_mib"`, `config.toml:5: plugins[0] ("toolbox"): memory_mib 9000 out of range 1..4096`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.toml), "config.toml", dir)
			if got := errorLines(err); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%q) = %q, want %q", tc.toml, got, tc.want)
			}
		})
	}
}

func TestParseTypeErrors(t *testing.T) {
	dir := testDir(t)
	tests := []struct {
		name string
		toml string
		want []string // prefixes of the messages, in order
	}{
		{"string for integer", plugin("toolbox", `memory_mib = "big"`), []string{`config.toml:5: plugins[0]: key "plugins.memory_mib": incompatible types`}},
		{
			"line of the right plugin",
			plugin("a", "memory_mib = 5") + plugin("b", `memory_mib = "big"`) + plugin("c", "memory_mib = 6"),
			[]string{`config.toml:10: plugins[1]: key "plugins.memory_mib": incompatible types`},
		},
		{
			"line in an inline array",
			`plugins = [{ name = "a", memory_mib = 1 },` + "\n" + `{ name = "b", memory_mib = "x" }]`,
			[]string{`config.toml:2: plugins[1]: key "plugins.memory_mib": incompatible types`},
		},
		{
			"every plugin reported",
			plugin("a", `timeout = "soon"`) + plugin("b", `max_output_bytes = 1.5`),
			[]string{
				`config.toml:5: plugins[0]: key "plugins.timeout": invalid duration "soon" (want a string like "30s" or "1m30s")`,
				`config.toml:10: plugins[1]: key "plugins.max_output_bytes": incompatible types`,
			},
		},
		{"duration without unit", plugin("toolbox", "timeout = 30"), []string{`config.toml:5: plugins[0]: key "plugins.timeout": invalid duration "30"`}},
		{"server", "[server]\nname = 5\n", []string{`config.toml:2: server: key "server.name": incompatible types`}},
		{"server not a table", "server = 5\n", []string{`config.toml:1: server: key "server": type mismatch`}},
		{"plugins not an array", "plugins = 5\n", []string{`config.toml:1: key "plugins": incompatible types`}},
		{"writable", plugin("toolbox", "[[plugins.dirs]]", `host = "data"`, `guest = "/d"`, `writable = "yes"`), []string{`config.toml:8: plugins[0]: key "plugins.dirs.writable": incompatible types`}},
		{"env value", plugin("toolbox", "env = { A = 1 }"), []string{`config.toml:5: plugins[0]: key "plugins.env.A": incompatible types`}},
		{
			"with unknown keys, without validation",
			plugin("toolbox", "memory_mib = true", "bogus = 1") + plugin("toolbox", "memory_mib = 1e9"),
			[]string{
				`config.toml:5: plugins[0]: key "plugins.memory_mib": incompatible types`,
				`config.toml:11: plugins[1]: key "plugins.memory_mib": `,
				`config.toml:6: unknown key "plugins.bogus"`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.toml), "config.toml", dir)
			got := errorLines(err)
			ok := len(got) == len(tc.want)
			for i := 0; ok && i < len(got); i++ {
				ok = strings.HasPrefix(got[i], tc.want[i])
			}
			if !ok {
				t.Errorf("Parse(%q) = %q, want messages starting %q", tc.toml, got, tc.want)
			}
		})
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want string
	}{
		{"missing value", "[server]\nname = \n", "config.toml:2: "},
		{"unterminated string", "[server]\n\nname = \"demo\n", "config.toml:3: "},
		{"duplicate key", "[server]\nname = \"a\"\nname = \"b\"\n", "config.toml:3: "},
		{"duplicate table", "[server]\n[server]\n", "config.toml:2: "},
		{"not UTF-8", "[server]\nname = \"\xff\"\n", "config.toml:2: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.toml), "config.toml", t.TempDir())
			var pe toml.ParseError
			if got := errorLines(err); len(got) != 1 || !strings.HasPrefix(got[0], tc.want) || !errors.As(err, &pe) {
				t.Errorf("Parse(%q) = %q, want one toml.ParseError starting %q", tc.toml, got, tc.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	root := t.TempDir()
	conf := filepath.Join(root, "conf")
	for _, d := range []string{filepath.Join(conf, "data"), filepath.Join(root, "shared")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	shared := filepath.Join(root, "shared")
	body := `[server]
cache_dir = "cache"
worker_profile_dir = "data"

[[plugins]]
name = "a"
path = "plugins/a.wasm"
sha256 = "` + sha + `"
[[plugins.dirs]]
host = "data"
guest = "/data"
[[plugins.dirs]]
host = "../shared/"
guest = "/shared"
[[plugins.dirs]]
host = "` + filepath.ToSlash(shared) + `"
guest = "/abs"

[[plugins]]
name = "b"
path = "../b.wasm"
sha256 = "` + sha + `"

[[plugins]]
name = "c"
path = "/opt/wasm/./c.wasm"
sha256 = "` + sha + `"
`
	path := filepath.Join(conf, "config.toml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}

	cfg, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%q) = %v, want no error", path, err)
	}
	got := []string{cfg.Server.CacheDir, cfg.Server.WorkerProfileDir, cfg.Plugins[0].Path, cfg.Plugins[1].Path, cfg.Plugins[2].Path}
	for _, d := range cfg.Plugins[0].Dirs {
		got = append(got, d.Host)
	}
	want := []string{
		filepath.Join(conf, "cache"),
		filepath.Join(conf, "data"),
		filepath.Join(conf, "plugins", "a.wasm"),
		filepath.Join(root, "b.wasm"),
		filepath.FromSlash("/opt/wasm/c.wasm"),
		filepath.Join(conf, "data"),
		shared,
		shared,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load(%q) paths = %q, want %q", path, got, want)
	}

	t.Run("relative config path", func(t *testing.T) {
		t.Chdir(root)
		rel := filepath.Join("conf", "config.toml")
		cfg, err := Load(rel)
		if err != nil || cfg.Plugins[0].Path != want[2] {
			t.Errorf("Load(%q) = %v, %v, want path %q", rel, cfg, err, want[2])
		}
	})

	t.Run("missing file", func(t *testing.T) {
		missing := filepath.Join(root, "nope.toml")
		_, err := Load(missing)
		if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
			t.Errorf("Load(%q) = %v, want an fs.ErrNotExist error naming the path", missing, err)
		}
	})

	t.Run("messages name the path", func(t *testing.T) {
		bad := filepath.Join(root, "bad.toml")
		if err := os.WriteFile(bad, []byte("[server]\nnmae = 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(bad)
		want := bad + `:2: unknown key "server.nmae"`
		if err == nil || err.Error() != want {
			t.Errorf("Load(%q) = %v, want %v", bad, err, want)
		}
	})
}

func TestCompilationCacheDir(t *testing.T) {
	tests := []struct {
		cacheDir    string
		wantDir     string
		wantEnabled bool
	}{
		{"", defaultCacheDir(), true},
		{"off", "", false},
		{"/var/cache/x", "/var/cache/x", true},
	}
	for _, tc := range tests {
		t.Run(tc.cacheDir, func(t *testing.T) {
			dir, enabled := Server{CacheDir: tc.cacheDir}.CompilationCacheDir()
			if dir != tc.wantDir || enabled != tc.wantEnabled {
				t.Errorf("Server{CacheDir: %q}.CompilationCacheDir() = %q, %v, want %q, %v", tc.cacheDir, dir, enabled, tc.wantDir, tc.wantEnabled)
			}
		})
	}
	if d := defaultCacheDir(); !filepath.IsAbs(d) || !strings.Contains(d, "mcp-wasmhost") {
		t.Errorf("defaultCacheDir() = %q, want an absolute path naming mcp-wasmhost", d)
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		text    string
		want    time.Duration
		wantErr bool
		round   string
	}{
		{"30s", 30 * time.Second, false, "30s"},
		{"1m30s", 90 * time.Second, false, "1m30s"},
		{"250ms", 250 * time.Millisecond, false, "250ms"},
		{"0", 0, false, "0s"},
		{"-2h", -2 * time.Hour, false, "-2h0m0s"},
		{"30", 0, true, ""},
		{"", 0, true, ""},
		{"soon", 0, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			var d Duration
			err := d.UnmarshalText([]byte(tc.text))
			if (err != nil) != tc.wantErr || d.Duration != tc.want {
				t.Fatalf("UnmarshalText(%q) = %v, %v, want %v, error %v", tc.text, d.Duration, err, tc.want, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if got, err := d.MarshalText(); string(got) != tc.round || err != nil {
				t.Errorf("MarshalText(%v) = %q, %v, want %q, nil", d.Duration, got, err, tc.round)
			}
		})
	}
}

func TestKeyLines(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []keyLine
	}{
		{"empty", "", nil},
		{
			"tables and arrays of tables",
			"a = 1\n[server] # x = 1\nname = 'n'\n[[plugins]]\nname = 'p'\n[[plugins.dirs]]\nhost = 'h'\n[[plugins]]\nname = 'q'\n",
			[]keyLine{
				{"a", 1, -1, false}, {"server", 2, -1, true}, {"server.name", 3, -1, false}, {"plugins", 4, 0, true}, {"plugins.name", 5, 0, false},
				{"plugins.dirs", 6, 0, true}, {"plugins.dirs.host", 7, 0, false}, {"plugins", 8, 1, true}, {"plugins.name", 9, 1, false},
			},
		},
		{
			"dotted and quoted keys",
			"a . b = 1\n\"c.d\".'e' = 2\n[ x . \"y z\" ]\n\"\" = 3\n",
			[]keyLine{{"a.b", 1, -1, false}, {`"c.d".e`, 2, -1, false}, {`x."y z"`, 3, -1, true}, {`x."y z".""`, 4, -1, false}},
		},
		{
			"multi-line strings and arrays",
			"a = \"\"\"\nb = 1\\\n\"\"\"\"\nc = '''\nd = 2'''\ne = [\n  1, # f = 3\n  \"]\",\n]\ng = 4\n",
			[]keyLine{{"a", 1, -1, false}, {"c", 4, -1, false}, {"e", 6, -1, false}, {"g", 10, -1, false}},
		},
		{
			"inline tables",
			"t = { a = 1, b = { c = [ { d = 2 } ] }, 'e' = \"}\" }\nplugins = [ { n = 1 },\n { n = 2 } ]\n",
			[]keyLine{
				{"t", 1, -1, false}, {"t.a", 1, -1, false}, {"t.b", 1, -1, false}, {"t.b.c", 1, -1, false}, {"t.b.c.d", 1, -1, false}, {"t.e", 1, -1, false},
				{"plugins", 2, -1, false}, {"plugins.n", 2, 0, false}, {"plugins.n", 3, 1, false},
			},
		},
		{"CRLF", "a = 1\r\n[b]\r\nc = 2\r\n", []keyLine{{"a", 1, -1, false}, {"b", 2, -1, true}, {"b.c", 3, -1, false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := keyLines(tc.doc); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("keyLines(%q) = %v, want %v", tc.doc, got, tc.want)
			}
		})
	}
}

// FuzzKeyLines checks keyLines against the toml package: for every document
// the package parses, keyLines must find the same keys in the same order.
func FuzzKeyLines(f *testing.F) {
	for _, s := range []string{
		"a = 1\n[b]\nc = 'x'\n",
		plugin("toolbox", `env = { A = "1" }`, "[[plugins.dirs]]", `host = "d"`, `guest = "/d"`),
		"a.\"b c\".d = [1, { e = 2 }, [ { f = '''\n''' } ]]\n",
		"x = \"\"\"\ny = 1\"\"\"\"\"\n[[t]]\n[t.u]\n",
		"\xef\xbb\xbfa = 1\n",
		"\"\\e\\x41\\u00e9\\U0001F600\\\\\" = 0\n",
		"d = 1979-05-27 07:32:00Z\nn = [ -inf, nan, 0x1F ]\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		md, err := toml.Decode(doc, new(map[string]any))
		if err != nil {
			return
		}
		var want []string
		for _, k := range md.Keys() {
			want = append(want, k.String())
		}
		var got []string
		for _, kl := range keyLines(doc) {
			got = append(got, kl.key)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("keyLines(%q) keys = %q, want %q", doc, got, want)
		}
	})
}

// FuzzParse checks that no input makes Parse panic, and that what it accepts
// has its defaults filled in.
func FuzzParse(f *testing.F) {
	f.Add([]byte(plugin("toolbox", "memory_mib = 9000", "memroy = 1")))
	f.Add([]byte("[server]\nname = 5\n"))
	f.Add([]byte("plugins = [{ name = 'a' }]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "fuzz.toml", "/nonexistent")
		if err != nil {
			return
		}
		for _, p := range cfg.Plugins {
			if p.MemoryMiB == 0 || p.Timeout.Duration == 0 || p.MaxInputBytes == 0 || p.MaxOutputBytes == 0 || !filepath.IsAbs(p.Path) {
				t.Errorf("Parse(%q) = %+v, want defaults filled in and absolute paths", data, p)
			}
		}
	})
}

// When a key's line cannot be found, the message still names the key.
func TestUnknownKeysWithoutLine(t *testing.T) {
	const doc = "[server]\nnmae = 1\n"
	md, err := toml.Decode(doc, new(Config))
	if err != nil {
		t.Fatal(err)
	}
	got := errorLines(errors.Join(unknownKeys("config.toml", &md, nil)...))
	want := []string{`config.toml: unknown key "server.nmae"`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unknownKeys(%q) = %q, want %q", doc, got, want)
	}
}
