// Package metrics keeps the server's Prometheus metrics in a registry of its own and
// serves them at /metrics on a separate listener ([server] metrics).
//
// Every label has a bounded set of values: plugin and tool names come from the
// config, methods outside the MCP methods the server knows count as "other", egress
// is labelled by the configured origin that allowed it (never the URL), and reasons
// are small fixed sets. A nil *Metrics is valid and records nothing, so callers
// need no check of their own. docs/OBSERVABILITY.md lists every metric.
package metrics
