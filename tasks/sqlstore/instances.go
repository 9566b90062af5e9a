package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// register makes this process an instance: it locks its instance file (beside the
// database, in path-instances/) or, on PostgreSQL, takes its session lock, then
// records its lease. The lock comes first, so an instance whose row exists and whose
// lock is not held is gone.
func (s *Store) register(ctx context.Context) error {
	if s.pg != nil {
		if err := s.registerPG(ctx); err != nil {
			return err
		}
		return s.insertInstance(ctx)
	}
	if err := os.MkdirAll(s.lockDir, 0o700); err != nil {
		return fmt.Errorf("task store %s: instance files: %w", s.path, err)
	}
	s.id = newInstanceID()
	f, err := os.OpenFile(filepath.Join(s.lockDir, s.id+".lock"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("task store %s: instance file: %w", s.path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("task store %s: lock instance file: %w", s.path, err)
	}
	s.lock = f
	return s.insertInstance(ctx)
}

// insertInstance records this instance's lease; on failure its lock is released.
func (s *Store) insertInstance(ctx context.Context) error {
	now := time.Now()
	err := s.write(ctx, "register instance", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO instances (id, pid, started_at, lease_until) VALUES (?, ?, ?, ?)`),
			s.id, os.Getpid(), now.UnixNano(), now.Add(Lease).UnixNano())
		return err
	})
	if err != nil {
		s.releaseLock()
		s.closeInstance()
	}
	return err
}

func (s *Store) releaseLock() {
	if s.lock != nil {
		os.Remove(s.lock.Name())
		s.lock.Close() // releases the flock
		s.lock = nil
	}
}

// unregister removes this instance's row and signals and releases its lock.
func (s *Store) unregister(ctx context.Context) {
	err := s.write(ctx, "unregister instance", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM signals WHERE runner = ?`), s.id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`DELETE FROM instances WHERE id = ?`), s.id)
		return err
	})
	if err != nil {
		s.logger.Error("unregister task store instance", "instance", s.id, "err", err)
	}
	s.releaseLock()
}

// renew renews this instance's lease every RenewEvery and fails the tasks of
// instances that are gone, until Close.
func (s *Store) renew() {
	defer close(s.done)
	tick := time.NewTicker(RenewEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), busyTimeout+time.Second)
		if err := s.renewLease(ctx); err != nil {
			s.logger.Error("renew task store lease", "instance", s.id, "err", err)
		}
		if err := s.recover(ctx); err != nil {
			s.logger.Error("fail the tasks of stopped servers", "err", err)
		}
		cancel()
	}
}

// renewLease extends this instance's lease; if another instance took it for gone
// (this process was stopped longer than Lease), it registers again under the same ID.
func (s *Store) renewLease(ctx context.Context) error {
	now := time.Now()
	return s.write(ctx, "renew lease", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE instances SET lease_until = ? WHERE id = ?`), now.Add(Lease).UnixNano(), s.id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			s.logger.Warn("this server was taken for stopped (its lease ran out); its running tasks were reported failed", "instance", s.id)
			_, err = tx.ExecContext(ctx, s.q(`INSERT INTO instances (id, pid, started_at, lease_until) VALUES (?, ?, ?, ?)`),
				s.id, os.Getpid(), now.UnixNano(), now.Add(Lease).UnixNano())
		}
		return err
	})
}

// recover removes the instances that are gone (lease run out, or their instance file
// no longer locked) and fails their unfinished tasks, and those of no instance, with
// LostMessage. Any live instance may run it, any number of times.
func (s *Store) recover(ctx context.Context) error {
	now := time.Now()
	gone, err := s.goneInstances(ctx, now)
	if err != nil {
		return s.storeError("find stopped instances", err)
	}
	var failed, orphaned int
	err = s.write(ctx, "fail the tasks of stopped servers", func(tx *sql.Tx) error {
		for _, id := range gone {
			if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM instances WHERE id = ?`), id); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM signals WHERE runner = ?`), id); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, s.q(`SELECT `+taskColumns+` FROM tasks WHERE expires_at IS NULL
			AND runner NOT IN (SELECT id FROM instances)`))
		if err != nil {
			return err
		}
		var lost []tasks.Task
		for rows.Next() {
			t, err := scanTask(rows)
			if err != nil {
				rows.Close()
				return err
			}
			lost = append(lost, t)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		stamp := now.UTC()
		failed, orphaned = 0, 0
		for _, t := range lost {
			// A resumable task waits for an instance to adopt it (tasks.Journal).
			if ok, err := s.orphan(ctx, tx, t.ID, OrphanMessage); err != nil {
				return err
			} else if ok {
				orphaned++
				continue
			}
			old := t
			t.Status, t.StatusMessage = tasks.Failed, LostMessage
			t.LastUpdatedAt, t.FinishedAt = stamp, stamp
			if err := s.put(ctx, tx, t, &old); err != nil {
				return err
			}
			failed++
		}
		_, err = tx.ExecContext(ctx, s.q(`DELETE FROM nonces WHERE expires_at < ?`), now.UnixNano())
		return err
	})
	if err == nil && failed > 0 {
		s.logger.Warn("tasks of a stopped server reported failed", "tasks", failed, "instances", len(gone))
	}
	if err == nil && orphaned > 0 {
		s.logger.Info("resumable tasks of a stopped server wait to be resumed", "tasks", orphaned, "instances", len(gone))
	}
	if s.pg == nil {
		for _, id := range gone {
			os.Remove(filepath.Join(s.lockDir, id+".lock"))
		}
	}
	return err
}

// goneInstances lists the other instances whose lease ran out, or whose instance file
// (on this machine) is no longer locked: their process ended. On PostgreSQL an
// instance is gone when its session lock is no longer held (its connection ended),
// or when its lease ran out (it hangs).
func (s *Store) goneInstances(ctx context.Context, now time.Time) ([]string, error) {
	var held map[int32]bool
	if s.pg != nil {
		var err error
		if held, err = s.lockedInstances(ctx); err != nil {
			return nil, err
		}
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, lease_until FROM instances WHERE id <> ?`), s.id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var gone []string
	for rows.Next() {
		var id string
		var until int64
		if err := rows.Scan(&id, &until); err != nil {
			return nil, err
		}
		if held != nil {
			if !held[lockKey(id)] || until < now.UnixNano() {
				gone = append(gone, id)
			}
			continue
		}
		// A process on this machine is judged by its lock alone, so that one
		// that was only stopped (a laptop asleep, SIGSTOP) keeps its tasks.
		if alive, here := s.alive(id); !alive || !here && until < now.UnixNano() {
			gone = append(gone, id)
		}
	}
	return gone, rows.Err()
}

