package config

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Net holds one [[plugins.net]] table: origins the plugin may reach over HTTP and
// how. A plugin without one reaches nothing. The egress package checks the origins,
// methods and addresses in full when the plugin loads.
type Net struct {
	// Origins are "scheme://host[:port]": scheme http or https; host a DNS name,
	// "*.suffix" (any name below suffix, not suffix itself), an IPv4 address or a
	// bracketed IPv6 address; no port means the scheme's. At least one.
	Origins []string `toml:"origins"`
	// Methods, upper case, limit the HTTP methods. Nil allows any (CONNECT and TRACE
	// never).
	Methods []string `toml:"methods"`
	// PathPrefixes limit the request paths, each starting with "/". Nil allows any.
	PathPrefixes []string `toml:"path_prefixes"`
	// AllowAddresses are addresses or CIDR ranges ("127.0.0.1/32", "10.1.2.0/24")
	// that these origins may reach although they are not public (loopback, private,
	// link-local, metadata...). Nil means public addresses only.
	AllowAddresses []string `toml:"allow_addresses"`
	// Headers are added by the server to every request to these origins; the guest
	// never sees them and may not set them. In a value, ${NAME} is replaced at load
	// by the server's environment variable NAME and ${file:path} by the contents of
	// the file at path (relative to the config file's directory; one trailing newline
	// dropped); a variable that is not set or a file that cannot be read is a load
	// error. The values are secrets: no error or log line shows them. Nil means none.
	Headers map[string]string `toml:"headers"`
	// CAFile is a PEM bundle, relative to the config file's directory, that alone
	// verifies these origins' TLS certificates (a private CA, or a test's). ""
	// means the system's roots. TLS is always verified.
	CAFile string `toml:"ca_file"`
}

// NetLimits holds a plugin's [plugins.net_limits] table. Each zero field means the
// egress package's default.
type NetLimits struct {
	// MaxRequestBytes caps a request body, 1..MaxNetRequestBytes.
	// 0 means egress.DefaultMaxRequestBytes (32 KiB).
	MaxRequestBytes int `toml:"max_request_bytes"`
	// MaxResponseBytes caps a response body, 1..MaxNetResponseBytes.
	// 0 means egress.DefaultMaxResponseBytes (512 KiB).
	MaxResponseBytes int `toml:"max_response_bytes"`
	// Timeout bounds one request with its redirects, MinTimeout..MaxTimeout, inside
	// the call's own timeout. 0 means egress.DefaultTimeout (30s).
	Timeout Duration `toml:"timeout"`
	// MaxPerCall is how many requests one call may make, 1..100.
	// 0 means egress.DefaultMaxPerCall (64).
	MaxPerCall int `toml:"max_per_call"`
	// MaxConcurrent is how many of the plugin's requests run at once, 1..1024;
	// more wait. 0 means egress.DefaultMaxConcurrent (8).
	MaxConcurrent int `toml:"max_concurrent"`
}

// Bounds of [NetLimits], from the guest ABI: a request body travels in the request's
// params (64 KiB), a response body base64-encoded in its reply (1 MiB).
const (
	MaxNetRequestBytes  = 48 << 10
	MaxNetResponseBytes = 640 << 10
)

// finishNet expands the header values, makes the CA files absolute and checks the
// limits of one plugin's network grants.
func (p *Plugin) finishNet(where, dir string, fail func(where, format string, args ...any)) {
	for i := range p.Net {
		n := &p.Net[i]
		nwhere := fmt.Sprintf("%s: net[%d]", where, i)
		if len(n.Origins) == 0 {
			fail(nwhere, "origins is required")
		}
		for k, v := range n.Headers {
			exp, err := expandSecret(v, dir)
			if err != nil {
				fail(nwhere, "header %q: %v", k, err)
				continue
			}
			n.Headers[k] = exp
		}
		if n.CAFile != "" {
			n.CAFile = resolve(dir, n.CAFile)
		}
	}
	l := &p.NetLimits
	for _, lim := range []struct {
		key   string
		v, hi int
	}{
		{"max_request_bytes", l.MaxRequestBytes, MaxNetRequestBytes},
		{"max_response_bytes", l.MaxResponseBytes, MaxNetResponseBytes},
		{"max_per_call", l.MaxPerCall, 100},
		{"max_concurrent", l.MaxConcurrent, 1024},
	} {
		if lim.v < 0 || lim.v > lim.hi {
			fail(where, "net_limits.%s %d out of range 1..%d", lim.key, lim.v, lim.hi)
		}
	}
	if d := l.Timeout.Duration; d != 0 && (d < time.Millisecond || d > MaxTimeout) {
		fail(where, "net_limits.timeout %v out of range %v..%v", d, time.Millisecond, MaxTimeout)
	}
}

// expandSecret replaces ${NAME} with the server's environment variable and
// ${file:path} with a file's contents. Its errors name the variable or file, never
// a value.
func expandSecret(v, dir string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(v, "${")
		if i < 0 {
			b.WriteString(v)
			return b.String(), nil
		}
		end := strings.IndexByte(v[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unclosed ${ in its value")
		}
		b.WriteString(v[:i])
		ref := v[i+2 : i+end]
		if file, ok := strings.CutPrefix(ref, "file:"); ok {
			data, err := os.ReadFile(resolve(dir, file))
			if err != nil {
				return "", fmt.Errorf("secret file: %v", err)
			}
			b.WriteString(strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r"))
		} else {
			if !validEnvName(ref) {
				return "", fmt.Errorf("${%s} is not ${NAME} or ${file:path}", ref)
			}
			val, ok := os.LookupEnv(ref)
			if !ok {
				return "", fmt.Errorf("environment variable %s is not set", ref)
			}
			b.WriteString(val)
		}
		v = v[i+end+1:]
	}
}
