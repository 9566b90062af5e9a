package sqlstore

import "context"

// Crash ends s as a SIGKILL would: no lease renewal, its instance file unlocked,
// and nothing cleaned up in the database.
func (s *Store) Crash() {
	close(s.stop)
	<-s.done
	s.lock.Close()
	s.db.Close()
}

// Recover runs the check for stopped instances now.
func (s *Store) Recover(ctx context.Context) error { return s.recover(ctx) }

// SetVersion writes a schema version, as a newer program would have.
func (s *Store) SetVersion(ctx context.Context, v int) error {
	_, err := s.db.ExecContext(ctx, `UPDATE schema_version SET version = ?`, v)
	return err
}