// alive reports whether instance id's file is locked by its process; here is false
// for an instance without a file here (another machine's, in a future engine), which
// counts by its lease.
func (s *Store) alive(id string) (alive, here bool) {
	f, err := os.OpenFile(filepath.Join(s.lockDir, id+".lock"), os.O_RDWR, 0)
	if err != nil {
		return true, false
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, true
	}
	// Locked by us now (released by Close): nobody holds it.
	return err != nil, true
}

// SetInputs replaces the pending inputs recorded for task id.
func (s *Store) SetInputs(ctx context.Context, id string, inputs []tasks.PendingInput) error {
	return s.write(ctx, "record inputs", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM inputs WHERE task_id = ?`), id); err != nil {
			return err
		}
		for i, in := range inputs {
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO inputs (task_id, key, seq, method, params) VALUES (?, ?, ?, ?, ?)`),
				id, in.Key, i, in.Method, []byte(in.Params)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Inputs returns the pending inputs of task id, in the order they were asked.
func (s *Store) Inputs(ctx context.Context, id string) ([]tasks.PendingInput, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT key, method, params FROM inputs WHERE task_id = ? ORDER BY seq`), id)
	if err != nil {
		return nil, s.storeError("read inputs", err)
	}
	defer rows.Close()
	var out []tasks.PendingInput
	for rows.Next() {
		var in tasks.PendingInput
		var params []byte
		if err := rows.Scan(&in.Key, &in.Method, &params); err != nil {
			return nil, s.storeError("read inputs", err)
		}
		in.Params = params
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, s.storeError("read inputs", err)
	}
	return out, nil
}

// Send records sig for its runner; an answer first takes its input off the pending
// ones, and reports false if it was not pending.
func (s *Store) Send(ctx context.Context, sig tasks.Signal) (bool, error) {
	sent := false
	err := s.write(ctx, "send signal", func(tx *sql.Tx) error {
		sent = false
		if sig.Kind == tasks.SignalAnswer {
			res, err := tx.ExecContext(ctx, s.q(`DELETE FROM inputs WHERE task_id = ? AND key = ?`), sig.Task, sig.Key)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return err
			}
		}
		var result []byte
		if sig.Result != nil {
			result = []byte(sig.Result)
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO signals (runner, task_id, kind, key, result, err, sent_at) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			sig.Runner, sig.Task, string(sig.Kind), sig.Key, result, sig.Err, time.Now().UnixNano())
		if err != nil {
			return err
		}
		if err := s.notify(ctx, tx, sig.Runner); err != nil {
			return err
		}
		sent = true
		return nil
	})
	return sent, err
}

// Receive takes the signals sent to this instance. It reads first and writes only
// when there is something to take, so that an idle poll commits nothing.
func (s *Store) Receive(ctx context.Context) ([]tasks.Signal, error) {
	var any int
	err := s.db.QueryRowContext(ctx, s.q(`SELECT count(*) FROM signals WHERE runner = ?`), s.id).Scan(&any)
	if err != nil || any == 0 {
		if err != nil {
			return nil, s.storeError("receive signals", err)
		}
		return nil, nil
	}
	var out []tasks.Signal
	err = s.write(ctx, "receive signals", func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, s.q(`DELETE FROM signals WHERE runner = ? RETURNING task_id, kind, key, result, err`), s.id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			sig := tasks.Signal{Runner: s.id}
			var kind string
			var result []byte
			if err := rows.Scan(&sig.Task, &kind, &sig.Key, &result, &sig.Err); err != nil {
				return err
			}
			sig.Kind = tasks.SignalKind(kind)
			if result != nil {
				sig.Result = result
			}
			out = append(out, sig)
		}
		return rows.Err()
	})
	return out, err
}

// UseNonce records a single-use nonce until expires: it reports false if any
// instance recorded it before (the request state it stands for was already used).
func (s *Store) UseNonce(ctx context.Context, nonce string, expires time.Time) (bool, error) {
	fresh := false
	err := s.write(ctx, "use nonce", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO nonces (nonce, expires_at) VALUES (?, ?) ON CONFLICT (nonce) DO NOTHING`),
			nonce, expires.UnixNano())
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		fresh = n == 1
		return err
	})
	return fresh, err
}
