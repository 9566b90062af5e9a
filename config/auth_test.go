package config_test

import (
	"strings"
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/config"
)

func TestAuth(t *testing.T) {
	const sum = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	const oauth = "[server.auth]\nmode = \"oauth\"\nissuer = \"https://as\"\nresource = \"https://rs/mcp\"\n"
	tests := []struct {
		name string
		doc  string
		fail []string // substrings of the error; nil means it loads
	}{
		{"none", "", nil},
		{"insecure", "[server.auth]\ninsecure_no_auth = true", nil},
		{"oauth url", oauth + "jwks_url = \"https://as/jwks\"\n[[server.auth.grants]]\nscope = \"s\"\ntools = [\"a_*\"]", nil},
		{"oauth http jwks", oauth + "jwks_url = \"http://as.example/jwks\"", []string{"http only on a loopback address"}},
		{"oauth loopback jwks", oauth + "jwks_url = \"http://127.0.0.1:9/jwks\"", nil},
		{"oauth no jwks", oauth, []string{"exactly one of jwks_url and jwks_file, or introspection_url"}},
		{"introspection only", oauth + "introspection_url = \"https://as/introspect\"\nintrospection_client_id = \"rs\"\nintrospection_secret_file = \"s\"\nintrospection_cache = \"30s\"", nil},
		{"introspection and jwks", oauth + "jwks_url = \"https://as/jwks\"\nintrospection_url = \"https://as/introspect\"\nintrospection_client_id = \"rs\"\nintrospection_secret_file = \"s\"", nil},
		{"introspection in the clear", oauth + "introspection_url = \"http://as.example/introspect\"\nintrospection_client_id = \"rs\"\nintrospection_secret_file = \"s\"", []string{"introspection_url \"http://as.example/introspect\": http only on a loopback address"}},
		{"introspection without client", oauth + "introspection_url = \"https://as/introspect\"\nintrospection_cache = \"1h\"", []string{"needs introspection_client_id and introspection_secret_file", "introspection_cache 1h0m0s out of range"}},
		{"introspection client without url", oauth + "jwks_url = \"https://as/jwks\"\nintrospection_client_id = \"rs\"", []string{"need introspection_url"}},
		{"introspection without oauth", "[server.auth]\nintrospection_url = \"https://as/introspect\"", []string{"introspection and grants need mode"}},
		{"oauth both", oauth + "jwks_url = \"https://as/jwks\"\njwks_file = \"j.json\"", []string{"exactly one of"}},
		{"oauth no issuer", "[server.auth]\nmode = \"oauth\"\njwks_url = \"https://as/j\"", []string{"needs issuer", "needs resource"}},
		{"hmac", oauth + "jwks_url = \"https://as/j\"\nalgorithms = [\"HS256\", \"none\"]", []string{`algorithm "HS256"`, `algorithm "none"`}},
		{"skew", oauth + "jwks_url = \"https://as/j\"\nclock_skew = \"1h\"", []string{"clock_skew 1h0m0s out of range"}},
		{"unknown mode", "[server.auth]\nmode = \"basic\"", []string{`mode "basic" is not one of`}},
		{"unknown key", "[server.auth]\nmodes = \"oauth\"", []string{"modes"}},
		{"keys", "[server.auth]\nmode = \"api_keys\"\n[[server.auth.keys]]\nname = \"ci\"\nsha256 = \"" + sum + "\"\n[[server.auth.grants]]\nkey = \"ci\"\ntools = [\"*\"]", nil},
		{"keys none", "[server.auth]\nmode = \"api_keys\"", []string{"at least one [[server.auth.keys]]"}},
		{"bad hash", "[server.auth]\nmode = \"api_keys\"\n[[server.auth.keys]]\nname = \"ci\"\nsha256 = \"abc\"", []string{"64 hex digits"}},
		{"grant to no key", "[server.auth]\nmode = \"api_keys\"\n[[server.auth.keys]]\nname = \"ci\"\nsha256 = \"" + sum + "\"\n[[server.auth.grants]]\nkey = \"cd\"\ntools = [\"*\"]", []string{`key "cd" names no`}},
		{"grant pattern", oauth + "jwks_url = \"https://as/j\"\n[[server.auth.grants]]\nscope = \"s\"\ntools = [\"a*b\"]", []string{`"*" only at the end`}},
		{"rate", "[server.auth]\nmode = \"api_keys\"\nrate_limit = -1.0\nrate_burst = 200000\n[[server.auth.keys]]\nname = \"ci\"\nsha256 = \"" + sum + "\"", []string{"rate_limit -1 out of range", "rate_burst 200000 out of range"}},
		{"quotas", "[server.auth]\nmode = \"api_keys\"\nmax_parked = 1\nmax_tool_concurrency = 100000\n[[server.auth.keys]]\nname = \"ci\"\nsha256 = \"" + sum + "\"", nil},
		{"bad quotas", "[server.auth]\nmode = \"api_keys\"\nmax_parked = -1\nmax_tool_concurrency = 100001\n[[server.auth.keys]]\nname = \"ci\"\nsha256 = \"" + sum + "\"", []string{"max_parked -1 out of range", "max_tool_concurrency 100001 out of range"}},
		{"insecure with mode", oauth + "jwks_url = \"https://as/j\"\ninsecure_no_auth = true", []string{"insecure_no_auth needs mode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tt.doc), "config.toml", t.TempDir())
			if tt.fail == nil {
				if err != nil {
					t.Errorf("Parse(%q) = %v, want nil", tt.doc, err)
				}
				return
			}
			for _, f := range tt.fail {
				if err == nil || !strings.Contains(err.Error(), f) {
					t.Errorf("Parse(%q) = %v, want it to contain %q", tt.doc, err, f)
				}
			}
		})
	}
}

func TestAudit(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		doc  string
		fail []string // substrings of the error; nil means it loads
	}{
		{"off", "", nil},
		{"on", "[server.audit]\npath = \"audit.jsonl\"\nmax_mib = 1\nkeep = 1000\nsync_interval = \"10ms\"\nqueue = 16", nil},
		{"bad", "[server.audit]\npath = \"a\"\nmax_mib = 100001\nkeep = -1\nsync_interval = \"2m\"\nqueue = 15",
			[]string{"max_mib 100001 out of range", "keep -1 out of range", "sync_interval 2m0s out of range", "queue 15 out of range"}},
		{"unknown key", "[server.audit]\nfile = \"a\"", []string{"file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tt.doc), "config.toml", dir)
			if tt.fail == nil {
				if err != nil {
					t.Fatalf("Parse(%q) = %v, want nil", tt.doc, err)
				}
				if tt.name == "on" && cfg.Server.Audit.Path != dir+"/audit.jsonl" {
					t.Errorf("path %q, want it resolved against the config's directory", cfg.Server.Audit.Path)
				}
				return
			}
			for _, f := range tt.fail {
				if err == nil || !strings.Contains(err.Error(), f) {
					t.Errorf("Parse(%q) = %v, want it to contain %q", tt.doc, err, f)
				}
			}
		})
	}
}
