package main

import (
	"log/slog"

	"github.com/mcp-wasmhost/mcp-wasmhost/config"
	"github.com/mcp-wasmhost/mcp-wasmhost/egress"
)

// netClient makes the plugin's network door from its [[plugins.net]] tables. A
// plugin without any gets a client that refuses every request, so that each refusal
// is audited and the guest is told how to ask for a grant.
func netClient(pc config.Plugin, tel *telemetry, logger *slog.Logger) (*egress.Client, error) {
	pol := egress.Policy{Limits: egress.Limits{
		MaxRequestBytes:  pc.NetLimits.MaxRequestBytes,
		MaxResponseBytes: pc.NetLimits.MaxResponseBytes,
		Timeout:          pc.NetLimits.Timeout.Duration,
		MaxPerCall:       pc.NetLimits.MaxPerCall,
		MaxConcurrent:    pc.NetLimits.MaxConcurrent,
	}}
	for _, n := range pc.Net {
		pol.Rules = append(pol.Rules, egress.Rule{Origins: n.Origins, Methods: n.Methods, PathPrefixes: n.PathPrefixes,
			AllowAddresses: n.AllowAddresses, Headers: n.Headers, CAFile: n.CAFile})
	}
	opts := &egress.Options{Logger: logger}
	tel.egressOptions(opts)
	return egress.New(pc.Name, pol, opts)
}
