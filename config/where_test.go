package config

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestValueErrorLines checks that every kind of value error names the line it is
// about: the line of the key, or of its table's header when the key is missing. Each
// case marks that line with "# <-"; the case's config has exactly one problem.
func TestValueErrorLines(t *testing.T) {
	dir := testDir(t)
	const p = "[[plugins]]\nname = \"a\"\npath = \"a.wasm\"\nsha256 = \"" + sha + "\"\n"
	tests := []struct {
		name, toml, want string // want: a part of the message
	}{
		{"server log_level", "[server]\nname = \"x\"\nlog_level = \"loud\" # <-\n", "log_level"},
		{"server gc_percent", "[server]\ngc_percent = 5 # <-\n", "gc_percent"},
		{"server duration", "[server]\n\nbody_read_timeout = \"2h\" # <-\n", "body_read_timeout"},
		{"tasks store", "[tasks]\nstore = \"disk\" # <-\n", "store"},
		{"tasks ttl", "[tasks]\nmax_ttl = \"1ms\" # <-\n", "max_ttl"},
		{"plugin name", "[[plugins]]\nname = \"A\" # <-\npath = \"a.wasm\"\nsha256 = \"" + sha + "\"\n", "name"},
		{"plugin name missing", "[[plugins]] # <-\npath = \"a.wasm\"\nsha256 = \"" + sha + "\"\n", "name is required"},
		{"duplicate name", p + "[[plugins]]\nname = \"a\" # <-\npath = \"b.wasm\"\nsha256 = \"" + sha + "\"\nprefix = \"b\"\n", "already used"},
		{"prefix", p + "prefix = \"B_\" # <-\n", "prefix"},
		{"path missing", "[[plugins]] # <-\nname = \"a\"\nsha256 = \"" + sha + "\"\n", "path is required"},
		{"sha256 missing", "[[plugins]] # <-\nname = \"a\"\npath = \"a.wasm\"\n", "sha256 is required"},
		{"sha256 malformed", "[[plugins]]\nname = \"a\"\npath = \"a.wasm\"\nsha256 = \"abc\" # <-\n", "sha256"},
		{"memory_mib zero", p + "memory_mib = 0 # <-\n", "memory_mib 0 out of range 1..4096"},
		{"memory_mib too big", p + "memory_mib = 4097 # <-\n", "memory_mib 4097"},
		{"timeout", p + "\ntimeout = \"25h\" # <-\n", "timeout"},
		{"max_concurrent", p + "max_concurrent = 2000 # <-\n", "max_concurrent"},
		{"workers of a trusted plugin", p + "trusted = true\nworkers = 2 # <-\n", "workers"},
		{"max_output_bytes", p + "max_output_bytes = -1 # <-\n", "max_output_bytes"},
		{"env name", p + "env = { \"1A\" = \"x\" } # <-\n", "env name"},
		{"inherit_env", p + "env = { TZ = \"x\" }\ninherit_env = [\"TZ\"] # <-\n", "inherit_env"},
		{"second plugin", p + "[[plugins]]\nname = \"b\"\npath = \"b.wasm\"\nsha256 = \"" + sha + "\"\nmemory_mib = 5000 # <-\n", `plugins[1] ("b")`},
		{"dir host missing", p + "[[plugins.dirs]] # <-\nguest = \"/d\"\n", "host is required"},
		{"dir host does not exist", p + "[[plugins.dirs]]\nhost = \"missing\" # <-\nguest = \"/d\"\n", "does not exist"},
		{"second dir", p + "[[plugins.dirs]]\nhost = \"data\"\nguest = \"/d\"\n[[plugins.dirs]]\nhost = \"data\"\nguest = \"/\" # <-\n", "dirs[1]"},
		{"net origins missing", p + "[[plugins.net]] # <-\nmethods = [\"GET\"]\n", "origins is required"},
		{"net header", p + "[[plugins.net]]\norigins = [\"https://example.com\"]\nheaders = { A = \"${NO_SUCH_VARIABLE_X}\" } # <-\n", "header"},
		{"net_limits", p + "[plugins.net_limits]\nmax_per_call = 1000 # <-\n", "net_limits.max_per_call"},
		{"auth mode", "[server.auth]\nmode = \"basic\" # <-\n", "mode"},
		{"auth key", "[server.auth]\nmode = \"api_keys\"\n[[server.auth.keys]]\nname = \"k\"\nsha256 = \"" + sha + "\"\n[[server.auth.keys]] # <-\nsha256 = \"" + sha + "\"\n[[server.auth.grants]]\nkey = \"k\"\ntools = [\"*\"]\n", "keys[1]: name is required"},
		{"auth grant", "[server.auth]\nmode = \"api_keys\"\n[[server.auth.keys]]\nname = \"k\"\nsha256 = \"" + sha + "\"\n[[server.auth.grants]]\nkey = \"k\"\ntools = [] # <-\n", "tools is empty"},
		{"inline plugin", "plugins = [{ name = \"a\", path = \"a.wasm\", sha256 = \"" + sha + "\" },\n { name = \"b\", path = \"b.wasm\", sha256 = \"" + sha + "\", memory_mib = 0 }] # <-\n", "memory_mib 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			line := 0
			for i, l := range strings.Split(tc.toml, "\n") {
				if strings.HasSuffix(l, "# <-") {
					line = i + 1
				}
			}
			_, err := Parse([]byte(tc.toml), "config.toml", dir)
			got := errorLines(err)
			prefix := "config.toml:" + strconv.Itoa(line) + ": "
			if len(got) != 1 || !strings.HasPrefix(got[0], prefix) || !strings.Contains(got[0], tc.want) {
				t.Errorf("Parse(%q) = %q, want one error starting %q, containing %q", tc.toml, got, prefix, tc.want)
			}
		})
	}
}

// TestWhere checks Plugin.Where: the line of the plugin's path key, else its header.
func TestWhere(t *testing.T) {
	dir := testDir(t)
	doc := "[server]\nname = \"x\"\n\n" + plugin("a") + "\n" + "[[plugins]]\nname = \"b\"\nsha256 = \"" + sha + "\"\n\npath = \"b.wasm\"\n"
	cfg, err := Parse([]byte(doc), "conf/x.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range cfg.Plugins {
		got = append(got, p.Where)
	}
	if want := []string{"conf/x.toml:6", "conf/x.toml:13"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Where = %q, want %q", got, want)
	}
	b := cfg.Plugins[1]
	if want := map[string]int{"name": 10, "sha256": 11, "path": 13}; !reflect.DeepEqual(b.Lines, want) {
		t.Errorf("Lines = %v, want %v", b.Lines, want)
	}
	if got, want := b.WhereKey("sha256"), "conf/x.toml:11"; got != want {
		t.Errorf("WhereKey(sha256) = %q, want %q", got, want)
	}
	if got, want := b.WhereKey("memory_mib"), b.Where; got != want {
		t.Errorf("WhereKey(memory_mib), not written = %q, want Where %q", got, want)
	}
}
