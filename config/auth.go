package config

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"time"
)

// Auth modes ([server.auth] mode).
const (
	AuthNone    = ""         // no authentication: loopback only, or insecure_no_auth
	AuthOAuth   = "oauth"    // OAuth 2.1 resource server: JWT access tokens
	AuthAPIKeys = "api_keys" // static API keys, stored as SHA-256 hashes
)

// MaxClockSkew bounds [Auth.ClockSkew].
const MaxClockSkew = 5 * time.Minute

// Auth holds the [server.auth] table: who may call what over Streamable HTTP. stdio
// is the local user and is never checked.
type Auth struct {
	// Mode is "" (none), "oauth" or "api_keys". "" means no authentication, which
	// the command allows only on a loopback address unless InsecureNoAuth is set.
	Mode string `toml:"mode"`
	// InsecureNoAuth allows serving HTTP on a non-loopback address without
	// authentication (logged as a warning). false means such a server refuses to
	// start.
	InsecureNoAuth bool `toml:"insecure_no_auth"`
	// Resource is this server's resource URI (RFC 8707/9728), the audience every
	// token must carry, e.g. "https://mcp.example.com/mcp". Required for "oauth";
	// for "api_keys" "" means no RFC 9728 document is served.
	Resource string `toml:"resource"`
	// Issuer is the authorization server's issuer identifier; tokens must carry it
	// as iss and it is advertised in the RFC 9728 document. Required for "oauth".
	Issuer string `toml:"issuer"`
	// JWKSURL is where the issuer's signing keys are fetched (https, or http on a
	// loopback address). One of JWKSURL and JWKSFile for "oauth".
	JWKSURL string `toml:"jwks_url"`
	// JWKSFile is a local JWKS file, relative to the config file's directory, read
	// once at start.
	JWKSFile string `toml:"jwks_file"`
	// IntrospectionURL is the issuer's RFC 7662 token introspection endpoint
	// (https, or http on a loopback address), for "oauth": an access token that is
	// not a JWT this server can check (no JWKS, or not a JWS of Algorithms) is
	// sent there, and must come back active, for Resource, with a sub. "" means
	// tokens must be JWTs.
	IntrospectionURL string `toml:"introspection_url"`
	// IntrospectionClientID is this server's client id at the introspection
	// endpoint (HTTP Basic). Required with IntrospectionURL.
	IntrospectionClientID string `toml:"introspection_client_id"`
	// IntrospectionSecretFile holds this server's client secret at the
	// introspection endpoint, relative to the config file's directory, read once
	// at start (a file, so that the config holds no secret). Required with
	// IntrospectionURL.
	IntrospectionSecretFile string `toml:"introspection_secret_file"`
	// IntrospectionCache is how long an active token's answer is reused (at most
	// until its exp), 1s..10m: a token revoked at the issuer is refused at most
	// this much later. 0 means authn.DefaultIntrospectionCache (1m).
	IntrospectionCache Duration `toml:"introspection_cache"`
	// JWKSRefresh is how often the JWKS is refetched from JWKSURL, 1m..24h. An
	// unknown key id refetches it sooner, at most once per 10s. 0 means
	// authn.DefaultJWKSRefresh (15m).
	JWKSRefresh Duration `toml:"jwks_refresh"`
	// Algorithms allowed for token signatures, from RS256, RS384, RS512, PS256,
	// PS384, PS512, ES256, ES384, ES512 and EdDSA (never "none", never HMAC).
	// Nil means authn.DefaultAlgorithms (RS256, ES256, EdDSA).
	Algorithms []string `toml:"algorithms"`
	// ClockSkew is how far exp, nbf and iat may be off, 1s..5m. 0 means
	// authn.DefaultClockSkew (30s).
	ClockSkew Duration `toml:"clock_skew"`
	// RequiredScopes must all be in every token; a token without them gets 403
	// insufficient_scope. Nil means none.
	RequiredScopes []string `toml:"required_scopes"`
	// RateLimit is how many requests per second each identity may make on
	// average, 0..100000; more get HTTP 429 with Retry-After. 0 means no limit.
	RateLimit float64 `toml:"rate_limit"`
	// RateBurst is how many requests an identity may make at once, 0..100000. 0
	// means twice rate_limit, at least 1 (authn).
	RateBurst int `toml:"rate_burst"`
	// MaxParked caps the tasks of one identity waiting for its input
	// (input_required), 0..100000; while it has that many, its new tools/call are
	// refused (-32000, HTTP 429) until it answers or cancels one. 0 means
	// host.DefaultMaxParked (16). Unfinished tasks per identity are [tasks] max_per_client.
	MaxParked int `toml:"max_parked"`
	// MaxToolConcurrency caps the running calls of one tool by one identity
	// (synchronous calls and task runs), 0..100000; one more is refused
	// (-32000, HTTP 429). 0 means host.DefaultMaxToolConcurrency (8).
	MaxToolConcurrency int `toml:"max_tool_concurrency"`
	// Keys are the [[server.auth.keys]] tables, for "api_keys". At least one.
	Keys []APIKey `toml:"keys"`
	// Grants are the [[server.auth.grants]] tables: which tools each scope (or API
	// key name) may see and call. Nil means none: an authenticated caller sees
	// and may call no tool (deny by default; grant tools = ["*"] for all).
	Grants []Grant `toml:"grants"`
}

