package config

import (
	"net"
	"net/url"
	"strings"
)

// Tracing is the [server.tracing] table: OpenTelemetry traces sent over OTLP/HTTP
// (protobuf) to a collector. The zero value sends nothing.
type Tracing struct {
	// Endpoint is the collector's base URL, "http://host:4318" or "https://...";
	// spans are POSTed to its /v1/traces (a URL that already ends in /v1/traces is
	// used as given). "" means tracing is off and costs nothing per call.
	Endpoint string `toml:"endpoint"`
	// SampleRatio is the share of new traces recorded, 0..1, when the client sent
	// no traceparent (a client's sampling decision is followed). 0 means 1: every
	// trace (telemetry/trace reads it so).
	SampleRatio float64 `toml:"sample_ratio"`
	// Headers are sent with every export, e.g. an API key of the collector. Nil
	// means none.
	Headers map[string]string `toml:"headers"`
}

// finishTelemetry checks [server] metrics, report_meta and [server.tracing].
func (s *Server) finishTelemetry(fail func(where, format string, args ...any)) {
	if s.Metrics != "" {
		if _, port, err := net.SplitHostPort(s.Metrics); err != nil || port == "" {
			fail("server", "metrics %q is not host:port (e.g. \"127.0.0.1:9464\")", s.Metrics)
		}
	}
	t := &s.Tracing
	if t.Endpoint != "" {
		u, err := url.Parse(t.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			fail("server.tracing", "endpoint %q is not an http or https URL such as \"http://127.0.0.1:4318\"", t.Endpoint)
		}
	}
	if t.SampleRatio < 0 || t.SampleRatio > 1 {
		fail("server.tracing", "sample_ratio %v out of range 0..1", t.SampleRatio)
	}
	for k, v := range t.Headers {
		if k == "" || strings.ContainsAny(k, " \t\r\n:") || strings.ContainsAny(v, "\r\n") {
			fail("server.tracing", "headers: %q is not a valid header", k)
		}
	}
}
