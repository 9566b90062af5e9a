package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// Open opens a new, empty store for t, closed when t ends. For a tasks.Shared store,
// another opens one more instance of the same store (closed when t ends too); it is
// nil for a store that one process uses alone.
type Open func(t *testing.T) (s tasks.Store, another func() tasks.Store)

// Nonces is the optional single-use nonce set of a store (host.Nonces).
type Nonces interface {
	UseNonce(ctx context.Context, nonce string, expires time.Time) (bool, error)
}

// Run runs the contract on the stores open makes, each subtest on a new store.
func Run(t *testing.T, open Open) {
	t.Run("RoundTrip", func(t *testing.T) { roundTrip(t, open) })
	t.Run("List", func(t *testing.T) { list(t, open) })
	t.Run("Expiry", func(t *testing.T) { expiry(t, open) })
	t.Run("PurgeBatches", func(t *testing.T) { purgeBatches(t, open) })
	t.Run("ManagerBounds", func(t *testing.T) { managerBounds(t, open) })
	t.Run("ManagerCancel", func(t *testing.T) { managerCancel(t, open) })
	t.Run("ManagerOwners", func(t *testing.T) { managerOwners(t, open) })
	t.Run("Shared", func(t *testing.T) {
		s, another := open(t)
		if _, ok := s.(tasks.Shared); !ok || another == nil {
			t.Skip("not a tasks.Shared store")
		}
		t.Run("UpdateContention", func(t *testing.T) { updateContention(t, open) })
		t.Run("InputsAndSignals", func(t *testing.T) { inputsAndSignals(t, open) })
		t.Run("AcrossInstances", func(t *testing.T) { acrossInstances(t, open) })
		t.Run("Nonces", func(t *testing.T) { nonces(t, open) })
		t.Run("Wake", func(t *testing.T) { wake(t, open) })
		t.Run("CancelDelay", func(t *testing.T) { cancelDelay(t, open) })
	})
}

// Task is a task of owner created at created, with a TTL of a minute.
func Task(id, owner string, created time.Time, status tasks.Status) tasks.Task {
	return tasks.Task{ID: id, Owner: owner, Status: status, CreatedAt: created, LastUpdatedAt: created,
		TTL: time.Minute, PollInterval: time.Second}
}

func runner(s tasks.Store) string {
	if sh, ok := s.(tasks.Shared); ok {
		return sh.Instance()
	}
	return ""
}

