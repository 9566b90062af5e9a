package sqlstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/sqlstore"
)

// journalEngine is a Journal to test: open makes a new, empty one and returns how
// to open an instance of it (each closed at the end of t); the memory store has
// one instance, returned every time.
type journalEngine struct {
	name string
	open func(t *testing.T) func() tasks.Journal
}

// journals are the Journals: memory, SQLite and PostgreSQL.
func journals(t *testing.T) []journalEngine {
	cases := []journalEngine{{"memory", func(*testing.T) func() tasks.Journal {
		s := tasks.NewMemoryStore()
		return func() tasks.Journal { return s }
	}}}
	for _, e := range engines(t) {
		cases = append(cases, journalEngine{e.name, func(t *testing.T) func() tasks.Journal {
			open := instances(t, e)
			return func() tasks.Journal { return open() }
		}})
	}
	return cases
}

// TestJournal holds the Journals (memory, SQLite, PostgreSQL) to one contract: a log
// keeps its last lines within its bound and counts what it dropped, pages end at a
// line's end, checkpoints and recipes are kept, and deleting a task deletes its
// journal and its bytes from the totals.
func TestJournal(t *testing.T) {
	for _, tc := range journals(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := tc.open(t)()
			if _, err := s.AppendLog(ctx, "nope", []byte("x\n"), 100); !errors.Is(err, tasks.ErrNotFound) {
				t.Errorf("AppendLog(missing task) = %v, want ErrNotFound", err)
			}
			now := time.Now().UTC()
			if err := s.Put(ctx, task("a", "alice", now, tasks.Working)); err != nil {
				t.Fatal(err)
			}
			base, _ := s.Stats(ctx)
			var st tasks.LogState
			var err error
			for i := range 10 {
				if st, err = s.AppendLog(ctx, "a", fmt.Appendf(nil, "line %d\n", i), 30); err != nil {
					t.Fatal(err)
				}
			}
			// "line 0\n" is 7 bytes: 70 written, the last 4 lines (28 bytes) kept.
			if st != (tasks.LogState{Dropped: 42, Kept: 28}) {
				t.Errorf("after 10 lines with a bound of 30 bytes: %+v, want 42 dropped, 28 kept", st)
			}
			p, err := s.ReadLog(ctx, "a", 0, 1000)
			if err != nil || p.Offset != 42 || string(p.Text) != "line 6\nline 7\nline 8\nline 9\n" {
				t.Errorf("ReadLog(0) = %+v %q, %v; want from offset 42, the last four lines", p, p.Text, err)
			}
			p, _ = s.ReadLog(ctx, "a", 49, 10) // from "line 7", 10 bytes: one whole line
			if p.Offset != 49 || string(p.Text) != "line 7\n" {
				t.Errorf("ReadLog(49, 10) = %d %q; want the one whole line that fits", p.Offset, p.Text)
			}
			if p, _ = s.ReadLog(ctx, "a", 1000, 10); p.Offset != 70 || len(p.Text) != 0 {
				t.Errorf("ReadLog past the end = %d %q; want the end, empty", p.Offset, p.Text)
			}
			cp := bytes.Repeat([]byte{0xff, 0}, 1000)
			if err := s.SaveCheckpoint(ctx, "a", cp); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Checkpoint(ctx, "a"); err != nil || !bytes.Equal(got, cp) {
				t.Errorf("Checkpoint = %d bytes, %v; want the 2000 saved", len(got), err)
			}
			if err := s.SetRecipe(ctx, "a", []byte(`{"tool":"x"}`)); err != nil {
				t.Fatal(err)
			}
			st2, _ := s.Stats(ctx)
			if want := base.Bytes + 28 + 2000 + 12; st2.Bytes != want {
				t.Errorf("Stats.Bytes = %d, want %d (the log kept, the checkpoint and the recipe count)", st2.Bytes, want)
			}
			if ok, err := s.Orphan(ctx, "a", "waiting"); !ok || err != nil {
				t.Fatalf("Orphan(resumable) = %v, %v", ok, err)
			}
			got, err := s.Adopt(ctx, "me", 10)
			if err != nil || len(got) != 1 || got[0].Resumes != 1 || !bytes.Equal(got[0].Checkpoint, cp) || got[0].Task.Runner != "me" {
				t.Fatalf("Adopt = %+v, %v; want the task, resume 1, with its checkpoint", got, err)
			}
			if again, _ := s.Adopt(ctx, "other", 10); len(again) != 0 {
				t.Errorf("Adopt after it was adopted = %d tasks, want none", len(again))
			}
			if err := s.Put(ctx, task("b", "bob", now, tasks.Working)); err != nil {
				t.Fatal(err)
			}
			if ok, _ := s.Orphan(ctx, "b", "waiting"); ok {
				t.Error("Orphan(task without a recipe) = true, want false")
			}
			if err := s.Delete(ctx, "a"); err != nil {
				t.Fatal(err)
			}
			if st3, _ := s.Stats(ctx); st3.Bytes != base.Bytes {
				t.Errorf("Stats.Bytes after delete = %d, want %d", st3.Bytes, base.Bytes)
			}
			if _, err := s.ReadLog(ctx, "a", 0, 10); !errors.Is(err, tasks.ErrNotFound) {
				t.Errorf("ReadLog(deleted) = %v, want ErrNotFound", err)
			}
		})
	}
}

