package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcp-wasmhost/mcp-wasmhost/distrib/oci"
)

// VerifyNone as verify turns signature checks off for a source; it must be written
// out, and the server logs it at every pull and start.
const VerifyNone = "none"

// Distribution holds the [server.distribution] table: where plugins from registries
// are cached and how registries are reached.
type Distribution struct {
	// CacheDir holds pulled manifests, modules and signature bundles by sha256; read
	// it through [Distribution.Cache]. "" means os.UserCacheDir()/mcp-wasmhost/oci (os.TempDir()/mcp-wasmhost-oci
	// without one); a relative path is resolved against the config's directory.
	CacheDir string `toml:"cache_dir"`
	// DockerConfig is the Docker config.json whose credentials (auths and credential
	// helpers) are used for registries; read it through
	// [Distribution.DockerConfigFile]. "" means $DOCKER_CONFIG/config.json when
	// DOCKER_CONFIG is set, else ~/.docker/config.json; a missing file means none.
	DockerConfig string `toml:"docker_config"`
	// Registries ([[server.distribution.registries]]) override the Docker config for
	// their hosts. Nil means none.
	Registries []Registry `toml:"registries"`
}

// Cache is the cache directory: CacheDir, or its default.
func (d Distribution) Cache() string {
	if d.CacheDir != "" {
		return d.CacheDir
	}
	if c, err := os.UserCacheDir(); err == nil {
		return filepath.Join(c, "mcp-wasmhost", "oci")
	}
	return filepath.Join(os.TempDir(), "mcp-wasmhost-oci")
}

// DockerConfigFile is the Docker config to read: DockerConfig, or its default ("" when
// there is no home directory).
func (d Distribution) DockerConfigFile() string {
	switch {
	case d.DockerConfig != "":
		return d.DockerConfig
	case os.Getenv("DOCKER_CONFIG") != "":
		return filepath.Join(os.Getenv("DOCKER_CONFIG"), "config.json")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".docker", "config.json")
	}
	return ""
}

// Registry holds one [[server.distribution.registries]] table.
type Registry struct {
	// Host is the registry as written in sources: "host" or "host:port". Required,
	// unique.
	Host string `toml:"host"`
	// Username for basic auth or a token exchange; requires PasswordFile. "" means
	// the Docker config's credential.
	Username string `toml:"username"`
	// PasswordFile holds the password (one line; a final newline is dropped),
	// relative to the config's directory. Read at each pull, never logged.
	PasswordFile string `toml:"password_file"`
	// PlainHTTP speaks http:// to the registry instead of https://. false means
	// HTTPS; use only for a registry on loopback or a private network.
	PlainHTTP bool `toml:"plain_http"`
}