func manager(t *testing.T, opts tasks.Options) *tasks.Manager {
	m := tasks.NewManager(opts)
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

func roundTrip(t *testing.T, open Open) {
	ctx := context.Background()
	s, _ := open(t)
	now := time.Now().UTC()
	done := Task("done", "local", now, tasks.Completed)
	done.FinishedAt = now
	done.Result = json.RawMessage(`{"content":[{"type":"text","text":"<b>&\u00e9</b>"}],  "x":1}`)
	failed := Task("failed", "local", now.Add(time.Millisecond), tasks.Failed)
	failed.FinishedAt = now
	failed.Error = &tasks.Error{Code: -32603, Message: "boom", Data: json.RawMessage(`{"why":"x"}`)}
	running := Task("running", "local", now.Add(2*time.Millisecond), tasks.Working)
	running.Runner = runner(s)
	waiting := Task("waiting", "session:abc", now.Add(3*time.Millisecond), tasks.InputRequired)
	waiting.Runner, waiting.StatusMessage = runner(s), "waiting for input"
	for _, x := range []tasks.Task{done, failed, running, waiting} {
		if err := s.Put(ctx, x); err != nil {
			t.Fatalf("Put(%s) = %v", x.ID, err)
		}
	}
	if st, err := s.Stats(ctx); err != nil || st.Tasks != 4 || st.Bytes != tasks.Size(done)+tasks.Size(failed) {
		t.Errorf("Stats() = %+v, %v; want 4 tasks of %d bytes", st, err, tasks.Size(done)+tasks.Size(failed))
	}
	for _, want := range []tasks.Task{done, failed, running, waiting} {
		got, err := s.Get(ctx, want.ID)
		if err != nil {
			t.Errorf("Get(%s) = %v", want.ID, err)
			continue
		}
		if got.Status != want.Status || got.StatusMessage != want.StatusMessage || got.Owner != want.Owner ||
			string(got.Result) != string(want.Result) || !got.CreatedAt.Equal(want.CreatedAt) ||
			!got.FinishedAt.Equal(want.FinishedAt) || got.TTL != want.TTL || got.PollInterval != want.PollInterval ||
			got.Runner != want.Runner || (got.Error == nil) != (want.Error == nil) {
			t.Errorf("Get(%s) = %+v, want %+v", want.ID, got, want)
		}
		if want.Error != nil && got.Error != nil && (got.Error.Code != want.Error.Code || got.Error.Message != want.Error.Message ||
			string(got.Error.Data) != string(want.Error.Data)) {
			t.Errorf("Get(%s).Error = %+v, want %+v", want.ID, got.Error, want.Error)
		}
	}
	// Replacing a task changes it, and Stats follows.
	running.Status, running.Result, running.FinishedAt = tasks.Completed, json.RawMessage(`{"n":12345}`), now
	if err := s.Put(ctx, running); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, "running"); got.Status != tasks.Completed || string(got.Result) != `{"n":12345}` {
		t.Errorf("Get after a replace = %s %s, want completed {\"n\":12345}", got.Status, got.Result)
	}
	if st, _ := s.Stats(ctx); st.Tasks != 4 || st.Bytes != tasks.Size(done)+tasks.Size(failed)+tasks.Size(running) {
		t.Errorf("Stats() after a replace = %+v", st)
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("Get(nope) = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "nope"); err != nil {
		t.Errorf("Delete(nope) = %v, want nil", err)
	}
}

func list(t *testing.T, open Open) {
	ctx := context.Background()
	s, _ := open(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Put out of order; e and f share a creation time and are ordered by ID.
	for _, i := range []int{3, 0, 6, 1, 5, 2, 4} {
		created := base.Add(time.Duration(i) * time.Second)
		if i == 5 {
			created = base.Add(4 * time.Second)
		}
		x := Task(string(rune('a'+i)), "me", created, tasks.Completed)
		x.FinishedAt = x.CreatedAt
		if err := s.Put(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	other := Task("other", "you", base, tasks.Working)
	other.Runner = runner(s)
	s.Put(ctx, other)
	var ids []string
	after := ""
	for pages := 0; pages < 10; pages++ {
		page, err := s.List(ctx, "me", after, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, x := range page {
			ids = append(ids, x.ID)
		}
		after = page[len(page)-1].ID
	}
	if strings.Join(ids, "") != "abcdefg" {
		t.Errorf("listed %v, want a..g in creation order, ties by ID", ids)
	}
	if page, err := s.List(ctx, "you", "", 10); err != nil || len(page) != 1 || page[0].ID != "other" {
		t.Errorf("List(you) = %v, %v; want only its own task", page, err)
	}
	if page, err := s.List(ctx, "nobody", "", 10); err != nil || len(page) != 0 {
		t.Errorf("List(nobody) = %v, %v; want none", page, err)
	}
	for _, cursor := range []string{"a", "missing"} {
		if _, err := s.List(ctx, "you", cursor, 3); !errors.Is(err, tasks.ErrBadCursor) {
			t.Errorf("List(you, after %q) = %v, want ErrBadCursor", cursor, err)
		}
	}
}

func expiry(t *testing.T, open Open) {
	ctx := context.Background()
	s, _ := open(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 7 {
		x := Task(string(rune('a'+i)), "me", base.Add(time.Duration(i)*time.Second), tasks.Completed)
		x.FinishedAt = x.CreatedAt
		s.Put(ctx, x)
	}
	late := Task("late", "me", base, tasks.Completed) // finished after its TTL: kept ResultGrace more
	late.FinishedAt = base.Add(2 * time.Minute)
	s.Put(ctx, late)
	working := Task("working", "me", base, tasks.Working)
	working.Runner = runner(s)
	s.Put(ctx, working)
	// TTL is a minute: at base+61.5s, a (t=0) and b (t=1s) have expired; the
	// working task never does.
	expired, err := s.Expired(ctx, base.Add(61500*time.Millisecond))
	slices.Sort(expired)
	if err != nil || strings.Join(expired, ",") != "a,b" {
		t.Errorf("Expired() = %v, %v; want [a b]", expired, err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Stats(ctx); st.Tasks != 8 {
		t.Errorf("Stats() after a delete = %+v, want 8 tasks", st)
	}
	expired, _ = s.Expired(ctx, base.Add(2*time.Minute+30*time.Second))
	if len(expired) != 6 || slices.Contains(expired, "late") {
		t.Errorf("Expired(2m30s later) = %v, want the 6 finished in time, not late (grace) nor working", expired)
	}
	expired, _ = s.Expired(ctx, base.Add(24*time.Hour))
	if len(expired) != 7 || slices.Contains(expired, "working") {
		t.Errorf("Expired(a day later) = %v, want the 7 finished tasks, not the working one", expired)
	}
	if n, err := s.Purge(ctx, base.Add(24*time.Hour), 4); err != nil || n != 4 {
		t.Errorf("Purge(limit 4) = %d, %v; want 4", n, err)
	}
	if n, err := s.Purge(ctx, base.Add(24*time.Hour), 100); err != nil || n != 3 {
		t.Errorf("Purge(rest) = %d, %v; want 3", n, err)
	}
	if st, _ := s.Stats(ctx); st.Tasks != 1 || st.Bytes != 0 {
		t.Errorf("Stats() after the purges = %+v, want the working task", st)
	}
}

// purgeBatches purges 1,100 expired tasks through a Manager (batches of 1,000, one
// commit each) and leaves the unexpired and the unfinished ones.
func purgeBatches(t *testing.T, open Open) {
	ctx := context.Background()
	s, _ := open(t)
	const n = 1100
	base := time.Now().UTC().Add(-time.Hour)
	put := func(from, to int, status tasks.Status, created time.Time) {
		var wg sync.WaitGroup
		for w := range 16 { // concurrent Puts share commits: a quicker setup
			wg.Go(func() {
				for i := from + w; i < to; i += 16 {
					x := Task(fmt.Sprintf("t%05d", i), fmt.Sprintf("owner%d", i%7), created, status)
					x.FinishedAt = created
					x.Result = json.RawMessage(`{"content":[]}`)
					x.Runner = runner(s)
					if err := s.Put(ctx, x); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
	}
	setup := time.Now()
	put(0, n, tasks.Completed, base)          // expired an hour ago (ttl 1m)
	put(n, n+10, tasks.Completed, time.Now()) // not yet
	put(n+10, n+20, tasks.Working, base)      // never while unfinished
	t.Logf("stored %d tasks in %v", n+20, time.Since(setup))
	m := manager(t, tasks.Options{Store: s, SweepEvery: time.Hour})
	start := time.Now()
	got := m.Purge(ctx, time.Now())
	t.Logf("purged %d expired tasks in %v", got, time.Since(start))
	if got != n {
		t.Errorf("Purge() = %d, want %d", got, n)
	}
	if st, _ := s.Stats(ctx); st.Tasks != 20 || st.Bytes != 20*int64(len(`{"content":[]}`)) {
		t.Errorf("Stats() after the purge = %+v, want 20 tasks", st)
	}
	if page, _ := s.List(ctx, "owner0", "", 10000); len(page) != 2 { // t01106, t01113
		t.Errorf("List(owner0) after the purge = %d tasks, want 2 (its index entries purged too)", len(page))
	}
}

func result(s string) tasks.Func {
	return func(context.Context, *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		return json.RawMessage(s), "", nil
	}
}

func managerBounds(t *testing.T, open Open) {
	ctx := context.Background()
	s, _ := open(t)
	m := manager(t, tasks.Options{Store: s, MaxResultBytes: 10, MaxStoredTasks: 3})
	local := tasks.Requester{Owner: "local"}
	small, err := m.Start(ctx, local, 0, result(`{"ok":1}`))
	if err != nil {
		t.Fatal(err)
	}
	big, err := m.Start(ctx, local, 0, result(`{"ok":"far too long"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Wait(ctx, "local", small.ID); got.Status != tasks.Completed || string(got.Result) != `{"ok":1}` {
		t.Errorf("small result: %s %s, want completed", got.Status, got.Result)
	}
	if got, _ := m.Wait(ctx, "local", big.ID); got.Status != tasks.Failed || !strings.Contains(got.StatusMessage, "max_result_bytes") {
		t.Errorf("big result: %s %q, want failed naming max_result_bytes", got.Status, got.StatusMessage)
	}
	if _, err := m.Start(ctx, local, 0, result(`{}`)); err != nil {
		t.Errorf("third task = %v", err)
	}
	if _, err := m.Start(ctx, local, 0, result(`{}`)); !errors.Is(err, tasks.ErrStoreFull) {
		t.Errorf("Start with the store full = %v, want ErrStoreFull", err)
	}
}

func managerCancel(t *testing.T, open Open) {
	ctx := context.Background()
	s, _ := open(t)
	m := manager(t, tasks.Options{Store: s})
	stopped := make(chan struct{})
	x, err := m.Start(ctx, tasks.Requester{Owner: "local"}, 0, func(ctx context.Context, _ *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		<-ctx.Done()
		close(stopped)
		return json.RawMessage(`{"late":true}`), "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Cancel(ctx, "local", x.ID); err != nil || got.Status != tasks.Cancelled {
		t.Fatalf("Cancel = %s, %v; want cancelled", got.Status, err)
	}
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Cancel did not stop the work")
	}
	if got, _ := m.Wait(ctx, "local", x.ID); got.Status != tasks.Cancelled || got.Result != nil {
		t.Errorf("after the work returned: %s %s, want cancelled without a result", got.Status, got.Result)
	}
	if _, err := m.Cancel(ctx, "local", x.ID); !errors.Is(err, tasks.ErrTerminal) {
		t.Errorf("second Cancel = %v, want ErrTerminal", err)
	}
	if got, _ := s.Get(ctx, x.ID); got.Status != tasks.Cancelled {
		t.Errorf("stored status = %s, want cancelled", got.Status)
	}
}

func managerOwners(t *testing.T, open Open) {
	ctx := context.Background()
	s, _ := open(t)
	m := manager(t, tasks.Options{Store: s})
	asked := make(chan *tasks.Input, 1)
	x, err := m.Start(ctx, tasks.Requester{Owner: "alice"}, 0, func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		ans, err := h.Ask(ctx, "elicitation/create", json.RawMessage(`{}`), func(in *tasks.Input) { asked <- in })
		if err != nil {
			return nil, "", &tasks.Error{Code: -1, Message: err.Error()}
		}
		return ans, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	in := <-asked
	if _, err := m.Get(ctx, "bob", x.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("Get by another owner = %v, want ErrNotFound", err)
	}
	if _, err := m.Cancel(ctx, "bob", x.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("Cancel by another owner = %v, want ErrNotFound", err)
	}
	if m.Answer("bob", x.ID, in.Key, tasks.Reply{Result: json.RawMessage(`{"bob":1}`)}) {
		t.Error("Answer by another owner = true, want false")
	}
	if page, _, err := m.List(ctx, "bob", ""); err != nil || len(page) != 0 {
		t.Errorf("List(bob) = %d tasks, %v; want none", len(page), err)
	}
	if !m.Answer("alice", x.ID, in.Key, tasks.Reply{Result: json.RawMessage(`{"alice":1}`)}) {
		t.Error("Answer by the owner = false, want true")
	}
	if got, _ := m.Wait(ctx, "alice", x.ID); got.Status != tasks.Completed || string(got.Result) != `{"alice":1}` {
		t.Errorf("owner's task = %s %s, want completed with the owner's answer", got.Status, got.Result)
	}
}

// two opens a Shared store and a second instance of it.
func two(t *testing.T, open Open) (tasks.Shared, tasks.Shared) {
	s, another := open(t)
	return s.(tasks.Shared), another().(tasks.Shared)
}

// updateContention hammers one task from two instances and many goroutines: no
// read-modify-write is lost, and a writer that fails leaves the others' writes in.
func updateContention(t *testing.T, open Open) {
	ctx := context.Background()
	s1, s2 := two(t, open)
	x := Task("counter", "local", time.Now().UTC(), tasks.Working)
	x.Runner, x.StatusMessage = s1.Instance(), "0"
	if err := s1.Put(ctx, x); err != nil {
		t.Fatal(err)
	}
	const workers, perWorker = 8, 20
	refuse := errors.New("refused")
	var wg sync.WaitGroup
	for w := range workers {
		s := []tasks.Shared{s1, s2}[w%2]
		wg.Go(func() {
			for range perWorker {
				if _, err := s.Update(ctx, "counter", func(t *tasks.Task) error {
					var n int
					fmt.Sscan(t.StatusMessage, &n)
					t.StatusMessage = fmt.Sprint(n + 1)
					return nil
				}); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Update(ctx, "counter", func(t *tasks.Task) error {
					t.StatusMessage = "lost"
					return refuse
				}); err != refuse {
					t.Errorf("Update returning an error = %v, want it unchanged", err)
				}
				if _, err := s.Update(ctx, "missing", func(*tasks.Task) error { return nil }); !errors.Is(err, tasks.ErrNotFound) {
					t.Errorf("Update(missing) = %v, want ErrNotFound", err)
				}
			}
		})
	}
	wg.Wait()
	if got, err := s2.Get(ctx, "counter"); err != nil || got.StatusMessage != fmt.Sprint(workers*perWorker) {
		t.Errorf("counter after %d updates from two instances = %q, %v", workers*perWorker, got.StatusMessage, err)
	}
}

func inputsAndSignals(t *testing.T, open Open) {
	ctx := context.Background()
	s1, s2 := two(t, open)
	x := Task("asker", "local", time.Now().UTC(), tasks.InputRequired)
	x.Runner = s1.Instance()
	if err := s1.Put(ctx, x); err != nil {
		t.Fatal(err)
	}
	in := []tasks.PendingInput{
		{Key: "input-2", Method: "sampling/createMessage", Params: json.RawMessage(`{"b":2}`)},
		{Key: "input-1", Method: "elicitation/create", Params: json.RawMessage(`{"a":1}`)},
	}
	if err := s1.SetInputs(ctx, "asker", in); err != nil {
		t.Fatal(err)
	}
	got, err := s2.Inputs(ctx, "asker")
	if err != nil || len(got) != 2 || got[0].Key != "input-2" || got[1].Key != "input-1" || string(got[1].Params) != `{"a":1}` {
		t.Errorf("Inputs from the other instance = %+v, %v; want both in the order asked", got, err)
	}
	answer := tasks.Signal{Runner: s1.Instance(), Task: "asker", Kind: tasks.SignalAnswer, Key: "input-1", Result: json.RawMessage(`{"ok":1}`)}
	if ok, err := s2.Send(ctx, answer); !ok || err != nil {
		t.Errorf("Send(answer) = %v, %v; want true", ok, err)
	}
	if ok, err := s2.Send(ctx, answer); ok || err != nil {
		t.Errorf("Send(the same answer again) = %v, %v; want false: the first answer wins", ok, err)
	}
	if got, _ := s1.Inputs(ctx, "asker"); len(got) != 1 || got[0].Key != "input-2" {
		t.Errorf("Inputs after the answer = %+v, want only input-2", got)
	}
	if ok, err := s2.Send(ctx, tasks.Signal{Runner: s1.Instance(), Task: "asker", Kind: tasks.SignalCancel}); !ok || err != nil {
		t.Errorf("Send(cancel) = %v, %v", ok, err)
	}
	if sigs, err := s2.Receive(ctx); err != nil || len(sigs) != 0 {
		t.Errorf("Receive on the sender = %+v, %v; want none: signals go to their runner", sigs, err)
	}
	sigs, err := s1.Receive(ctx)
	if err != nil || len(sigs) != 2 {
		t.Fatalf("Receive = %+v, %v; want the answer and the cancel", sigs, err)
	}
	kinds := []tasks.SignalKind{sigs[0].Kind, sigs[1].Kind}
	if !slices.Contains(kinds, tasks.SignalAnswer) || !slices.Contains(kinds, tasks.SignalCancel) {
		t.Errorf("signals = %+v", sigs)
	}
	for _, sg := range sigs {
		if sg.Kind == tasks.SignalAnswer && (sg.Key != "input-1" || string(sg.Result) != `{"ok":1}` || sg.Task != "asker") {
			t.Errorf("answer received = %+v, want it as sent", sg)
		}
	}
	if sigs, _ := s1.Receive(ctx); len(sigs) != 0 {
		t.Errorf("second Receive = %+v, want none: signals are taken once", sigs)
	}
	x.Status, x.FinishedAt = tasks.Completed, time.Now().UTC()
	if err := s1.Put(ctx, x); err != nil {
		t.Fatal(err)
	}
	if got, _ := s2.Inputs(ctx, "asker"); len(got) != 0 {
		t.Errorf("Inputs of a terminal task = %+v, want none", got)
	}
}

// acrossInstances: a task one instance runs is seen, waited for, answered and
// cancelled through the other, and the first answer wins.
func acrossInstances(t *testing.T, open Open) {
	ctx := context.Background()
	s1, s2 := two(t, open)
	m1, m2 := manager(t, tasks.Options{Store: s1}), manager(t, tasks.Options{Store: s2})
	local := tasks.Requester{Owner: "local"}
	asker, _ := m1.Start(ctx, local, 0, func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		ans, err := h.Ask(ctx, "elicitation/create", json.RawMessage(`{"message":"name?"}`), nil)
		if err != nil {
			return nil, "", &tasks.Error{Code: -1, Message: err.Error()}
		}
		return ans, "", nil
	})
	var inputs []*tasks.Input
	for deadline := time.Now().Add(10 * time.Second); len(inputs) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var x tasks.Task
		x, inputs, _, _ = m2.Watch(ctx, "local", asker.ID)
		if x.Status != tasks.InputRequired {
			inputs = nil
		}
	}
	if len(inputs) != 1 || inputs[0].Method != "elicitation/create" {
		t.Fatalf("inputs seen by the other instance = %v, want the elicitation", inputs)
	}
	if !m2.Answer("local", asker.ID, inputs[0].Key, tasks.Reply{Result: json.RawMessage(`{"action":"accept"}`)}) {
		t.Error("Answer through the other instance = false, want true")
	}
	if m2.Answer("local", asker.ID, inputs[0].Key, tasks.Reply{Result: json.RawMessage(`{"action":"decline"}`)}) {
		t.Error("second Answer = true, want false: the first answer wins")
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if got, err := m2.Wait(wctx, "local", asker.ID); err != nil || got.Status != tasks.Completed || string(got.Result) != `{"action":"accept"}` {
		t.Errorf("Wait through the other instance = %s %s, %v; want completed with the answer", got.Status, got.Result, err)
	}

	stopped := make(chan struct{})
	blocked, _ := m1.Start(ctx, local, 0, func(ctx context.Context, _ *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		<-ctx.Done()
		close(stopped)
		return nil, "", nil
	})
	if got, err := m2.Cancel(ctx, "local", blocked.ID); err != nil || got.Status != tasks.Cancelled {
		t.Fatalf("Cancel through the other instance = %s, %v", got.Status, err)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancel did not stop the work on the running instance")
	}
	if got, _ := m1.Get(ctx, "local", blocked.ID); got.Status != tasks.Cancelled {
		t.Errorf("task after cancel = %s, want it to stay cancelled", got.Status)
	}
	if page, _, _ := m2.List(ctx, "local", ""); len(page) != 2 {
		t.Errorf("List through the other instance = %d tasks, want 2", len(page))
	}
}

func nonces(t *testing.T, open Open) {
	ctx := context.Background()
	s1, s2 := two(t, open)
	n1, ok1 := s1.(Nonces)
	n2, ok2 := s2.(Nonces)
	if !ok1 || !ok2 {
		t.Skip("no UseNonce")
	}
	exp := time.Now().Add(time.Minute)
	if ok, err := n1.UseNonce(ctx, "n1", exp); !ok || err != nil {
		t.Errorf("first UseNonce = %v, %v; want true", ok, err)
	}
	if ok, err := n2.UseNonce(ctx, "n1", exp); ok || err != nil {
		t.Errorf("UseNonce again on another instance = %v, %v; want false", ok, err)
	}
	if ok, err := n2.UseNonce(ctx, "n2", exp); !ok || err != nil {
		t.Errorf("UseNonce(n2) = %v, %v; want true", ok, err)
	}
}

// wake: a Waker's channel gets a value soon after another instance sends it a
// signal, well before the WakePoll fallback.
func wake(t *testing.T, open Open) {
	ctx := context.Background()
	s1, s2 := two(t, open)
	w, ok := s1.(tasks.Waker)
	if !ok || w.Wake() == nil {
		t.Skip("not a Waker: the Manager polls every SignalPoll")
	}
	for range 3 { // drain what registering may have sent
		select {
		case <-w.Wake():
		default:
		}
	}
	start := time.Now()
	if _, err := s2.Send(ctx, tasks.Signal{Runner: s1.Instance(), Task: "x", Kind: tasks.SignalCancel}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Wake():
		t.Logf("woken %v after the Send began", time.Since(start))
	case <-time.After(tasks.WakePoll / 2):
		t.Fatalf("no wake-up within %v of a Send", tasks.WakePoll/2)
	}
	if sigs, _ := s1.Receive(ctx); len(sigs) != 1 {
		t.Errorf("Receive after the wake-up = %+v, want the cancel", sigs)
	}
}

// cancelDelay measures, n times, how long a cancel sent through one instance takes
// to end the work on the other: from the start of Manager.Cancel to the work's
// context ending, each cancel at a random moment. It logs p50 and p95.
func cancelDelay(t *testing.T, open Open) {
	ctx := context.Background()
	s1, s2 := two(t, open)
	m1, m2 := manager(t, tasks.Options{Store: s1}), manager(t, tasks.Options{Store: s2})
	const n = 40
	var delays []time.Duration
	for range n {
		stopped := make(chan time.Time, 1)
		running := make(chan struct{})
		x, err := m1.Start(ctx, tasks.Requester{Owner: "local"}, 0, func(ctx context.Context, _ *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
			close(running)
			<-ctx.Done()
			stopped <- time.Now()
			return nil, "", nil
		})
		if err != nil {
			t.Fatal(err)
		}
		<-running
		// At a random moment of the receiver's poll period: a loop that cancels
		// right after the last cancel was received would wait a whole period each
		// time.
		time.Sleep(rand.N(tasks.SignalPoll))
		start := time.Now()
		if _, err := m2.Cancel(ctx, "local", x.ID); err != nil {
			t.Fatal(err)
		}
		select {
		case at := <-stopped:
			delays = append(delays, at.Sub(start))
		case <-time.After(10 * time.Second):
			t.Fatal("the cancel did not reach the running instance")
		}
	}
	slices.Sort(delays)
	p50, p95 := delays[n/2], delays[n*95/100]
	t.Logf("cross-instance cancel delay over %d cancels: p50 %v, p95 %v, max %v", n, p50, p95, delays[n-1])
	limit := 3 * tasks.SignalPoll // polling: at most one SignalPoll, plus the commits
	if w, ok := s1.(tasks.Waker); ok && w.Wake() != nil {
		limit = tasks.WakePoll / 4 // woken: far below the fallback poll
	}
	if p50 > limit {
		t.Errorf("cancel delay p50 = %v, want under %v", p50, limit)
	}
}