// TestPurgeDeletesJournal: when an expired task is purged, its journal (log,
// checkpoint, recipe) goes with it, and its bytes leave the store's totals; a task
// that has not expired keeps its own.
func TestPurgeDeletesJournal(t *testing.T) {
	for _, tc := range journals(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := tc.open(t)()
			now := time.Now().UTC()
			journal := func(id string) {
				t.Helper()
				for i := range 5 {
					if _, err := s.AppendLog(ctx, id, fmt.Appendf(nil, "%s line %d\n", id, i), 1<<20); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.SaveCheckpoint(ctx, id, bytes.Repeat([]byte(id), 500)); err != nil {
					t.Fatal(err)
				}
				if err := s.SetRecipe(ctx, id, []byte(`{"tool":"x"}`)); err != nil {
					t.Fatal(err)
				}
			}
			// A task that works on (not terminal: it never expires), with a journal.
			if err := s.Put(ctx, task("live", "alice", now.Add(-2*time.Hour), tasks.Working)); err != nil {
				t.Fatal(err)
			}
			journal("live")
			base, _ := s.Stats(ctx)
			// A task that completed two hours ago with a ttl of a minute: expired.
			old := task("old", "alice", now.Add(-2*time.Hour), tasks.Working)
			if err := s.Put(ctx, old); err != nil {
				t.Fatal(err)
			}
			journal("old")
			old.Status, old.FinishedAt, old.LastUpdatedAt = tasks.Completed, old.CreatedAt.Add(time.Second), old.CreatedAt.Add(time.Second)
			old.Result = json.RawMessage(`{"content":[]}`)
			if err := s.Put(ctx, old); err != nil {
				t.Fatal(err)
			}
			if st, _ := s.Stats(ctx); st.Bytes <= base.Bytes+1000 {
				t.Fatalf("Stats.Bytes with the expired task = %d, want its task and journal (over 1000 bytes) above %d", st.Bytes, base.Bytes)
			}
			if n, err := s.Purge(ctx, now, 100); n != 1 || err != nil {
				t.Fatalf("Purge = %d, %v; want the expired task purged", n, err)
			}
			if st, _ := s.Stats(ctx); st != base {
				t.Errorf("Stats after the purge = %+v, want %+v (the purged task's journal bytes gone too)", st, base)
			}
			if _, err := s.ReadLog(ctx, "old", 0, 1000); !errors.Is(err, tasks.ErrNotFound) {
				t.Errorf("ReadLog(purged) = %v, want ErrNotFound", err)
			}
			if _, err := s.Checkpoint(ctx, "old"); !errors.Is(err, tasks.ErrNotFound) {
				t.Errorf("Checkpoint(purged) = %v, want ErrNotFound", err)
			}
			if sq, ok := s.(*sqlstore.Store); ok {
				if n, err := sq.JournalRows(ctx, "old"); n != 0 || err != nil {
					t.Errorf("task_journal rows of the purged task = %d, %v; want none", n, err)
				}
			}
			// A new task of the same ID starts with an empty journal.
			if err := s.Put(ctx, task("old", "alice", now, tasks.Working)); err != nil {
				t.Fatal(err)
			}
			if p, err := s.ReadLog(ctx, "old", 0, 1000); err != nil || len(p.Text) != 0 || p.Dropped != 0 {
				t.Errorf("log of a new task with the purged one's ID = %q (%d dropped), %v; want empty", p.Text, p.Dropped, err)
			}
			if cp, err := s.Checkpoint(ctx, "old"); err != nil || cp != nil {
				t.Errorf("checkpoint of a new task with the purged one's ID = %d bytes, %v; want none", len(cp), err)
			}
			p, err := s.ReadLog(ctx, "live", 0, 1000)
			if cp, _ := s.Checkpoint(ctx, "live"); err != nil || strings.Count(string(p.Text), "\n") != 5 || len(cp) != 2000 {
				t.Errorf("journal of the live task after the purge: log %q, %v, checkpoint of %d bytes; want it kept", p.Text, err, len(cp))
			}
		})
	}
}

