// Package telemetry holds what lets an operator see inside a running server:
// Prometheus metrics (telemetry/metrics) and OpenTelemetry traces
// (telemetry/trace). Both are off by default and cost nothing per call then; see
// docs/OBSERVABILITY.md.
package telemetry