// Password reads PasswordFile; "" when there is none.
func (r Registry) Password() (string, error) {
	if r.PasswordFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(r.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("registry %s: password_file: %w", r.Host, err)
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
}

// Verify is a source's signature policy: [plugins.verify] with Key, or Identity,
// Issuer and TrustedRoot; or verify = "none".
type Verify struct {
	// None is verify = "none": no signature check, logged at every pull and start.
	None bool `toml:"-"`
	// Key is a PEM public key file (cosign.pub) for cosign keyed signatures, relative
	// to the config's directory.
	Key string `toml:"key"`
	// Identity is the keyless signing certificate's subject alternative name (an
	// e-mail, or a CI workflow URI), matched exactly.
	Identity string `toml:"identity"`
	// Issuer is the OIDC issuer in that certificate, matched exactly (e.g.
	// "https://token.actions.githubusercontent.com").
	Issuer string `toml:"issuer"`
	// TrustedRoot is a Sigstore trusted_root.json file (Fulcio CAs, Rekor and CT logs),
	// relative to the config's directory: the public-good instance's, or a private
	// deployment's. Required for keyless.
	TrustedRoot string `toml:"trusted_root"`

	set bool
}

// Set reports whether the plugin has a verify key at all.
func (v Verify) Set() bool { return v.set }

// UnmarshalTOML reads verify = "none" or a [plugins.verify] table.
func (v *Verify) UnmarshalTOML(data any) error {
	v.set = true
	switch d := data.(type) {
	case string:
		if d != VerifyNone {
			return fmt.Errorf("verify = %q: want \"none\" or a [plugins.verify] table", d)
		}
		v.None = true
		return nil
	case map[string]any:
		for k, val := range d {
			s, ok := val.(string)
			if !ok {
				return fmt.Errorf("verify.%s: want a string", k)
			}
			switch k {
			case "key":
				v.Key = s
			case "identity":
				v.Identity = s
			case "issuer":
				v.Issuer = s
			case "trusted_root":
				v.TrustedRoot = s
			} // other keys are reported by Parse as unknown, with their line

		}
		return nil
	}
	return fmt.Errorf("verify: want \"none\" or a table, not %T", data)
}

// Keyless reports whether the policy is keyless.
func (v Verify) Keyless() bool { return v.Identity != "" || v.Issuer != "" || v.TrustedRoot != "" }

func (d *Distribution) finish(dir string, fail func(where, format string, args ...any)) {
	if d.CacheDir != "" {
		d.CacheDir = resolve(dir, d.CacheDir)
	}
	if d.DockerConfig != "" {
		d.DockerConfig = resolve(dir, d.DockerConfig)
	}
	seen := map[string]int{}
	for i := range d.Registries {
		r := &d.Registries[i]
		where := fmt.Sprintf("server.distribution.registries[%d]", i)
		switch {
		case r.Host == "":
			fail(where, "host is required")
		case strings.ContainsAny(r.Host, "/ @") || strings.Contains(r.Host, "://"):
			fail(where, "host %q: want host or host:port, no scheme or path", r.Host)
		}
		if j, dup := seen[r.Host]; dup && r.Host != "" {
			fail(where, "host %q is already configured in registries[%d]", r.Host, j)
		}
		seen[r.Host] = i
		if (r.Username == "") != (r.PasswordFile == "") {
			fail(where, "username and password_file go together")
		}
		if r.PasswordFile != "" {
			r.PasswordFile = resolve(dir, r.PasswordFile)
		}
	}
}

// finishSource checks where a plugin's module comes from: exactly one of path (with its
// sha256) and source (with a verify policy; the lockfile pins the digest).
func (p *Plugin) finishSource(where, dir string, fail func(where, format string, args ...any)) {
	switch {
	case p.Path != "" && p.Source != "":
		fail(where, "path and source are exclusive: a plugin is a local file or comes from a registry")
		return
	case p.Source != "":
		if _, err := oci.ParseRef(p.Source); err != nil {
			fail(where, "%v", err)
		}
		if p.SHA256 != "" {
			fail(where, "sha256 is for path; a source is pinned by the lockfile (%s), which mcp-wasmhost pull writes", "mcp-wasmhost.lock")
		}
		v := &p.Verify
		switch {
		case !v.set:
			fail(where, "source needs a signature policy: [plugins.verify] with key, or identity, issuer and trusted_root; or verify = \"none\" to run it unsigned")
		case v.None:
		case v.Key != "" && v.Keyless():
			fail(where, "verify: key and keyless (identity, issuer, trusted_root) are exclusive")
		case v.Key != "":
			v.Key = resolve(dir, v.Key)
		case v.Identity == "" || v.Issuer == "" || v.TrustedRoot == "":
			fail(where, "verify: keyless needs identity, issuer and trusted_root (or give key)")
		default:
			v.TrustedRoot = resolve(dir, v.TrustedRoot)
		}
		return
	}
	if p.Path == "" {
		fail(where, "path is required")
	} else {
		p.Path = resolve(dir, p.Path)
	}
	if p.Verify.set {
		fail(where, "verify is for a source (oci://...); a path is pinned by its sha256")
	}
	p.SHA256 = strings.ToLower(p.SHA256)
	switch {
	case p.SHA256 == "" && p.Path != "":
		fail(where, "%s", missingPin(p.Path))
	case p.SHA256 == "":
		fail(where, "sha256 is required")
	case !validSHA256(p.SHA256):
		fail(where, "sha256 %q must be 64 hexadecimal characters", p.SHA256)
	}
}
