package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// schemaV2 adds each task's journal (tasks.Journal): its log, last checkpoint and
// the recipe that resumes it, in a table of their own so that reading a task (every
// tasks/get) never reads them. orphan marks a resumable task whose server stopped,
// waiting for an instance to adopt it; size is what the row adds to the totals.
const schemaV2 = `
CREATE TABLE task_journal (
	task_id     TEXT PRIMARY KEY,
	log         BLOB,
	log_dropped BIGINT NOT NULL DEFAULT 0,
	checkpoint  BLOB,
	recipe      BLOB,
	orphan      INTEGER NOT NULL DEFAULT 0,
	resumes     INTEGER NOT NULL DEFAULT 0,
	size        BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX task_journal_orphans ON task_journal (task_id) WHERE orphan = 1;
`

var _ tasks.Journal = (*Store)(nil)

// journalRow is a task's journal as stored.
type journalRow struct {
	log, checkpoint, recipe []byte
	dropped                 int64
	orphan                  bool
	resumes                 int
}

func (j *journalRow) size() int64 { return int64(len(j.log) + len(j.checkpoint) + len(j.recipe)) }

// journal reads task id's journal in tx (zero if it has none yet); the task must
// exist.
func (s *Store) journal(ctx context.Context, tx *sql.Tx, id string) (journalRow, error) {
	// One query for the task's existence and its journal: a guest's every log line
	// comes through here.
	var j journalRow
	var orphan int
	var hasJournal bool
	err := tx.QueryRowContext(ctx, s.q(`SELECT j.task_id IS NOT NULL, j.log, COALESCE(j.log_dropped, 0), j.checkpoint,
		j.recipe, COALESCE(j.orphan, 0), COALESCE(j.resumes, 0)
		FROM tasks t LEFT JOIN task_journal j ON j.task_id = t.id WHERE t.id = ?`), id).
		Scan(&hasJournal, &j.log, &j.dropped, &j.checkpoint, &j.recipe, &orphan, &j.resumes)
	if errors.Is(err, sql.ErrNoRows) {
		return journalRow{}, tasks.ErrNotFound
	}
	if err != nil || !hasJournal {
		return journalRow{}, err
	}
	j.orphan = orphan != 0
	return j, nil
}

// putJournal writes task id's journal in tx and keeps the totals; old is what it
// replaces.
func (s *Store) putJournal(ctx context.Context, tx *sql.Tx, id string, j, old journalRow) error {
	orphan := 0
	if j.orphan {
		orphan = 1
	}
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO task_journal (task_id, log, log_dropped, checkpoint, recipe, orphan, resumes, size)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (task_id) DO UPDATE SET log = excluded.log, log_dropped = excluded.log_dropped,
			checkpoint = excluded.checkpoint, recipe = excluded.recipe, orphan = excluded.orphan,
			resumes = excluded.resumes, size = excluded.size`),
		id, j.log, j.dropped, j.checkpoint, j.recipe, orphan, j.resumes, j.size())
	if err != nil {
		return err
	}
	s.count(0, j.size()-old.size())
	return nil
}

// changeJournal applies f to task id's journal in one write transaction.
func (s *Store) changeJournal(ctx context.Context, what, id string, f func(j *journalRow) error) error {
	return s.write(ctx, what, func(tx *sql.Tx) error {
		old, err := s.journal(ctx, tx, id)
		if err != nil {
			return err
		}
		j := old
		if err := f(&j); err != nil {
			return &keepError{err}
		}
		return s.putJournal(ctx, tx, id, j, old)
	})
}

func (s *Store) AppendLog(ctx context.Context, id string, text []byte, max int) (tasks.LogState, error) {
	var st tasks.LogState
	err := s.changeJournal(ctx, "append to task log", id, func(j *journalRow) error {
		log, dropped := tasks.TrimLog(append(bytes.Clone(j.log), text...), max)
		j.log, j.dropped = log, j.dropped+dropped
		st = tasks.LogState{Dropped: j.dropped, Kept: len(j.log)}
		return nil
	})
	return st, err
}

func (s *Store) ReadLog(ctx context.Context, id string, offset int64, limit int) (tasks.LogPage, error) {
	var log []byte
	var dropped int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT log, log_dropped FROM task_journal WHERE task_id = ?`), id).Scan(&log, &dropped)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.Get(ctx, id); err != nil {
			return tasks.LogPage{}, err
		}
		return tasks.LogPage{}, nil
	}
	if err != nil {
		return tasks.LogPage{}, s.storeError("read task log", err)
	}
	return tasks.PageOf(log, dropped, offset, limit), nil
}

func (s *Store) SaveCheckpoint(ctx context.Context, id string, data []byte) error {
	return s.changeJournal(ctx, "save checkpoint", id, func(j *journalRow) error {
		j.checkpoint = bytes.Clone(data)
		if j.checkpoint == nil {
			j.checkpoint = []byte{} // saved, if empty: not "none"
		}
		return nil
	})
}