// resumable starts (or resumes) work that saves a checkpoint per step and blocks
// after stopAfter steps of this run (-1: never), or finishes after step last.
func resumable(stopAfter, last int, started chan<- int) tasks.Func {
	return func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		cp, resumes := h.Resumed()
		step := 0
		if cp != nil {
			fmt.Sscan(string(cp), &step)
		}
		if resumes == 0 {
			if err := h.SetRecipe(ctx, []byte(`{"work":"steps"}`)); err != nil {
				return nil, "", &tasks.Error{Code: -1, Message: err.Error()}
			}
		}
		started <- step
		stopAt := step + stopAfter
		for step < last {
			step++
			if _, err := h.AppendLog(ctx, fmt.Appendf(nil, "step %d", step)); err != nil {
				return nil, "", &tasks.Error{Code: -1, Message: err.Error()}
			}
			if err := h.SaveCheckpoint(ctx, fmt.Append(nil, step)); err != nil {
				return nil, "", &tasks.Error{Code: -1, Message: err.Error()}
			}
			if stopAfter >= 0 && step == stopAt {
				<-ctx.Done()
				return nil, "", &tasks.Error{Code: -1, Message: "stopped"}
			}
		}
		return fmt.Appendf(nil, `{"steps":%d,"resumes":%d}`, step, resumes), "", nil
	}
}

// TestResumeAfterCrash: a task with a recipe whose server dies (SIGKILL) is adopted by
// the next server on the store and resumed from its checkpoint, keeping its log; one
// without a recipe is failed as before; and past MaxResumes it is failed.
func TestResumeAfterCrash(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			open := opener(e)
			local := tasks.Requester{Owner: "local"}
			started := make(chan int, 10)
			resume := func(a tasks.Adopted) (tasks.Func, error) {
				if string(a.Recipe) != `{"work":"steps"}` {
					return nil, fmt.Errorf("unknown recipe %s", a.Recipe)
				}
				return resumable(-1, 5, started), nil
			}

			s1 := open(t)
			m1 := tasks.NewManager(tasks.Options{Store: s1, Resume: resume})
			task1, err := m1.Start(ctx, local, time.Hour, resumable(3, 5, started))
			if err != nil {
				t.Fatal(err)
			}
			plain, _ := m1.Start(ctx, local, time.Hour, func(ctx context.Context, _ *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
				<-ctx.Done()
				return nil, "", nil
			})
			<-started
			waitLog(t, s1, task1.ID, "step 3\n")
			s1.Crash()
			defer m1.Close(ctx)

			s2 := open(t)
			defer s2.Close()
			m2 := tasks.NewManager(tasks.Options{Store: s2, Resume: resume})
			defer m2.Close(ctx)
			select {
			case from := <-started:
				if from != 3 {
					t.Errorf("resumed from step %d, want 3 (its last checkpoint)", from)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the task was not resumed")
			}
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			got, err := m2.Wait(wctx, "local", task1.ID)
			if err != nil || got.Status != tasks.Completed || string(got.Result) != `{"steps":5,"resumes":1}` {
				t.Errorf("resumed task = %s %q %s, %v; want completed after 5 steps and 1 resume", got.Status, got.StatusMessage, got.Result, err)
			}
			page, _, _ := m2.ReadLog(ctx, "local", task1.ID, 0, 1<<20)
			if want := "step 1\nstep 2\nstep 3\nstep 4\nstep 5\n"; string(page.Text) != want {
				t.Errorf("log after the resume = %q, want %q (the steps before the crash kept)", page.Text, want)
			}
			if _, _, err := m2.ReadLog(ctx, "mallory", task1.ID, 0, 10); !errors.Is(err, tasks.ErrNotFound) {
				t.Errorf("ReadLog by another owner = %v, want ErrNotFound", err)
			}
			if got, _ := m2.Get(ctx, "local", plain.ID); got.Status != tasks.Failed || got.StatusMessage != sqlstore.LostMessage {
				t.Errorf("task without a recipe = %s %q, want failed with LostMessage", got.Status, got.StatusMessage)
			}
		})
	}
}

