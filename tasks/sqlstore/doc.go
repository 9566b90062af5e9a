// Package sqlstore keeps tasks in an SQL database that several server processes share:
// SQLite (one file, data_dir/tasks.sqlite) through modernc.org/sqlite, pure Go, so the
// binary stays free of cgo: the default task store, for the servers of one machine;
// or PostgreSQL through github.com/jackc/pgx/v5 ([OpenPostgres], a postgres:// URL),
// for replicas on any number of machines. Both have one schema, the same versioned
// migrations and the same queries; what differs is in dialect.go.
//
// Each process that opens the store is an instance: it registers a row with a lease
// ([Lease], renewed every [RenewEvery]) and holds a lock: on SQLite, a flock on its own
// instance file beside the database; on PostgreSQL, a session advisory lock on a
// connection of its own, which PostgreSQL drops when that connection ends. Every
// instance answers for every task it can see (a task's owner still decides who that
// is); the instance running a task's work is its Runner. Another instance that
// cancels the task, or answers one of its input requests, sends the Runner a signal
// through the signals table. On SQLite the Runner's Manager polls it every
// [tasks.SignalPoll]; on PostgreSQL the signal's transaction also sends a NOTIFY on
// the Runner's channel, which wakes it at once ([tasks.Waker]; it polls every
// [tasks.WakePoll] as a fallback). Pending input requests are kept in the inputs
// table so that every instance can show them.
//
// When an instance stops without closing the store (crash, SIGKILL), any other
// instance fails its unfinished tasks with [LostMessage] at its next check (every
// RenewEvery), as soon as its lock is free: on SQLite, at once if the process was on
// this machine; on PostgreSQL, when the server has ended its session (a killed
// process's socket closes at once). An instance that hangs keeps its lock: on SQLite
// it keeps its tasks (a laptop asleep), on PostgreSQL it loses them when its lease has
// run out, within Lease+RenewEvery of its last renewal. An instance never fails the
// tasks of a live one.
//
// Writes are queued and committed together, one transaction (and one fsync) for the
// writers that came while the last commit ran, each under its own savepoint, on a
// pool of one connection of their own, so that a commit never waits behind the
// polling reads. On PostgreSQL every write transaction first takes one advisory lock:
// writes serialize across replicas as SQLite's do across processes, and a task's
// read-modify-write (Update) never interleaves with another instance's.
//
// The schema is versioned (the schema_version table) and migrated at Open, one
// version at a time in one transaction. A store written by a newer version is
// refused, and so is a file that is not a task store or is damaged, or a PostgreSQL
// server that cannot be reached, with an error naming the file or the DSN (its
// password replaced by xxxxx); nothing is ever reset. Every commit is synchronous
// (SQLite: synchronous=FULL in WAL mode; PostgreSQL: its default synchronous_commit):
// a task is on disk before its CreateTaskResult is sent.
package sqlstore
