package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"

	"github.com/mcp-wasmhost/mcp-wasmhost/audit"
	"github.com/mcp-wasmhost/mcp-wasmhost/telemetry/metrics"

	"github.com/mcp-wasmhost/mcp-wasmhost/authn"
	"github.com/mcp-wasmhost/mcp-wasmhost/config"
	"github.com/mcp-wasmhost/mcp-wasmhost/host"
)

// checkExposure refuses to serve HTTP on a non-loopback address without
// authentication unless [server.auth] insecure_no_auth says so, which is logged.
func checkExposure(addr string, a config.Auth, logger *slog.Logger) error {
	if a.Mode != config.AuthNone || loopback(addr) {
		return nil
	}
	if !a.InsecureNoAuth {
		return fmt.Errorf("serve HTTP on %s: a non-loopback address needs [server.auth] mode \"oauth\" or \"api_keys\" (or insecure_no_auth = true to serve anyone who can reach it)", addr)
	}
	logger.Warn("serving HTTP on a non-loopback address without authentication (insecure_no_auth): anyone who can reach it may call every tool", "addr", addr)
	return nil
}

// loopback reports whether addr (host:port) listens on loopback only: "localhost"
// or a loopback IP. An empty host, a wildcard or any other name is not.
func loopback(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if h == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}

// authenticator makes the [server.auth] authenticator; nil for mode "". Its
// refusals are counted in m and written to trail (either may be nil).
func authenticator(a config.Auth, logger *slog.Logger, m *metrics.Metrics, trail *audit.Log) (*authn.Authenticator, error) {
	if a.Mode == config.AuthNone {
		return nil, nil
	}
	opts := authn.Options{Mode: a.Mode, Resource: a.Resource, Issuer: a.Issuer, JWKSURL: a.JWKSURL,
		JWKSFile: a.JWKSFile, JWKSRefresh: a.JWKSRefresh.Duration, Algorithms: a.Algorithms,
		IntrospectionURL: a.IntrospectionURL, IntrospectionClientID: a.IntrospectionClientID,
		IntrospectionSecretFile: a.IntrospectionSecretFile, IntrospectionCache: a.IntrospectionCache.Duration,
		ClockSkew: a.ClockSkew.Duration, RequiredScopes: a.RequiredScopes, Logger: logger,
		RateLimit: a.RateLimit, RateBurst: a.RateBurst}
	if m != nil || trail != nil {
		opts.OnRefuse = func(r authn.Refusal) {
			if r.Reason == authn.RefuseRateLimit {
				m.Refused(metrics.RefusedRateLimit)
			} else {
				m.AuthFailure(r.Reason)
			}
			trail.Refused(audit.Record{Identity: r.Identity, Source: clientIP(r.RemoteAddr), Reason: r.Reason, HTTPStatus: r.Status})
		}
	}
	for _, k := range a.Keys {
		opts.Keys = append(opts.Keys, authn.Key{Name: k.Name, SHA256: k.SHA256, Scopes: k.Scopes})
	}
	for _, g := range a.Grants {
		opts.Grants = append(opts.Grants, authn.Grant{Scope: g.Scope, Key: g.Key, Tools: g.Tools})
	}
	return authn.New(opts)
}

// clientIP is the IP address of remoteAddr (host:port), or remoteAddr as it is.
func clientIP(remoteAddr string) string {
	if ap, err := netip.ParseAddrPort(remoteAddr); err == nil {
		return ap.Addr().Unmap().String()
	}
	return remoteAddr
}

// The authenticator answers the host's questions about grants.
var _ host.Grants = (*authn.Authenticator)(nil)

// grants is the host's view of guard's grants; nil (every tool) without one.
func grants(guard *authn.Authenticator) host.Grants {
	if guard == nil {
		return nil // not a typed nil in the interface
	}
	return guard
}

// openAudit opens the [server.audit] trail; nil when path is "".
func openAudit(a config.Audit, logger *slog.Logger) (*audit.Log, error) {
	if a.Path == "" {
		return nil, nil
	}
	return audit.Open(audit.Options{Path: a.Path, MaxBytes: int64(a.MaxMiB) << 20, Keep: a.Keep,
		SyncInterval: a.SyncInterval.Duration, Queue: a.Queue, Logger: logger})
}