// TestResumeLimit: a task whose server keeps dying is failed once it has been resumed
// MaxResumes times, with the reason.
func TestResumeLimit(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			open := opener(e)
			started := make(chan int, 10)
			resume := func(tasks.Adopted) (tasks.Func, error) { return resumable(1, 5, started), nil }
			opts := func(s *sqlstore.Store) tasks.Options {
				return tasks.Options{Store: s, Resume: resume, MaxResumes: 2}
			}
			s := open(t)
			m := tasks.NewManager(opts(s))
			created, err := m.Start(ctx, tasks.Requester{Owner: "local"}, time.Hour, resumable(1, 5, started))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 { // the first run, then two resumes: each dies at its first step
				select {
				case <-started:
				case <-time.After(10 * time.Second):
					t.Fatalf("run %d did not start", i)
				}
				waitLog(t, s, created.ID, fmt.Sprintf("step %d\n", 1+i))
				s.Crash()
				defer m.Close(ctx)
				s = open(t)
				m = tasks.NewManager(opts(s))
			}
			defer s.Close()
			defer m.Close(ctx)
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			got, err := m.Wait(wctx, "local", created.ID)
			if err != nil || got.Status != tasks.Failed || !strings.Contains(got.StatusMessage, "server running this task stopped") ||
				!strings.Contains(got.StatusMessage, "2 times already") || !strings.Contains(got.StatusMessage, "max_resumes (2)") {
				t.Errorf("task after 3 crashes = %s %q, %v; want failed naming the stop, the count before it and max_resumes", got.Status, got.StatusMessage, err)
			}
		})
	}
}

// TestRestartCounts: a restart after a worker died (Journal.Restart) and an adoption
// after a server stopped (Adopt) add to one stored count of resumes, which another
// instance reads; a restart is counted in the write that applies its change to the
// task, and one its function refuses changes nothing.
func TestRestartCounts(t *testing.T) {
	for _, tc := range journals(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			open := tc.open(t)
			s := open()
			if _, err := s.Restart(ctx, "nope", func(*tasks.Task, int) error { return nil }); !errors.Is(err, tasks.ErrNotFound) {
				t.Errorf("Restart(missing task) = %v, want ErrNotFound", err)
			}
			if err := s.Put(ctx, task("a", "alice", time.Now().UTC(), tasks.Working)); err != nil {
				t.Fatal(err)
			}
			if err := s.SetRecipe(ctx, "a", []byte(`{"tool":"x"}`)); err != nil {
				t.Fatal(err)
			}
			if err := s.SaveCheckpoint(ctx, "a", []byte("one")); err != nil {
				t.Fatal(err)
			}
			// restart counts a worker restart in s, noting it in the task, and
			// returns the count the store had before.
			restart := func(s tasks.Journal, msg string) (tasks.Adopted, int) {
				t.Helper()
				before := -1
				r, err := s.Restart(ctx, "a", func(x *tasks.Task, n int) error {
					before, x.StatusMessage = n, msg
					return nil
				})
				if err != nil {
					t.Fatalf("Restart = %v", err)
				}
				if got, err := s.Get(ctx, "a"); err != nil || got.StatusMessage != msg || r.Task.StatusMessage != msg {
					t.Errorf("task after Restart: stored %q, returned %q, %v; want %q", got.StatusMessage, r.Task.StatusMessage, err, msg)
				}
				return r, before
			}
			r, before := restart(s, "worker 1")
			if before != 0 || r.Resumes != 1 || string(r.Checkpoint) != "one" || string(r.Recipe) != `{"tool":"x"}` {
				t.Errorf("first Restart = %+v after %d; want resume 1 after 0, with the checkpoint and recipe", r, before)
			}
			no := errors.New("no")
			_, err := s.Restart(ctx, "a", func(x *tasks.Task, n int) error {
				before, x.StatusMessage = n, "not stored"
				return no
			})
			if got, _ := s.Get(ctx, "a"); !errors.Is(err, no) || before != 1 || got.StatusMessage != "worker 1" {
				t.Errorf("refused Restart = %v, saw %d resumes, left %q; want its error, 1 resume, the task unchanged", err, before, got.StatusMessage)
			}

			// The server stops: the adoption counts on from the worker restart.
			if ok, err := s.Orphan(ctx, "a", "waiting"); !ok || err != nil {
				t.Fatalf("Orphan = %v, %v", ok, err)
			}
			s2 := open()
			got, err := s2.Adopt(ctx, "me", 10)
			if err != nil || len(got) != 1 || got[0].Resumes != 2 {
				t.Fatalf("Adopt after a restart = %+v, %v; want the task at resume 2", got, err)
			}
			if err := s2.SaveCheckpoint(ctx, "a", []byte("two")); err != nil {
				t.Fatal(err)
			}
			if r, before = restart(s2, "worker 2"); before != 2 || r.Resumes != 3 || string(r.Checkpoint) != "two" {
				t.Errorf("Restart after the adoption = %+v after %d; want resume 3 after 2, from the new checkpoint", r, before)
			}
			if ok, err := s2.Orphan(ctx, "a", "waiting"); !ok || err != nil {
				t.Fatalf("Orphan = %v, %v", ok, err)
			}
			if got, err := open().Adopt(ctx, "you", 10); err != nil || len(got) != 1 || got[0].Resumes != 4 {
				t.Errorf("second Adopt = %+v, %v; want resume 4: two restarts and two adoptions", got, err)
			}
		})
	}
}

