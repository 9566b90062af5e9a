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
// renews every RenewEvery, and every RenewEvery each instance checks for the others
// that are gone. A SQLite server on this machine is judged by the lock it holds on its
// instance file instead, which the kernel releases when it dies: its unfinished tasks
// are failed with LostMessage within RenewEvery (5 s) or at the next start; one that
// was merely stopped (a laptop asleep) keeps its tasks whatever its lease says. On
// PostgreSQL an instance whose session lock is gone (its process died: its connection
// closed) loses its tasks within RenewEvery, and one that hangs, holding its lock,
// when its lease has run out: within Lease+RenewEvery (20 s) of its last renewal.
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
// local server processes use at once, or PostgreSQL, one database that replicas on
// any number of machines share. Each Store is one instance of it.
type Store struct {
	db     *sql.DB // reads
	wdb    *sql.DB // writes: one connection, so that a commit never queues behind reads
	d      dialect
	path   string // the SQLite file, or "" on PostgreSQL
	name   string // what errors call the store: the file, or the DSN without its password
	id     string // this instance
	logger *slog.Logger

	// SQLite: the instance file, locked (flock) while this instance lives.
	lock    *os.File
	lockDir string

	pg *pgInstance // PostgreSQL: the instance's own connection (LISTEN, session lock)

	// Prepared once on the write pool: the statements every new task and every
	// change run; getStmt on the read pool serves every poll.
	getStmt, statsStmt, wgetStmt, putStmt *sql.Stmt

	qmu     sync.Mutex // guards queue and leading
	queue   []*writer  // writes waiting for the next transaction
	leading bool       // a writer is committing the queue

	// The totals' change in the transaction being committed, written once before
	// its commit (only the leader touches them).
	dTasks, dBytes int64

	stop chan struct{}
	done chan struct{}
}

var _ tasks.Shared = (*Store)(nil)
var _ tasks.Waker = (*Store)(nil)

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
	wdb, err := sql.Open(d.driver, d.dsn(path))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("task store %s: %w", path, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	s := newStore(db, wdb, d, path, opts)
	s.lockDir = path + "-instances"
	return s.start(ctx)
}

func newStore(db, wdb *sql.DB, d dialect, name string, opts Options) *Store {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{db: db, wdb: wdb, d: d, name: name, logger: opts.Logger,
		stop: make(chan struct{}), done: make(chan struct{})}
	if d.name == "sqlite" {
		s.path = name
	}
	return s
}

// start migrates, prepares, registers this instance and recovers, closing the
// store on failure.
func (s *Store) start(ctx context.Context) (*Store, error) {
	fail := func(err error) (*Store, error) {
		s.closeDBs()
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		return fail(err)
	}
	if err := s.prepare(ctx); err != nil {
		return fail(err)
	}
	if err := s.register(ctx); err != nil {
		return fail(err)
	}
	if err := s.recover(ctx); err != nil {
		s.unregister(ctx)
		return fail(err)
	}
	go s.renew()
	return s, nil
}

