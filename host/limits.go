package host

import "time"

// Defaults of the Streamable HTTP limits in Options (DefaultMaxMessageBytes, shared
// with stdio, is in stdio.go).
const (
	// DefaultBodyReadTimeout bounds reading one POST body. It is a per-request read
	// deadline, not http.Server.ReadTimeout, which would also end long-lived SSE
	// streams.
	DefaultBodyReadTimeout = 30 * time.Second
	// DefaultMaxSessions caps the live sessions (one measured about 17 KiB).
	DefaultMaxSessions = 1000
	// DefaultSessionIdleTimeout closes a session with no request for this long; it
	// equals the default task ttl, so a client polling a task keeps its session.
	DefaultSessionIdleTimeout = time.Hour
)

// limits are a server's transport limits, defaults filled in.
type limits struct {
	maxMessageBytes int
	bodyReadTimeout time.Duration
	maxSessions     int
	sessionIdle     time.Duration
}

func limitsOf(o Options) limits {
	l := limits{o.MaxMessageBytes, o.BodyReadTimeout, o.MaxSessions, o.SessionIdleTimeout}
	if l.maxMessageBytes <= 0 {
		l.maxMessageBytes = DefaultMaxMessageBytes
	}
	if l.bodyReadTimeout <= 0 {
		l.bodyReadTimeout = DefaultBodyReadTimeout
	}
	if l.maxSessions <= 0 {
		l.maxSessions = DefaultMaxSessions
	}
	if l.sessionIdle <= 0 {
		l.sessionIdle = DefaultSessionIdleTimeout
	}
	return l
}
