package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNet(t *testing.T) {
	const secret = "tok-3f9a-never-shown"
	t.Setenv("EGRESS_TEST_TOKEN", secret)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "key.txt"), []byte(secret+"-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := plugin("jobs") + `
[plugins.net_limits]
max_response_bytes = 2048
timeout = "5s"

[[plugins.net]]
origins = ["https://api.github.com", "https://*.example.com:8443"]
methods = ["GET"]
path_prefixes = ["/repos/"]
allow_addresses = ["127.0.0.1/32"]
headers = { Authorization = "Bearer ${EGRESS_TEST_TOKEN}", X-Key = "${file:key.txt}" }
ca_file = "ca.pem"
`
	cfg, err := Parse([]byte(src), "config.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Plugins[0]
	if len(p.Net) != 1 {
		t.Fatalf("Net = %+v", p.Net)
	}
	n := p.Net[0]
	if got := n.Headers["Authorization"]; got != "Bearer "+secret {
		t.Errorf("Authorization = %q, want the variable expanded", got)
	}
	if got := n.Headers["X-Key"]; got != secret+"-file" {
		t.Errorf("X-Key = %q, want the file's contents", got)
	}
	if n.CAFile != filepath.Join(dir, "ca.pem") {
		t.Errorf("CAFile = %q, want it absolute", n.CAFile)
	}
	if p.NetLimits.MaxResponseBytes != 2048 || p.NetLimits.Timeout.Duration != 5*time.Second {
		t.Errorf("NetLimits = %+v", p.NetLimits)
	}

	for _, tc := range []struct {
		name, src, want string
	}{
		{"missing variable", "[[plugins.net]]\norigins = [\"https://a.com\"]\nheaders = { Authorization = \"Bearer ${EGRESS_TEST_UNSET}\" }",
			`net[0]: header "Authorization": environment variable EGRESS_TEST_UNSET is not set`},
		{"missing file", "[[plugins.net]]\norigins = [\"https://a.com\"]\nheaders = { A = \"${file:nope.txt}\" }", `header "A": secret file:`},
		{"bad reference", "[[plugins.net]]\norigins = [\"https://a.com\"]\nheaders = { A = \"${" + "x y}\" }", `is not ${NAME} or ${file:path}`},
		{"no origins", "[[plugins.net]]\nmethods = [\"GET\"]", "net[0]: origins is required"},
		{"unknown key", "[[plugins.net]]\norigins = [\"https://a.com\"]\norigin = \"x\"", `unknown key "plugins.net.origin"`},
		{"limit", "[plugins.net_limits]\nmax_response_bytes = 10000000", "net_limits.max_response_bytes 10000000 out of range"},
		{"timeout", "[plugins.net_limits]\ntimeout = \"100h\"", "net_limits.timeout 100h0m0s out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(plugin("jobs")+tc.src), "config.toml", dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want an error holding %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error shows the secret: %v", err)
			}
		})
	}
}
