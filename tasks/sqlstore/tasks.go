package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

const taskColumns = `id, owner, status, status_message, created_at, updated_at, finished_at, ttl, poll_interval,
	result, has_error, error_code, error_message, error_data, runner`

// row is what scans a task: a *sql.Row or *sql.Rows.
type row interface{ Scan(dest ...any) error }

func scanTask(r row) (tasks.Task, error) {
	var t tasks.Task
	var status string
	var created, updated, finished, ttl, poll int64
	var result, errData []byte
	var hasError int
	var errCode int64
	var errMsg string
	err := r.Scan(&t.ID, &t.Owner, &status, &t.StatusMessage, &created, &updated, &finished, &ttl, &poll,
		&result, &hasError, &errCode, &errMsg, &errData, &t.Runner)
	if err != nil {
		return tasks.Task{}, err
	}
	t.Status = tasks.Status(status)
	t.CreatedAt, t.LastUpdatedAt, t.FinishedAt = fromNanos(created), fromNanos(updated), fromNanos(finished)
	t.TTL, t.PollInterval = time.Duration(ttl), time.Duration(poll)
	if result != nil {
		t.Result = json.RawMessage(result)
	}
	if hasError != 0 {
		t.Error = &tasks.Error{Code: errCode, Message: errMsg}
		if errData != nil {
			t.Error.Data = json.RawMessage(errData)
		}
	}
	return t, nil
}

// get reads task id in tx; ok is false when there is none.
//
// The statements of put and get are prepared once (parsing the upsert took a fifth
// of a write's time).
func (s *Store) get(ctx context.Context, tx *sql.Tx, id string) (tasks.Task, bool, error) {
	q := tx.StmtContext(ctx, s.wgetStmt)
	t, err := scanTask(q.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return tasks.Task{}, false, nil
	}
	return t, err == nil, err
}

// put writes t in tx; old is the task it replaces, if any. It keeps the totals, and
// drops the pending inputs of a task that became terminal.
func (s *Store) put(ctx context.Context, tx *sql.Tx, t tasks.Task, old *tasks.Task) error {
	var result, errData []byte
	if t.Result != nil {
		result = []byte(t.Result)
	}
	hasError, errCode, errMsg := 0, int64(0), ""
	if t.Error != nil {
		hasError, errCode, errMsg = 1, t.Error.Code, t.Error.Message
		if t.Error.Data != nil {
			errData = []byte(t.Error.Data)
		}
	}
	var expires any
	if t.Status.Terminal() {
		expires = tasks.ExpiresAt(t).UnixNano()
	}
	size := tasks.Size(t)
	_, err := tx.StmtContext(ctx, s.putStmt).ExecContext(ctx, t.ID, t.Owner, string(t.Status), t.StatusMessage, nanos(t.CreatedAt), nanos(t.LastUpdatedAt), nanos(t.FinishedAt),
		int64(t.TTL), int64(t.PollInterval), result, hasError, errCode, errMsg, errData, t.Runner, expires, size)
	if err != nil {
		return err
	}
	dn, db := int64(1), size
	if old != nil {
		dn, db = 0, size-tasks.Size(*old)
	}
	s.count(dn, db)
	if t.Status.Terminal() && (old == nil || !old.Status.Terminal()) {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM inputs WHERE task_id = ?`), t.ID); err != nil {
			return err
		}
	}
	return nil
}

// Put creates or replaces t; it is on disk when Put returns.
func (s *Store) Put(ctx context.Context, t tasks.Task) error {
	return s.write(ctx, "put task", func(tx *sql.Tx) error {
		old, exists, err := s.get(ctx, tx, t.ID)
		if err != nil {
			return err
		}
		if !exists {
			return s.put(ctx, tx, t, nil)
		}
		return s.put(ctx, tx, t, &old)
	})
}

// Update applies f to task id and stores the result in one transaction, which holds
// the database's write lock from its start: no other process changes the task
// between the read and the write. An error of f is returned as it is, with the task
// as f left it, and nothing is written.
func (s *Store) Update(ctx context.Context, id string, f func(*tasks.Task) error) (tasks.Task, error) {
	var t tasks.Task
	err := s.write(ctx, "update task", func(tx *sql.Tx) error {
		old, exists, err := s.get(ctx, tx, id)
		if err != nil {
			return err
		}
		if !exists {
			return tasks.ErrNotFound
		}
		t = old
		if err := f(&t); err != nil {
			return &keepError{err}
		}
		return s.put(ctx, tx, t, &old)
	})
	return t, err
}

func (s *Store) Get(ctx context.Context, id string) (tasks.Task, error) {
	t, err := scanTask(s.getStmt.QueryRowContext(ctx, id))
	ok := err == nil
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	if err != nil {
		return tasks.Task{}, s.storeError("get task", err)
	}
	if !ok {
		return tasks.Task{}, tasks.ErrNotFound
	}
	return t, nil
}

func (s *Store) List(ctx context.Context, owner, after string, limit int) ([]tasks.Task, error) {
	var rows *sql.Rows
	var err error
	if after == "" {
		rows, err = s.db.QueryContext(ctx, s.q(`SELECT `+taskColumns+` FROM tasks WHERE owner = ?
			ORDER BY created_at, id LIMIT ?`), owner, limit)
	} else {
		var created int64
		err = s.db.QueryRowContext(ctx, s.q(`SELECT created_at FROM tasks WHERE id = ? AND owner = ?`), after, owner).Scan(&created)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, tasks.ErrBadCursor
		}
		if err != nil {
			return nil, s.storeError("list tasks", err)
		}
		rows, err = s.db.QueryContext(ctx, s.q(`SELECT `+taskColumns+` FROM tasks WHERE owner = ?
			AND (created_at > ? OR (created_at = ? AND id > ?)) ORDER BY created_at, id LIMIT ?`),
			owner, created, created, after, limit)
	}
	if err != nil {
		return nil, s.storeError("list tasks", err)
	}
	defer rows.Close()
	var out []tasks.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, s.storeError("list tasks", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, s.storeError("list tasks", err)
	}
	return out, nil
}

func (s *Store) Delete(ctx context.Context, id string) error {
	return s.write(ctx, "delete task", func(tx *sql.Tx) error {
		return s.deleteIDs(ctx, tx, []string{id})
	})
}

// deleteIDs deletes tasks (missing ones are skipped) with their inputs and signals,
// and keeps the totals.
func (s *Store) deleteIDs(ctx context.Context, tx *sql.Tx, ids []string) error {
	var n, size int64
	for _, id := range ids {
		var sz int64
		err := tx.QueryRowContext(ctx, s.q(`DELETE FROM tasks WHERE id = ? RETURNING size`), id).Scan(&sz)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		n, size = n+1, size+sz
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM inputs WHERE task_id = ?`), id); err != nil {
			return err
		}
	}
	journals, err := s.deleteJournals(ctx, tx, ids)
	if err != nil {
		return err
	}
	s.count(-n, -size-journals)
	return nil
}