// restartResult is what Handle.Restart returned in the work of a test.
type restartResult struct {
	checkpoint string
	resumes    int
	err        error
}

// TestResumeLimitCountsRestarts: max_resumes bounds the restarts after a worker died
// and the resumes after a server stopped together. With MaxResumes 2: a worker
// restart, then a server crash (resume 2), and the next worker restart is refused
// with the count; two worker restarts, then a server crash, and the adoption fails
// the task, saying which stop ended it. checkpoint_load's count (Handle.Resumed)
// includes the worker restarts.
func TestResumeLimitCountsRestarts(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			local := tasks.Requester{Owner: "local"}
			// first is a task's first run: it saves checkpoint "1", is restarted
			// (a worker died) restarts times, reporting each, then blocks until its
			// server crashes.
			first := func(restarts int, report chan<- restartResult) tasks.Func {
				return func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
					if err := h.SetRecipe(ctx, []byte(`{"work":"restarts"}`)); err != nil {
						return nil, "", &tasks.Error{Code: -1, Message: err.Error()}
					}
					if err := h.SaveCheckpoint(ctx, []byte("1")); err != nil {
						return nil, "", &tasks.Error{Code: -1, Message: err.Error()}
					}
					for range restarts {
						cp, n, err := h.Restart(ctx)
						report <- restartResult{string(cp), n, err}
					}
					<-ctx.Done()
					return nil, "", &tasks.Error{Code: -1, Message: "stopped"}
				}
			}
			expect := func(what string, report <-chan restartResult, want restartResult) {
				t.Helper()
				select {
				case got := <-report:
					var limit *tasks.ResumeLimitError
					if got.checkpoint != want.checkpoint || got.resumes != want.resumes || (got.err == nil) != (want.err == nil) ||
						want.err != nil && (!errors.As(got.err, &limit) || *limit != *want.err.(*tasks.ResumeLimitError)) {
						t.Errorf("%s: Restart = %+v, want %+v", what, got, want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: no Restart", what)
				}
			}
			wantMessage := func(s *sqlstore.Store, id, prefix string) {
				t.Helper()
				if got, err := s.Get(ctx, id); err != nil || got.Status != tasks.Working || !strings.HasPrefix(got.StatusMessage, prefix) {
					t.Errorf("stored task = %s %q, %v; want working, %q", got.Status, got.StatusMessage, err, prefix)
				}
			}

			t.Run("worker limit", func(t *testing.T) {
				open := opener(e)
				report := make(chan restartResult, 10)
				resumed := make(chan int, 1)
				resume := func(tasks.Adopted) (tasks.Func, error) {
					return func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
						_, n := h.Resumed()
						resumed <- n
						cp, n, err := h.Restart(ctx) // its worker dies again
						report <- restartResult{string(cp), n, err}
						return nil, "worker stopped: " + err.Error(), nil
					}, nil
				}
				s1 := open(t)
				m1 := tasks.NewManager(tasks.Options{Store: s1, Resume: resume, MaxResumes: 2})
				created, err := m1.Start(ctx, local, time.Hour, first(1, report))
				if err != nil {
					t.Fatal(err)
				}
				expect("after the first worker death", report, restartResult{"1", 1, nil})
				wantMessage(s1, created.ID, "started again from its last checkpoint after its worker process stopped (resume 1 of at most 2)")
				s1.Crash()
				defer m1.Close(ctx)

				s2 := open(t)
				defer s2.Close()
				m2 := tasks.NewManager(tasks.Options{Store: s2, Resume: resume, MaxResumes: 2})
				defer m2.Close(ctx)
				select {
				case n := <-resumed:
					if n != 2 {
						t.Errorf("resumed work reads %d resumes, want 2 (a worker restart, then an adoption)", n)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the task was not resumed")
				}
				expect("after the server crash and another worker death", report,
					restartResult{"", 2, &tasks.ResumeLimitError{Resumes: 2, Max: 2}})
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				got, err := m2.Wait(wctx, "local", created.ID)
				if err != nil || got.Status != tasks.Failed || !strings.Contains(got.StatusMessage, "2 times already") {
					t.Errorf("task = %s %q, %v; want failed by its work, with the count", got.Status, got.StatusMessage, err)
				}
			})

			t.Run("server limit", func(t *testing.T) {
				open := opener(e)
				report := make(chan restartResult, 10)
				called := make(chan struct{}, 1)
				resume := func(tasks.Adopted) (tasks.Func, error) {
					called <- struct{}{}
					return first(0, report), nil
				}
				s1 := open(t)
				m1 := tasks.NewManager(tasks.Options{Store: s1, Resume: resume, MaxResumes: 2})
				created, err := m1.Start(ctx, local, time.Hour, first(2, report))
				if err != nil {
					t.Fatal(err)
				}
				expect("after the first worker death", report, restartResult{"1", 1, nil})
				expect("after the second worker death", report, restartResult{"1", 2, nil})
				wantMessage(s1, created.ID, "started again from its last checkpoint after its worker process stopped (resume 2 of at most 2)")
				s1.Crash()
				defer m1.Close(ctx)

				s2 := open(t)
				defer s2.Close()
				m2 := tasks.NewManager(tasks.Options{Store: s2, Resume: resume, MaxResumes: 2})
				defer m2.Close(ctx)
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				got, err := m2.Wait(wctx, "local", created.ID)
				want := "the server running this task stopped while it ran, and it is not resumed again: it was resumed 2 times already, as many as max_resumes (2) allows (server and worker stops count alike)"
				if err != nil || got.Status != tasks.Failed || got.StatusMessage != want {
					t.Errorf("task after two worker restarts and a server crash = %s %q, %v; want failed with %q", got.Status, got.StatusMessage, err, want)
				}
				select {
				case <-called:
					t.Error("the task was resumed a third time")
				default:
				}
			})
		})
	}
}

