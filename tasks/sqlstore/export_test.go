package sqlstore

import (
	"context"
	"time"
)

// Crash ends s as a SIGKILL would: no lease renewal, its instance file unlocked,
// and nothing cleaned up in the database.
func (s *Store) Crash() {
	close(s.stop)
	<-s.done
	if s.lock != nil {
		s.lock.Close()
	}
	s.closeInstance()
	s.closeDBs()
}

// Recover runs the check for stopped instances now.
func (s *Store) Recover(ctx context.Context) error { return s.recover(ctx) }

// SetVersion writes a schema version, as a newer program would have.
func (s *Store) SetVersion(ctx context.Context, v int) error {
	_, err := s.db.ExecContext(ctx, s.q(`UPDATE schema_version SET version = ?`), v)
	return err
}

// SetLease sets instance id's lease (inserting a row for an instance that has none,
// as one on another machine would have).
func (s *Store) SetLease(ctx context.Context, id string, until time.Time) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO instances (id, pid, started_at, lease_until) VALUES (?, 0, 0, ?)
		ON CONFLICT (id) DO UPDATE SET lease_until = excluded.lease_until`), id, until.UnixNano())
	return err
}

// WriteSetting is a session setting of the write connection.
func (s *Store) WriteSetting(ctx context.Context, name string) (string, error) {
	var v string
	err := s.wdb.QueryRowContext(ctx, "SELECT current_setting($1)", name).Scan(&v)
	return v, err
}

// WriteLockKey is the advisory lock every PostgreSQL write transaction takes.
const WriteLockKey = writeLockKey

// JournalRows is how many task_journal rows task id has (0 or 1).
func (s *Store) JournalRows(ctx context.Context, id string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM task_journal WHERE task_id = ?`), id).Scan(&n)
	return n, err
}
