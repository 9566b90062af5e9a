package sqlstore

import (
	"fmt"
	"strconv"
	"strings"
)

// dialect is everything that differs between SQL engines: the driver, how a file or
// address becomes a data source name, and the DDL of each schema version. The
// queries in store.go are the SQL that SQLite and PostgreSQL share (INSERT ... ON
// CONFLICT, DELETE ... RETURNING, "?" placeholders rebound by bind), so a second
// engine is a second dialect value.
type dialect struct {
	name   string // "sqlite" or "postgres"
	driver string
	dsn    func(path string) string
	// migrations[i] brings the schema from version i to i+1.
	migrations []string
	// bind rewrites a query's "?" placeholders into the engine's form.
	bind func(query string) string
}

// sqlite is SQLite through modernc.org/sqlite (pure Go, no cgo).
//
//   - journal_mode WAL: readers never block the writer, and several processes
//     share the file.
//   - synchronous FULL: every commit is on disk before it returns, also against a
//     power loss. NORMAL would lose the last commits to a power loss (not to a
//     crash), and a client that got a CreateTaskResult must find its task.
//   - busy_timeout: a writer waits for another process's transaction instead of
//     failing at once (see busyTimeout).
//   - _txlock=immediate: a transaction takes the write lock when it begins, so two
//     processes' read-modify-writes of one task are serialized, not deadlocked.
var sqlite = dialect{
	name:   "sqlite",
	driver: "sqlite",
	dsn: func(path string) string {
		return fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate",
			path, busyTimeout.Milliseconds())
	},
	bind:       func(q string) string { return q },
	migrations: []string{schemaV1, schemaV2},
}

// postgres is PostgreSQL through github.com/jackc/pgx/v5 (its database/sql driver
// for the pools, a pgx connection of its own for each instance's LISTEN and session
// lock). The schema is SQLite's with BYTEA for BLOB; the queries bind "$n"
// placeholders. Transactions are READ COMMITTED, and every write transaction first
// takes one advisory lock (writeLockKey), so that writes serialize across replicas
// as SQLite's do across processes and each read-modify-write reads the last commit.
var postgres = dialect{
	name:       "postgres",
	bind:       dollars,
	migrations: []string{strings.ReplaceAll(schemaV1, "BLOB", "BYTEA"), strings.ReplaceAll(schemaV2, "BLOB", "BYTEA")},
}

// dollars rewrites "?" placeholders as PostgreSQL's $1, $2, ... (no query here has
// a "?" inside a string literal).
func dollars(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// schemaV1 is the first schema. Times are Unix nanoseconds; a task's expires_at is
// set once it is terminal (the expiry index), and runner names the instance running
// an unfinished task's work.
const schemaV1 = `
CREATE TABLE tasks (
	id             TEXT PRIMARY KEY,
	owner          TEXT NOT NULL,
	status         TEXT NOT NULL,
	status_message TEXT NOT NULL,
	created_at     BIGINT NOT NULL,
	updated_at     BIGINT NOT NULL,
	finished_at    BIGINT NOT NULL,
	ttl            BIGINT NOT NULL,
	poll_interval  BIGINT NOT NULL,
	result         BLOB,
	has_error      INTEGER NOT NULL,
	error_code     BIGINT NOT NULL,
	error_message  TEXT NOT NULL,
	error_data     BLOB,
	expires_at     BIGINT,
	runner         TEXT NOT NULL,
	size           BIGINT NOT NULL
);
CREATE INDEX tasks_by_owner ON tasks (owner, created_at, id);
CREATE INDEX tasks_by_expiry ON tasks (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX tasks_unfinished ON tasks (runner) WHERE expires_at IS NULL;
CREATE TABLE totals (
	one   INTEGER PRIMARY KEY CHECK (one = 1),
	tasks BIGINT NOT NULL,
	bytes BIGINT NOT NULL
);
INSERT INTO totals VALUES (1, 0, 0);
CREATE TABLE instances (
	id          TEXT PRIMARY KEY,
	pid         INTEGER NOT NULL,
	started_at  BIGINT NOT NULL,
	lease_until BIGINT NOT NULL
);
CREATE TABLE inputs (
	task_id TEXT NOT NULL,
	key     TEXT NOT NULL,
	seq     INTEGER NOT NULL,
	method  TEXT NOT NULL,
	params  BLOB,
	PRIMARY KEY (task_id, key)
);
CREATE TABLE signals (
	runner  TEXT NOT NULL,
	task_id TEXT NOT NULL,
	kind    TEXT NOT NULL,
	key     TEXT NOT NULL,
	result  BLOB,
	err     TEXT NOT NULL,
	sent_at BIGINT NOT NULL
);
CREATE INDEX signals_by_runner ON signals (runner);
CREATE TABLE nonces (
	nonce      TEXT PRIMARY KEY,
	expires_at BIGINT NOT NULL
);
`