func (s *Store) Checkpoint(ctx context.Context, id string) ([]byte, error) {
	var cp []byte
	err := s.db.QueryRowContext(ctx, s.q(`SELECT checkpoint FROM task_journal WHERE task_id = ?`), id).Scan(&cp)
	if errors.Is(err, sql.ErrNoRows) {
		_, err := s.Get(ctx, id)
		return nil, err
	}
	if err != nil {
		return nil, s.storeError("read checkpoint", err)
	}
	return cp, nil
}

func (s *Store) SetRecipe(ctx context.Context, id string, recipe []byte) error {
	return s.changeJournal(ctx, "record task recipe", id, func(j *journalRow) error {
		j.recipe = bytes.Clone(recipe)
		return nil
	})
}

func (s *Store) Orphan(ctx context.Context, id string, msg string) (bool, error) {
	var ok bool
	err := s.write(ctx, "leave a task to be resumed", func(tx *sql.Tx) error {
		var err error
		ok, err = s.orphan(ctx, tx, id, msg)
		return err
	})
	return ok, err
}

// orphan marks unfinished task id, if it has a recipe, as waiting to be adopted.
func (s *Store) orphan(ctx context.Context, tx *sql.Tx, id string, msg string) (bool, error) {
	t, exists, err := s.get(ctx, tx, id)
	if err != nil || !exists || t.Status.Terminal() {
		return false, err
	}
	old, err := s.journal(ctx, tx, id)
	if err != nil || old.recipe == nil {
		return false, err
	}
	j := old
	j.orphan = true
	if err := s.putJournal(ctx, tx, id, j, old); err != nil {
		return false, err
	}
	before := t
	t.StatusMessage, t.Runner = msg, ""
	if err := s.put(ctx, tx, t, &before); err != nil {
		return false, err
	}
	_, err = tx.ExecContext(ctx, s.q(`DELETE FROM inputs WHERE task_id = ?`), id)
	return err == nil, err
}

// OrphanMessage is the status message of a resumable task whose server stopped, until
// an instance adopts it.
const OrphanMessage = "the server running this task stopped while it ran; it resumes from its last checkpoint on a live server"

func (s *Store) Adopt(ctx context.Context, runner string, limit int) ([]tasks.Adopted, error) {
	if runner == "" {
		runner = s.id
	}
	// Looked for every tasks.AdoptEvery by every instance: a read first, so that
	// none takes the write lock when no task waits to be resumed (the usual case).
	var waiting bool
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT EXISTS (SELECT 1 FROM task_journal WHERE orphan = 1)`)).Scan(&waiting); err != nil {
		return nil, s.storeError("look for tasks to resume", err)
	}
	if !waiting {
		return nil, nil
	}
	var out []tasks.Adopted
	err := s.write(ctx, "adopt tasks to resume", func(tx *sql.Tx) error {
		out = nil
		rows, err := tx.QueryContext(ctx, s.q(`SELECT task_id FROM task_journal WHERE orphan = 1 LIMIT ?`), limit)
		if err != nil {
			return err
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			t, exists, err := s.get(ctx, tx, id)
			if err != nil {
				return err
			}
			old, err := s.journal(ctx, tx, id)
			if err != nil && !errors.Is(err, tasks.ErrNotFound) {
				return err
			}
			j := old
			j.orphan = false
			if !exists || t.Status.Terminal() {
				if exists {
					err = s.putJournal(ctx, tx, id, j, old)
				}
				if err != nil {
					return err
				}
				continue
			}
			j.resumes++
			if err := s.putJournal(ctx, tx, id, j, old); err != nil {
				return err
			}
			before := t
			t.Runner = runner
			if err := s.put(ctx, tx, t, &before); err != nil {
				return err
			}
			out = append(out, tasks.Adopted{Task: t, Recipe: j.recipe, Checkpoint: j.checkpoint, Resumes: j.resumes})
		}
		return nil
	})
	return out, err
}

func (s *Store) Restart(ctx context.Context, id string, f func(t *tasks.Task, resumes int) error) (tasks.Adopted, error) {
	var out tasks.Adopted
	err := s.write(ctx, "count a task's restart", func(tx *sql.Tx) error {
		t, exists, err := s.get(ctx, tx, id)
		if err != nil {
			return err
		}
		if !exists {
			return tasks.ErrNotFound
		}
		old, err := s.journal(ctx, tx, id)
		if err != nil {
			return err
		}
		before := t
		if err := f(&t, old.resumes); err != nil {
			return &keepError{err}
		}
		j := old
		j.resumes++
		if err := s.putJournal(ctx, tx, id, j, old); err != nil {
			return err
		}
		if err := s.put(ctx, tx, t, &before); err != nil {
			return err
		}
		out = tasks.Adopted{Task: t, Recipe: j.recipe, Checkpoint: j.checkpoint, Resumes: j.resumes}
		return nil
	})
	return out, err
}

// deleteJournals deletes the journals of tasks ids in tx and returns their bytes.
func (s *Store) deleteJournals(ctx context.Context, tx *sql.Tx, ids []string) (int64, error) {
	var total int64
	for _, id := range ids {
		var sz int64
		err := tx.QueryRowContext(ctx, s.q(`DELETE FROM task_journal WHERE task_id = ? RETURNING size`), id).Scan(&sz)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return 0, err
		}
		total += sz
	}
	return total, nil
}
