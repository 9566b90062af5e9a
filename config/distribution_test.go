package config

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestDistribution(t *testing.T) {
	dir := testDir(t)
	const src = `source = "oci://registry.example/org/plugin:1.2.0"`
	const where = `config.toml: plugins[0] ("p"): `
	pl := func(lines ...string) string {
		s := "[[plugins]]\nname = \"p\"\n"
		for _, l := range lines {
			s += l + "\n"
		}
		return s
	}
	tests := []struct {
		name string
		toml string
		want []string
	}{
		{"keyed", pl(src, "[plugins.verify]", `key = "cosign.pub"`), nil},
		{"keyless", pl(src, "[plugins.verify]", `identity = "a@b.example"`, `issuer = "https://i.example"`, `trusted_root = "root.json"`), nil},
		{"none", pl(src, `verify = "none"`), nil},
		{"digest", pl(`source = "oci://r.example/p@sha256:`+sha+`"`, `verify = "none"`), nil},
		{"path and source", pl(src, `path = "a.wasm"`, `verify = "none"`), []string{where + "path and source are exclusive: a plugin is a local file or comes from a registry"}},
		{"no policy", pl(src), []string{where + `source needs a signature policy: [plugins.verify] with key, or identity, issuer and trusted_root; or verify = "none" to run it unsigned`}},
		{"sha256 with source", pl(src, `sha256 = "`+sha+`"`, `verify = "none"`), []string{where + "sha256 is for path; a source is pinned by the lockfile (mcp-wasmhost.lock), which mcp-wasmhost pull writes"}},
		{"verify with path", pl(`path = "a.wasm"`, `sha256 = "`+sha+`"`, `verify = "none"`), []string{where + "verify is for a source (oci://...); a path is pinned by its sha256"}},
		{"verify other string", pl(src, `verify = "off"`), []string{`config.toml:4: plugins[0]: key "plugins.verify": verify = "off": want "none" or a [plugins.verify] table`}},
		{"key and identity", pl(src, "[plugins.verify]", `key = "k"`, `identity = "a@b"`), []string{where + "verify: key and keyless (identity, issuer, trusted_root) are exclusive"}},
		{"keyless without root", pl(src, "[plugins.verify]", `identity = "a@b"`, `issuer = "https://i"`), []string{where + "verify: keyless needs identity, issuer and trusted_root (or give key)"}},
		{"unknown verify key", pl(src, "[plugins.verify]", `key = "k"`, `identity_regexp = ".*"`), []string{`config.toml:6: unknown key "plugins.verify.identity_regexp"`}},
		{"http source", pl(`source = "https://r.example/p:1"`, `verify = "none"`), []string{where + `source "https://r.example/p:1": want oci://REGISTRY/REPOSITORY:TAG or @sha256:...`}},
		{"registries", "[server.distribution]\n[[server.distribution.registries]]\nhost = \"r.example\"\nusername = \"u\"\n[[server.distribution.registries]]\nhost = \"r.example\"\n[[server.distribution.registries]]\nhost = \"https://x\"\n",
			[]string{
				"config.toml: server.distribution.registries[0]: username and password_file go together",
				`config.toml: server.distribution.registries[1]: host "r.example" is already configured in registries[0]`,
				`config.toml: server.distribution.registries[2]: host "https://x": want host or host:port, no scheme or path`,
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.toml), "config.toml", dir)
			// The lines are TestValueErrorLines'; here the messages.
			if got := withoutLines(errorLines(err)); !reflect.DeepEqual(got, withoutLines(tc.want)) {
				t.Errorf("Parse(%q) = %q, want %q", tc.toml, got, tc.want)
			}
		})
	}
	c, err := Parse([]byte("[server.distribution]\ncache_dir = \"oci\"\n"+pl(src, "[plugins.verify]", `key = "cosign.pub"`)), "config.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Server.Distribution.Cache(); got != filepath.Join(dir, "oci") {
		t.Errorf("Cache() = %q, want it under the config's directory", got)
	}
	if got := c.Plugins[0].Verify.Key; got != filepath.Join(dir, "cosign.pub") {
		t.Errorf("verify.key = %q, want it resolved", got)
	}
	var zero Distribution
	if zero.Cache() == "" || filepath.Base(zero.Cache()) != "oci" && filepath.Base(zero.Cache()) != "mcp-wasmhost-oci" {
		t.Errorf("default Cache() = %q", zero.Cache())
	}
}