// TestCloseLeavesResumable: a graceful shutdown does not fail a resumable task; the
// next server resumes it.
func TestCloseLeavesResumable(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			open := opener(e)
			started := make(chan int, 10)
			resume := func(tasks.Adopted) (tasks.Func, error) { return resumable(-1, 4, started), nil }
			s1 := open(t)
			m1 := tasks.NewManager(tasks.Options{Store: s1, Resume: resume})
			created, _ := m1.Start(ctx, tasks.Requester{Owner: "local"}, time.Hour, resumable(2, 4, started))
			<-started
			waitLog(t, s1, created.ID, "step 2\n")
			if err := m1.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if got, _ := s1.Get(ctx, created.ID); got.Status != tasks.Working || got.StatusMessage != tasks.ClosedMessage {
				t.Errorf("after Close: %s %q, want working with ClosedMessage", got.Status, got.StatusMessage)
			}
			s1.Close()
			s2 := open(t)
			defer s2.Close()
			m2 := tasks.NewManager(tasks.Options{Store: s2, Resume: resume})
			defer m2.Close(ctx)
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			got, err := m2.Wait(wctx, "local", created.ID)
			if err != nil || got.Status != tasks.Completed || string(got.Result) != `{"steps":4,"resumes":1}` {
				t.Errorf("after a restart: %s %q %s, %v; want completed, resumed once", got.Status, got.StatusMessage, got.Result, err)
			}
		})
	}
}

// waitLog waits until task id's log ends with suffix.
func waitLog(t *testing.T, s tasks.Journal, id, suffix string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if p, err := s.ReadLog(context.Background(), id, 0, 1<<20); err == nil && strings.HasSuffix(string(p.Text), suffix) {
			return
		}
	}
	t.Fatalf("task %s's log never ended with %q", id, suffix)
}

// opener makes a new, empty store of e and returns how to open an instance of it,
// which the caller closes (or crashes).
func opener(e engine) func(t *testing.T) *sqlstore.Store {
	var op func(testing.TB) (*sqlstore.Store, error)
	return func(t *testing.T) *sqlstore.Store {
		t.Helper()
		if op == nil {
			op = e.store(t)
		}
		s, err := op(t)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}
