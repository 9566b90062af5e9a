package sqlstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// Lease is how long an instance counts as alive after it last renewed its lease; it
// renews every RenewEvery. A server on this machine is judged by the lock it holds on
// its instance file instead, which the kernel releases when it dies: the next check
// of any other instance (every RenewEvery) or the next start fails its unfinished
// tasks with LostMessage, within RenewEvery (5 s); and one that was merely stopped
// (a laptop asleep) keeps its tasks whatever its lease says. An instance without a
// file here (another machine's, once an engine can be shared across machines) is gone
// when its lease runs out: within Lease+RenewEvery (20 s) of its last renewal.
const (
	Lease      = 15 * time.Second
	RenewEvery = 5 * time.Second
)

// CreateWindow is the tasks.Options.CreateWindow a server on this store uses: a task
// whose work ends within it (a trivial tool) costs one commit instead of two, and a
// longer one's CreateTaskResult waits this much longer, about one commit's time.
const CreateWindow = 3 * time.Millisecond

// busyTimeout is how long a statement waits for another process's write transaction.
const busyTimeout = 10 * time.Second

// LostMessage is the status message of a task whose server stopped while it ran.
const LostMessage = "the server running this task stopped (the server restarted, crashed or was killed) while it ran; its work was lost (run it again)"

// Store is a tasks.Shared store in an SQL database: SQLite, one file that several
// local server processes use at once. Each Store is one instance of it.
type Store struct {
	db      *sql.DB
	d       dialect
	path    string
	id      string   // this instance
	lock    *os.File // held (flock) while this instance lives
	lockDir string
	logger  *slog.Logger

	// Prepared once: the statements every poll, every new task and every change
	// run.
	getStmt, statsStmt, putStmt, totalsStmt *sql.Stmt

	qmu     sync.Mutex // guards queue and leading
	queue   []*writer  // writes waiting for the next transaction
	leading bool       // a writer is committing the queue

	stop chan struct{}
	done chan struct{}
}

var _ tasks.Shared = (*Store)(nil)

// Options configures Open. The zero value is valid.
type Options struct {
	Logger *slog.Logger // nil discards
}