func (s *Store) Expired(ctx context.Context, now time.Time) ([]string, error) {
	ids, err := s.expired(ctx, s.db, now, -1)
	if err != nil {
		return nil, s.storeError("expired tasks", err)
	}
	return ids, nil
}

func (s *Store) expired(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, now time.Time, limit int) ([]string, error) {
	query, args := `SELECT id FROM tasks WHERE expires_at < ? ORDER BY expires_at`, []any{now.UnixNano()}
	if limit >= 0 {
		query, args = query+` LIMIT ?`, append(args, limit)
	}
	rows, err := q.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// Purge deletes up to limit expired tasks in one statement and one commit. A
// terminal task has no inputs left (put drops them), so only the totals follow.
func (s *Store) Purge(ctx context.Context, now time.Time, limit int) (int, error) {
	var n int
	err := s.write(ctx, "purge", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.q(`DELETE FROM tasks WHERE id IN
			(SELECT id FROM tasks WHERE expires_at < ? ORDER BY expires_at LIMIT ?) RETURNING id, size`), now.UnixNano(), limit)
		if err != nil {
			return err
		}
		var size int64
		var ids []string
		n = 0
		for rows.Next() {
			var id string
			var sz int64
			if err := rows.Scan(&id, &sz); err != nil {
				rows.Close()
				return err
			}
			n, size = n+1, size+sz
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		journals, err := s.deleteJournals(ctx, tx, ids)
		if err != nil {
			return err
		}
		s.count(-int64(n), -size-journals)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

func (s *Store) Stats(ctx context.Context) (tasks.Stats, error) {
	var st tasks.Stats
	var n int64
	if err := s.statsStmt.QueryRowContext(ctx).Scan(&n, &st.Bytes); err != nil {
		return tasks.Stats{}, s.storeError("stats", err)
	}
	st.Tasks = int(n)
	return st, nil
}
