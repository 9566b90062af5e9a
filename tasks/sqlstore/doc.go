// Package sqlstore keeps tasks in an SQL database that several server processes share:
// SQLite (one file, data_dir/tasks.sqlite) through modernc.org/sqlite, pure Go, so the
// binary stays free of cgo. It is the default task store.
//
// Each process that opens the store is an instance: it registers a row with a lease
// ([Lease], renewed every [RenewEvery]) and holds a lock on its own instance file
// beside the database. Every instance answers for every task it can see (a task's
// owner still decides who that is); the instance running a task's work is its Runner.
// Another instance that cancels the task, or answers one of its input requests, sends
// the Runner a signal through the signals table, which the Runner's Manager polls
// every [tasks.SignalPoll]. Pending input requests are kept in the inputs table so
// that every instance can show them.
//
// When an instance stops without closing the store (crash, SIGKILL), any other
// instance fails its unfinished tasks with [LostMessage]: at once if the stopped
// process was on this machine (its instance file is no longer locked), else when its
// lease has run out, within Lease+RenewEvery. An instance never fails the tasks of a
// live one: two servers started on one data_dir both serve.
//
// The schema is versioned (the schema_version table) and migrated at Open, one
// version at a time in one transaction. A store written by a newer version is
// refused, and so is a file that is not a task store or is damaged, with an error
// naming the file; nothing is ever reset. Every commit is synchronous
// (synchronous=FULL in WAL mode): a task is on disk before its CreateTaskResult is
// sent.
//
// What differs between SQL engines is in dialect.go, so that PostgreSQL can be added
// as a second dialect on database/sql.
package sqlstore