// Open opens (creating if needed) the SQLite store at path, brings its schema up to
// date, registers this process as an instance, and fails the unfinished tasks of
// instances that are gone. A file that is not a task store, is damaged or unreadable,
// or was written by a newer version is an error naming the file; nothing is reset.
// Close it.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("task store %s: %w", path, err)
	}
	if err := precheck(path); err != nil {
		return nil, err
	}
	d := sqlite
	db, err := sql.Open(d.driver, d.dsn(path))
	if err != nil {
		return nil, fmt.Errorf("task store %s: %w", path, err)
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	s := &Store{db: db, d: d, path: path, logger: opts.Logger, lockDir: path + "-instances",
		stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.register(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.recover(ctx); err != nil {
		s.unregister(ctx)
		db.Close()
		return nil, err
	}
	go s.renew()
	return s, nil
}

// sqliteHeader begins every SQLite database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// precheck refuses an existing file that is not an SQLite database before SQLite
// opens it (and, in WAL mode, adds files beside it).
func precheck(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		// Created here, so that it is the owner's alone (SQLite gives its -wal and
		// -shm files the same mode).
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("task store %s: %w", path, err)
		}
		if f != nil {
			f.Close()
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("task store %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("task store %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("task store %s is not a regular file (%s)", path, info.Mode().Type())
	}
	if info.Size() == 0 {
		return nil // created and not yet written: SQLite makes it a database
	}
	head := make([]byte, len(sqliteHeader))
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, sqliteHeader) {
		return corruptError(path, errors.New("no SQLite header"))
	}
	return nil
}

func corruptError(path string, err error) error {
	return fmt.Errorf("task store %s is corrupt or not a task store (%v); move it away to start with an empty store", path, err)
}

// storeError names the file in an error of the database; a damaged file says so.
func (s *Store) storeError(what string, err error) error {
	msg := err.Error()
	if strings.Contains(msg, "not a database") || strings.Contains(msg, "malformed") || strings.Contains(msg, "corrupt") {
		return corruptError(s.path, err)
	}
	return fmt.Errorf("task store %s: %s: %w", s.path, what, err)
}

// migrate brings the schema to the newest version this program knows, one version per
// step, in one transaction; a store of a newer version is refused.
func (s *Store) migrate(ctx context.Context) error {
	return s.write(ctx, "migrate", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
			return err
		}
		var v sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT max(version) FROM schema_version`).Scan(&v); err != nil {
			return err
		}
		have, known := int(v.Int64), len(s.d.migrations)
		if have > known {
			return fmt.Errorf("%w: schema version %d, and this mcp-wasmhost knows up to %d; run a newer mcp-wasmhost, or use another data_dir", errNewer, have, known)
		}
		for i := have; i < known; i++ {
			if _, err := tx.ExecContext(ctx, s.d.migrations[i]); err != nil {
				return fmt.Errorf("migrate to schema version %d: %w", i+1, err)
			}
		}
		if have < known {
			if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM schema_version`)); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO schema_version (version) VALUES (?)`), known); err != nil {
				return err
			}
		}
		return nil
	})
}

var errNewer = errors.New("written by a newer mcp-wasmhost")

// prepare prepares the frequent reads.
func (s *Store) prepare(ctx context.Context) error {
	var err error
	if s.getStmt, err = s.db.PrepareContext(ctx, s.q(`SELECT `+taskColumns+` FROM tasks WHERE id = ?`)); err != nil {
		return s.storeError("prepare", err)
	}
	if s.statsStmt, err = s.db.PrepareContext(ctx, `SELECT tasks, bytes FROM totals WHERE one = 1`); err != nil {
		return s.storeError("prepare", err)
	}
	if s.putStmt, err = s.db.PrepareContext(ctx, s.q(`INSERT INTO tasks (`+taskColumns+`, expires_at, size)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, status = excluded.status,
			status_message = excluded.status_message, created_at = excluded.created_at,
			updated_at = excluded.updated_at, finished_at = excluded.finished_at, ttl = excluded.ttl,
			poll_interval = excluded.poll_interval, result = excluded.result, has_error = excluded.has_error,
			error_code = excluded.error_code, error_message = excluded.error_message,
			error_data = excluded.error_data, runner = excluded.runner, expires_at = excluded.expires_at,
			size = excluded.size`)); err != nil {
		return s.storeError("prepare", err)
	}
	if s.totalsStmt, err = s.db.PrepareContext(ctx, s.q(`UPDATE totals SET tasks = tasks + ?, bytes = bytes + ? WHERE one = 1`)); err != nil {
		return s.storeError("prepare", err)
	}
	return nil
}

// q is query in the dialect's placeholder form.
func (s *Store) q(query string) string { return s.d.bind(query) }

// write runs f in a write transaction and returns when it is committed. Writers
// that come while a commit is under way share the next transaction (and its fsync):
// each runs under its own savepoint, so that one failing leaves the others' writes
// in. Other processes' transactions are waited for up to busyTimeout.
func (s *Store) write(ctx context.Context, what string, f func(tx *sql.Tx) error) error {
	w := &writer{what: what, f: f, done: make(chan error, 1)}
	s.qmu.Lock()
	s.queue = append(s.queue, w)
	if s.leading {
		s.qmu.Unlock()
		return <-w.done // the leader commits it
	}
	s.leading = true
	for len(s.queue) > 0 {
		n := min(len(s.queue), maxBatch)
		batch := s.queue[:n:n]
		s.queue = s.queue[n:]
		s.qmu.Unlock()
		s.commit(batch)
		s.qmu.Lock()
	}
	s.leading = false
	s.qmu.Unlock()
	return <-w.done
}

// maxBatch bounds the writes one transaction carries.
const maxBatch = 128

// writer is one write waiting for its commit.
type writer struct {
	what string
	f    func(tx *sql.Tx) error
	done chan error
}

// commit runs batch in one transaction and tells each writer its outcome.
func (s *Store) commit(batch []*writer) {
	errs := make([]error, len(batch))
	fail := func(err error) {
		for i, w := range batch {
			if errs[i] == nil {
				errs[i] = s.writeError(w.what, err)
			}
			w.done <- errs[i]
		}
	}
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		fail(err)
		return
	}
	ok := 0
	for i, w := range batch {
		if _, err := tx.Exec(`SAVEPOINT w`); err != nil {
			tx.Rollback()
			fail(err)
			return
		}
		if err := w.f(tx); err != nil {
			errs[i] = s.writeError(w.what, err)
			if _, err := tx.Exec(`ROLLBACK TO w`); err != nil {
				tx.Rollback()
				fail(err)
				return
			}
		} else {
			ok++
		}
		if _, err := tx.Exec(`RELEASE w`); err != nil {
			tx.Rollback()
			fail(err)
			return
		}
	}
	if ok == 0 {
		err = tx.Rollback()
	} else {
		err = tx.Commit()
	}
	if err != nil {
		fail(err)
		return
	}
	for i, w := range batch {
		w.done <- errs[i]
	}
}

// writeError is the error a write reports: the task errors callers test as they are,
// anything else naming the file.
func (s *Store) writeError(what string, err error) error {
	var keep *keepError
	switch {
	case errors.As(err, &keep):
		return keep.err
	case errors.Is(err, tasks.ErrNotFound), errors.Is(err, tasks.ErrBadCursor):
		return err
	case errors.Is(err, errNewer):
		return fmt.Errorf("task store %s was %w", s.path, err)
	}
	return s.storeError(what, err)
}

// keepError carries an error of the caller's function through write unchanged.
type keepError struct{ err error }

func (e *keepError) Error() string { return e.err.Error() }

// Path returns the store's file.
func (s *Store) Path() string { return s.path }

// Instance is this process's instance ID.
func (s *Store) Instance() string { return s.id }

// Close ends this instance (its lease and signals go with it) and closes the
// database. Tasks still unfinished with this instance as their runner are failed by
// the next check of any instance.
func (s *Store) Close() error {
	close(s.stop)
	<-s.done
	s.unregister(context.Background())
	return s.db.Close()
}

func newInstanceID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// nanos is t as stored: Unix nanoseconds, 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