func (s *Store) closeDBs() {
	s.db.Close()
	s.wdb.Close()
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
	if s.path != "" && strings.Contains(msg, "not a database") || strings.Contains(msg, "malformed") || strings.Contains(msg, "corrupt") {
		return corruptError(s.path, err)
	}
	return fmt.Errorf("task store %s: %s: %w", s.name, what, err)
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

// prepare prepares the frequent statements: reads on the read pool, the task's read
// and write in a transaction on the write pool.
func (s *Store) prepare(ctx context.Context) error {
	var err error
	get := s.q(`SELECT ` + taskColumns + ` FROM tasks WHERE id = ?`)
	if s.getStmt, err = s.db.PrepareContext(ctx, get); err != nil {
		return s.storeError("prepare", err)
	}
	if s.wgetStmt, err = s.wdb.PrepareContext(ctx, get); err != nil {
		return s.storeError("prepare", err)
	}
	if s.statsStmt, err = s.db.PrepareContext(ctx, `SELECT tasks, bytes FROM totals WHERE one = 1`); err != nil {
		return s.storeError("prepare", err)
	}
	if s.putStmt, err = s.wdb.PrepareContext(ctx, s.q(`INSERT INTO tasks (`+taskColumns+`, expires_at, size)
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
	return nil
}

// count adds to the totals of the transaction being committed (see commit).
func (s *Store) count(tasks, bytes int64) {
	s.dTasks += tasks
	s.dBytes += bytes
}

// q is query in the dialect's placeholder form.
func (s *Store) q(query string) string { return s.d.bind(query) }

// write runs f in a write transaction and returns when it is committed. Writers
// that come while a commit is under way share the next transaction (and its fsync):
// each runs under its own savepoint, so that one failing leaves the others' writes
// in. Other processes' transactions are waited for up to busyTimeout. On PostgreSQL
// every write transaction first takes the advisory lock writeLockKey: writes
// serialize across replicas, as SQLite's do across processes.
func (s *Store) write(ctx context.Context, what string, f func(tx *sql.Tx) error) error {
	w := &writer{what: what, f: f, done: make(chan error, 1), lead: make(chan struct{}, 1)}
	s.qmu.Lock()
	s.queue = append(s.queue, w)
	if s.leading {
		s.qmu.Unlock()
		select {
		case err := <-w.done: // a leader committed it
			return err
		case <-w.lead: // the last leader handed over: commit the queue
		}
	} else {
		s.leading = true
		s.qmu.Unlock()
	}
	// Commit batches from the front of the queue until w's is done, then hand the
	// rest to the first writer waiting: a leader's own call never waits for
	// writes that came after it.
	for {
		s.qmu.Lock()
		n := min(len(s.queue), maxBatch)
		batch := s.queue[:n:n]
		s.queue = s.queue[n:]
		s.qmu.Unlock()
		s.commit(batch)
		select {
		case err := <-w.done:
			s.qmu.Lock()
			if len(s.queue) > 0 {
				s.queue[0].lead <- struct{}{}
			} else {
				s.leading = false
			}
			s.qmu.Unlock()
			return err
		default:
		}
	}
}

// maxBatch bounds the writes one transaction carries.
const maxBatch = 128

// writer is one write waiting for its commit.
type writer struct {
	what string
	f    func(tx *sql.Tx) error
	done chan error
	lead chan struct{} // it is to lead: commit the queue
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
	tx, err := s.wdb.BeginTx(context.Background(), nil)
	if err != nil {
		fail(err)
		return
	}
	if s.d.name == "postgres" {
		if _, err := tx.Exec(`SELECT pg_advisory_xact_lock($1)`, writeLockKey); err != nil {
			tx.Rollback()
			fail(err)
			return
		}
	}
	s.dTasks, s.dBytes = 0, 0
	// A writer alone in its transaction needs no savepoint: if it fails, the
	// transaction is rolled back. Savepoints are not released: each ROLLBACK TO
	// goes back to the latest one, its writer's, and the commit ends them all (one
	// round trip less per writer on PostgreSQL).
	alone := len(batch) == 1
	ok := 0
	for i, w := range batch {
		if !alone {
			if _, err := tx.Exec(`SAVEPOINT w`); err != nil {
				tx.Rollback()
				fail(err)
				return
			}
		}
		dTasks, dBytes := s.dTasks, s.dBytes
		if err := w.f(tx); err != nil {
			errs[i] = s.writeError(w.what, err)
			s.dTasks, s.dBytes = dTasks, dBytes
			if !alone {
				if _, err := tx.Exec(`ROLLBACK TO w`); err != nil {
					tx.Rollback()
					fail(err)
					return
				}
			}
		} else {
			ok++
		}
	}
	if ok > 0 && (s.dTasks != 0 || s.dBytes != 0) {
		if _, err := tx.Exec(s.q(`UPDATE totals SET tasks = tasks + ?, bytes = bytes + ? WHERE one = 1`), s.dTasks, s.dBytes); err != nil {
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
		return fmt.Errorf("task store %s was %w", s.name, err)
	}
	return s.storeError(what, err)
}

// keepError carries an error of the caller's function through write unchanged.
type keepError struct{ err error }

func (e *keepError) Error() string { return e.err.Error() }

// Path returns the store's file ("" on PostgreSQL).
func (s *Store) Path() string { return s.path }

// Name is what the store's errors call it: its file, or its DSN with the password
// replaced by xxxxx.
func (s *Store) Name() string { return s.name }

// writeLockKey is the PostgreSQL advisory lock every write transaction takes.
const writeLockKey int64 = 0x6d63_7077_6800_0001 // "mcpwh", 1

// Instance is this process's instance ID.
func (s *Store) Instance() string { return s.id }

// Close ends this instance (its lease and signals go with it) and closes the
// database. Tasks still unfinished with this instance as their runner are failed by
// the next check of any instance.
func (s *Store) Close() error {
	close(s.stop)
	<-s.done
	s.unregister(context.Background())
	s.closeInstance()
	s.closeDBs()
	return nil
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