// APIKey holds one [[server.auth.keys]] table.
type APIKey struct {
	// Name is the identity of the key's holder: it owns the tasks created with
	// the key. Required, unique.
	Name string `toml:"name"`
	// SHA256 is the hex SHA-256 of the key (printf %s KEY | sha256sum). Required.
	SHA256 string `toml:"sha256"`
	// Scopes are the key's scopes, matched against grants. Nil means none (the
	// key's name still matches a grant's key).
	Scopes []string `toml:"scopes"`
}

// Grant holds one [[server.auth.grants]] table: one of Scope or Key, and Tools.
type Grant struct {
	// Scope grants Tools to every token or API key with this scope.
	Scope string `toml:"scope"`
	// Key grants Tools to the API key of this name.
	Key string `toml:"key"`
	// Tools are tool names (as listed, with their plugin prefix), each may end
	// in "*" to match any suffix ("textkit_*", "*"). At least one.
	Tools []string `toml:"tools"`
}

// finish checks [server.auth], calling fail for each problem, and resolves
// JWKSFile against dir.
func (a *Auth) finish(dir string, fail func(where, format string, args ...any)) {
	const where = "server.auth"
	switch a.Mode {
	case AuthNone:
		if len(a.Keys) > 0 || a.Issuer != "" || len(a.Grants) > 0 || a.introspection() {
			fail(where, "keys, issuer, introspection and grants need mode \"oauth\" or \"api_keys\"")
		}
		return
	case AuthOAuth:
		if a.Issuer == "" {
			fail(where, "mode \"oauth\" needs issuer")
		}
		if a.Resource == "" {
			fail(where, "mode \"oauth\" needs resource (this server's URI, the tokens' audience)")
		}
		switch {
		case a.JWKSURL != "" && a.JWKSFile != "":
			fail(where, "mode \"oauth\" needs exactly one of jwks_url and jwks_file")
		case a.JWKSURL == "" && a.JWKSFile == "" && a.IntrospectionURL == "":
			fail(where, "mode \"oauth\" needs exactly one of jwks_url and jwks_file, or introspection_url (or both)")
		}
		if a.JWKSURL != "" {
			checkFetchURL(where, "jwks_url", a.JWKSURL, "keys fetched in the clear could be replaced", fail)
		}
		if a.IntrospectionURL != "" {
			checkFetchURL(where, "introspection_url", a.IntrospectionURL, "tokens sent in the clear could be read", fail)
			if a.IntrospectionClientID == "" || a.IntrospectionSecretFile == "" {
				fail(where, "introspection_url needs introspection_client_id and introspection_secret_file")
			}
		} else if a.IntrospectionClientID != "" || a.IntrospectionSecretFile != "" {
			fail(where, "introspection_client_id and introspection_secret_file need introspection_url")
		}
		if len(a.Keys) > 0 {
			fail(where, "keys need mode \"api_keys\"")
		}
	case AuthAPIKeys:
		if len(a.Keys) == 0 {
			fail(where, "mode \"api_keys\" needs at least one [[server.auth.keys]]")
		}
		if a.Issuer != "" || a.JWKSURL != "" || a.JWKSFile != "" || a.introspection() {
			fail(where, "issuer, jwks_url, jwks_file and introspection need mode \"oauth\"")
		}
	default:
		fail(where, "mode %q is not one of \"\", \"oauth\", \"api_keys\"", a.Mode)
		return
	}
	if a.InsecureNoAuth {
		fail(where, "insecure_no_auth needs mode \"\"")
	}
	if a.Resource != "" {
		if u, err := url.Parse(a.Resource); err != nil || !u.IsAbs() || u.Fragment != "" {
			fail(where, "resource %q is not an absolute URI without fragment", a.Resource)
		}
	}
	if a.JWKSFile != "" {
		a.JWKSFile = resolve(dir, a.JWKSFile)
	}
	if a.IntrospectionSecretFile != "" {
		a.IntrospectionSecretFile = resolve(dir, a.IntrospectionSecretFile)
	}
	if d := a.IntrospectionCache.Duration; d != 0 && (d < time.Second || d > 10*time.Minute) {
		fail(where, "introspection_cache %s out of range 1s..10m0s", d)
	}
	if d := a.JWKSRefresh.Duration; d != 0 && (d < time.Minute || d > 24*time.Hour) {
		fail(where, "jwks_refresh %s out of range 1m0s..24h0m0s", d)
	}
	if d := a.ClockSkew.Duration; d != 0 && (d < time.Second || d > MaxClockSkew) {
		fail(where, "clock_skew %s out of range 1s..%s", d, MaxClockSkew)
	}
	if a.RateLimit < 0 || a.RateLimit > 100_000 {
		fail(where, "rate_limit %g out of range 0..100000", a.RateLimit)
	}
	if a.MaxParked < 0 || a.MaxParked > 100_000 {
		fail(where, "max_parked %d out of range 0..100000", a.MaxParked)
	}
	if a.MaxToolConcurrency < 0 || a.MaxToolConcurrency > 100_000 {
		fail(where, "max_tool_concurrency %d out of range 0..100000", a.MaxToolConcurrency)
	}
	if a.RateBurst < 0 || a.RateBurst > 100_000 {
		fail(where, "rate_burst %d out of range 0..100000", a.RateBurst)
	}
	allowed := []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
	for _, alg := range a.Algorithms {
		if !slices.Contains(allowed, alg) {
			fail(where, "algorithm %q is not one of %v (never none, never HMAC)", alg, allowed)
		}
	}
	names := map[string]bool{}
	for i, k := range a.Keys {
		at := fmt.Sprintf("%s.keys[%d]", where, i)
		if k.Name == "" {
			fail(at, "name is required")
		} else if names[k.Name] {
			fail(at, "name %q is used twice", k.Name)
		}
		names[k.Name] = true
		if b, err := hex.DecodeString(k.SHA256); err != nil || len(b) != 32 {
			fail(at, "sha256 must be 64 hex digits (the SHA-256 of the key)")
		}
	}
	for i, g := range a.Grants {
		at := fmt.Sprintf("%s.grants[%d]", where, i)
		if (g.Scope == "") == (g.Key == "") {
			fail(at, "needs exactly one of scope and key")
		}
		if g.Key != "" && !names[g.Key] {
			fail(at, "key %q names no [[server.auth.keys]]", g.Key)
		}
		if len(g.Tools) == 0 {
			fail(at, "tools is empty")
		}
		for _, t := range g.Tools {
			if t == "" || slices.Contains([]rune(t[:len(t)-1]), '*') {
				fail(at, "tool pattern %q: \"*\" only at the end", t)
			}
		}
	}
}

// introspection reports whether any key naming the introspection endpoint is set.
func (a *Auth) introspection() bool {
	return a.IntrospectionURL != "" || a.IntrospectionClientID != "" || a.IntrospectionSecretFile != ""
}

// checkFetchURL checks a URL the server fetches from the issuer: http(s), and http
// only on a loopback address (why says what the clear would risk).
func checkFetchURL(where, key, raw, why string, fail func(where, format string, args ...any)) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		fail(where, "%s %q is not an http(s) URL", key, raw)
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		fail(where, "%s %q: http only on a loopback address (%s)", key, raw, why)
	}
}

// loopbackHost reports whether host is "localhost" or a loopback IP.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
