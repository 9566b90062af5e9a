package config

import "time"

// Audit holds the [server.audit] table: the audit trail, one JSON line per call and
// task status change (package audit, docs/AUDIT.md).
type Audit struct {
	// Path is the audit file, relative to the config file's directory. "" means
	// no audit trail.
	Path string `toml:"path"`
	// MaxMiB rotates the file when a line would take it past this size,
	// 1..100000. 0 means audit.DefaultMaxMiB (100).
	MaxMiB int `toml:"max_mib"`
	// Keep is how many rotated files are kept (Path.1 the newest), 1..1000. 0
	// means audit.DefaultKeep (5).
	Keep int `toml:"keep"`
	// SyncInterval is how often written lines are fsynced, 10ms..1m. 0 means
	// DefaultAuditSyncInterval.
	SyncInterval Duration `toml:"sync_interval"`
	// Queue is how many lines may wait for the writer, 16..1000000; past it lines
	// are dropped and counted (a call never waits). 0 means audit.DefaultQueue (4096).
	Queue int `toml:"queue"`
}

// finish resolves Path against dir and calls fail for each value out of range. Zero
// values stay: package audit reads them as its defaults (one source per default).
func (a *Audit) finish(dir string, fail func(where, format string, args ...any)) {
	const where = "server.audit"
	if a.Path != "" {
		a.Path = resolve(dir, a.Path)
	}
	for _, q := range []struct {
		key    string
		v      int
		lo, hi int
	}{{"max_mib", a.MaxMiB, 1, 100_000}, {"keep", a.Keep, 1, 1000}, {"queue", a.Queue, 16, 1_000_000}} {
		if q.v != 0 && (q.v < q.lo || q.v > q.hi) {
			fail(where, "%s %d out of range %d..%d", q.key, q.v, q.lo, q.hi)
		}
	}
	if d := a.SyncInterval.Duration; d != 0 && (d < 10*time.Millisecond || d > time.Minute) {
		fail(where, "sync_interval %s out of range 10ms..1m0s", d)
	}
}
