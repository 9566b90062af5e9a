package tasks_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

func newManager(t *testing.T, opts tasks.Options) *tasks.Manager {
	t.Helper()
	m := tasks.NewManager(opts)
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

func result(s string) tasks.Func {
	return func(context.Context, *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		return json.RawMessage(s), "", nil
	}
}

// block runs until its task is cancelled, then returns a result that must be ignored.
func block(ctx context.Context, _ *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
	<-ctx.Done()
	return json.RawMessage(`{"late":true}`), "", nil
}

func TestTransitions(t *testing.T) {
	all := []tasks.Status{tasks.Working, tasks.InputRequired, tasks.Completed, tasks.Failed, tasks.Cancelled}
	legal := map[[2]tasks.Status]bool{
		{tasks.Working, tasks.InputRequired}: true, {tasks.Working, tasks.Completed}: true,
		{tasks.Working, tasks.Failed}: true, {tasks.Working, tasks.Cancelled}: true,
		{tasks.InputRequired, tasks.Working}: true, {tasks.InputRequired, tasks.Completed}: true,
		{tasks.InputRequired, tasks.Failed}: true, {tasks.InputRequired, tasks.Cancelled}: true,
	}
	for _, from := range all {
		for _, to := range all {
			if got := from.CanMove(to); got != legal[[2]tasks.Status{from, to}] {
				t.Errorf("%s.CanMove(%s) = %v, want %v", from, to, got, !got)
			}
		}
	}
}

func TestOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		f       tasks.Func
		status  tasks.Status
		message string
	}{
		{"completed", result(`{"ok":1}`), tasks.Completed, ""},
		{"failed by result", func(context.Context, *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
			return json.RawMessage(`{"isError":true}`), "tool said no", nil
		}, tasks.Failed, "tool said no"},
		{"failed by error", func(context.Context, *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
			return nil, "", &tasks.Error{Code: -32603, Message: "boom"}
		}, tasks.Failed, "boom"},
	}
	m := newManager(t, tasks.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			created, err := m.Start(context.Background(), tasks.Requester{Owner: "me"}, 0, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Wait(context.Background(), "me", created.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.status || got.StatusMessage != tt.message {
				t.Errorf("Wait() = %s %q, want %s %q", got.Status, got.StatusMessage, tt.status, tt.message)
			}
			if got.FinishedAt.IsZero() || got.LastUpdatedAt.Before(got.CreatedAt) {
				t.Errorf("timestamps: created %v updated %v finished %v", got.CreatedAt, got.LastUpdatedAt, got.FinishedAt)
			}
		})
	}
}

func TestTaskOutlivesRequest(t *testing.T) {
	m := newManager(t, tasks.Options{})
	reqCtx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	created, err := m.Start(reqCtx, tasks.Requester{Owner: "me"}, 0, func(ctx context.Context, _ *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		close(started)
		time.Sleep(20 * time.Millisecond)
		if ctx.Err() != nil {
			return nil, "", &tasks.Error{Code: -1, Message: "the request's end cancelled the task"}
		}
		return json.RawMessage(`{}`), "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cancel() // the request that created the task is answered and gone
	got, _ := m.Wait(context.Background(), "me", created.ID)
	if got.Status != tasks.Completed {
		t.Errorf("status = %s (%s), want completed", got.Status, got.StatusMessage)
	}
}

func TestCancel(t *testing.T) {
	m := newManager(t, tasks.Options{})
	created, _ := m.Start(context.Background(), tasks.Requester{Owner: "me"}, 0, block)
	got, err := m.Cancel(context.Background(), "me", created.ID)
	if err != nil || got.Status != tasks.Cancelled {
		t.Fatalf("Cancel() = %v, %v", got.Status, err)
	}
	// The work returned a result after the cancel: the task stays cancelled.
	got, _ = m.Wait(context.Background(), "me", created.ID)
	if got.Status != tasks.Cancelled || got.Result != nil {
		t.Errorf("after the work returned: %s %s, want cancelled without result", got.Status, got.Result)
	}
	if _, err := m.Cancel(context.Background(), "me", created.ID); !errors.Is(err, tasks.ErrTerminal) {
		t.Errorf("Cancel(cancelled) = %v, want ErrTerminal", err)
	}
}

func TestOwnersAreIsolated(t *testing.T) {
	m := newManager(t, tasks.Options{})
	created, _ := m.Start(context.Background(), tasks.Requester{Owner: "alice"}, 0, block)
	ctx := context.Background()
	if _, err := m.Get(ctx, "bob", created.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("Get(bob) = %v, want ErrNotFound", err)
	}
	if _, err := m.Cancel(ctx, "bob", created.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("Cancel(bob) = %v, want ErrNotFound", err)
	}
	if _, err := m.Wait(ctx, "bob", created.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("Wait(bob) = %v, want ErrNotFound", err)
	}
	if page, _, _ := m.List(ctx, "bob", ""); len(page) != 0 {
		t.Errorf("List(bob) = %d tasks, want none", len(page))
	}
	if got, _ := m.Get(ctx, "alice", created.ID); got.Status != tasks.Working {
		t.Errorf("alice's task = %s, want it untouched", got.Status)
	}
	// A cursor from alice's listing means nothing to bob.
	for range 60 {
		m.Start(ctx, tasks.Requester{Owner: "alice"}, 0, result(`{}`))
	}
	_, next, _ := m.List(ctx, "alice", "")
	if _, _, err := m.List(ctx, "bob", next); !errors.Is(err, tasks.ErrBadCursor) {
		t.Errorf("List(bob, alice's cursor) = %v, want ErrBadCursor", err)
	}
}

func TestTTL(t *testing.T) {
	m := newManager(t, tasks.Options{DefaultTTL: time.Minute, MaxTTL: time.Hour})
	tests := []struct {
		ask, want time.Duration
	}{
		{0, time.Minute},
		{5 * time.Second, 5 * time.Second},
		{48 * time.Hour, time.Hour},
	}
	for _, tt := range tests {
		created, _ := m.Start(context.Background(), tasks.Requester{Owner: "me"}, tt.ask, result(`{}`))
		if created.TTL != tt.want {
			t.Errorf("Start(ttl %v).TTL = %v, want %v", tt.ask, created.TTL, tt.want)
		}
	}
}

func TestExpiryNeverDropsUnfinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := tasks.NewManager(tasks.Options{SweepEvery: time.Second})
		defer m.Close(context.Background())
		ctx := context.Background()
		release := make(chan struct{})
		done, _ := m.Start(ctx, tasks.Requester{Owner: "me"}, 2*time.Second, result(`{"n":1}`))
		slow, _ := m.Start(ctx, tasks.Requester{Owner: "me"}, 2*time.Second, func(context.Context, *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
			<-release
			return json.RawMessage(`{"n":2}`), "", nil
		})
		waited := make(chan tasks.Task)
		go func() {
			t, _ := m.Wait(ctx, "me", slow.ID)
			waited <- t
		}()
		time.Sleep(10 * time.Second) // both TTLs are long gone; several sweeps ran
		synctest.Wait()
		if _, err := m.Get(ctx, "me", done.ID); !errors.Is(err, tasks.ErrNotFound) {
			t.Errorf("finished task after its TTL: %v, want purged", err)
		}
		if got, err := m.Get(ctx, "me", slow.ID); err != nil || got.Status != tasks.Working {
			t.Fatalf("unfinished task after its TTL = %v, %v, want still working", got.Status, err)
		}
		close(release)
		if got := <-waited; got.Status != tasks.Completed || string(got.Result) != `{"n":2}` {
			t.Errorf("waiter got %s %s, want the real result", got.Status, got.Result)
		}
		// Finished after its TTL: kept for ResultGrace, then purged.
		time.Sleep(tasks.ResultGrace / 2)
		if _, err := m.Get(ctx, "me", slow.ID); err != nil {
			t.Errorf("within the grace: %v", err)
		}
		time.Sleep(tasks.ResultGrace)
		if _, err := m.Get(ctx, "me", slow.ID); !errors.Is(err, tasks.ErrNotFound) {
			t.Errorf("after the grace: %v, want purged", err)
		}
	})
}

func TestPagination(t *testing.T) {
	m := newManager(t, tasks.Options{MaxPerOwner: 1000})
	ctx := context.Background()
	want := map[string]bool{}
	for range 250 {
		created, err := m.Start(ctx, tasks.Requester{Owner: "me"}, 0, result(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		want[created.ID] = true
	}
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		page, next, err := m.List(ctx, "me", cursor)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, task := range page {
			if seen[task.ID] {
				t.Errorf("task %s listed twice", task.ID)
			}
			seen[task.ID] = true
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if pages != 5 || len(seen) != 250 {
		t.Errorf("listed %d tasks in %d pages, want 250 in 5", len(seen), pages)
	}
	if _, _, err := m.List(ctx, "me", "!!not-a-cursor"); !errors.Is(err, tasks.ErrBadCursor) {
		t.Errorf("List(bad cursor) = %v, want ErrBadCursor", err)
	}
}

func TestPerOwnerLimit(t *testing.T) {
	m := newManager(t, tasks.Options{MaxPerOwner: 3})
	ctx := context.Background()
	var ids []string
	for range 3 {
		created, err := m.Start(ctx, tasks.Requester{Owner: "me"}, 0, block)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, created.ID)
	}
	if _, err := m.Start(ctx, tasks.Requester{Owner: "me"}, 0, block); !errors.Is(err, tasks.ErrTooMany) {
		t.Fatalf("4th Start = %v, want ErrTooMany", err)
	}
	if _, err := m.Start(ctx, tasks.Requester{Owner: "other"}, 0, block); err != nil {
		t.Errorf("another owner's Start = %v, want nil", err)
	}
	m.Cancel(ctx, "me", ids[0])
	m.Wait(ctx, "me", ids[0])
	if _, err := m.Start(ctx, tasks.Requester{Owner: "me"}, 0, block); err != nil {
		t.Errorf("Start after a cancel = %v, want room again", err)
	}
}

// TestSharedOwnerLimits: requesters sharing one owner (anonymous clients) each have
// their own MaxPerOwner, and all of them together MaxShared; a task of one is still
// visible to the others (the ID is the capability).
func TestSharedOwnerLimits(t *testing.T) {
	m := newManager(t, tasks.Options{MaxPerOwner: 2, MaxShared: 3})
	ctx := context.Background()
	a := tasks.Requester{Owner: "anonymous", Source: "127.0.0.2/32"}
	b := tasks.Requester{Owner: "anonymous", Source: "127.0.0.3/32"}
	c := tasks.Requester{Owner: "anonymous", Source: "127.0.0.4/32"}
	steps := []struct {
		who  tasks.Requester
		want error
	}{
		{a, nil}, {a, nil},
		{a, tasks.ErrTooMany}, // a's own share is used up
		{b, nil},              // b is not blocked by a
		{c, tasks.ErrTooMany}, // all anonymous together: 3
		{tasks.Requester{Owner: "user:x"}, nil},
	}
	var first tasks.Task
	for i, st := range steps {
		created, err := m.Start(ctx, st.who, 0, block)
		if !errors.Is(err, st.want) {
			t.Fatalf("step %d: Start(%+v) = %v, want %v", i, st.who, err, st.want)
		}
		if i == 0 {
			first = created
		}
	}
	if _, err := m.Get(ctx, "anonymous", first.ID); err != nil {
		t.Errorf("Get(a's task) by another anonymous requester = %v, want it (the ID is the capability)", err)
	}
	m.Cancel(ctx, "anonymous", first.ID)
	if _, err := m.Start(ctx, c, 0, block); err != nil {
		t.Errorf("Start(c) after a cancel = %v, want room again", err)
	}
}

func TestIDs(t *testing.T) {
	m := newManager(t, tasks.Options{MaxPerOwner: 2000})
	seen := map[string]bool{}
	for range 1000 {
		created, _ := m.Start(context.Background(), tasks.Requester{Owner: "me"}, 0, result(`{}`))
		raw, err := base64.RawURLEncoding.DecodeString(created.ID)
		if err != nil || len(raw)*8 < 128 {
			t.Fatalf("ID %q: %d bits, %v", created.ID, len(raw)*8, err)
		}
		if seen[created.ID] {
			t.Fatalf("ID %q issued twice", created.ID)
		}
		seen[created.ID] = true
	}
}

func TestInputRequests(t *testing.T) {
	m := newManager(t, tasks.Options{})
	ctx := context.Background()
	asked := make(chan *tasks.Input, 2)
	created, _ := m.Start(ctx, tasks.Requester{Owner: "me"}, 0, func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		var wg sync.WaitGroup
		answers := make([]string, 2)
		for i := range 2 {
			wg.Go(func() {
				r, err := h.Ask(ctx, "elicitation/create", json.RawMessage(`{}`), func(in *tasks.Input) { asked <- in })
				if err == nil {
					answers[i] = string(r)
				}
			})
		}
		wg.Wait()
		slices.Sort(answers) // the goroutines ask in any order
		b, _ := json.Marshal(answers)
		return b, "", nil
	})
	first, second := <-asked, <-asked
	if first.Key == second.Key {
		t.Fatalf("two pending inputs share the key %q", first.Key)
	}
	if got, _ := m.Get(ctx, "me", created.ID); got.Status != tasks.InputRequired {
		t.Fatalf("status with inputs pending = %s, want input_required", got.Status)
	}
	if !m.Answer("me", created.ID, first.Key, tasks.Reply{Result: json.RawMessage(`"a"`)}) {
		t.Fatal("Answer(first) = false")
	}
	if m.Answer("me", created.ID, first.Key, tasks.Reply{Result: json.RawMessage(`"dup"`)}) {
		t.Error("a second answer to the same input was accepted")
	}
	if m.Answer("me", created.ID, "input-99", tasks.Reply{}) || m.Answer("bob", created.ID, second.Key, tasks.Reply{}) {
		t.Error("an unknown key or another owner's answer was accepted")
	}
	// One input still pending: still input_required.
	_, pending, _, _ := m.Watch(ctx, "me", created.ID)
	if got, _ := m.Get(ctx, "me", created.ID); got.Status != tasks.InputRequired || len(pending) != 1 {
		t.Fatalf("with one of two answered: %s, %d pending; want input_required, 1", got.Status, len(pending))
	}
	m.Answer("me", created.ID, second.Key, tasks.Reply{Result: json.RawMessage(`"b"`)})
	got, _ := m.Wait(ctx, "me", created.ID)
	if got.Status != tasks.Completed || string(got.Result) != `["\"a\"","\"b\""]` {
		t.Errorf("result = %s %s", got.Status, got.Result)
	}
}

func TestCancelReleasesAsk(t *testing.T) {
	m := newManager(t, tasks.Options{})
	ctx := context.Background()
	asked := make(chan struct{})
	created, _ := m.Start(ctx, tasks.Requester{Owner: "me"}, 0, func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		_, err := h.Ask(ctx, "elicitation/create", nil, func(*tasks.Input) { close(asked) })
		return nil, "", &tasks.Error{Code: -1, Message: err.Error()}
	})
	<-asked
	m.Cancel(ctx, "me", created.ID)
	if got, _ := m.Wait(ctx, "me", created.ID); got.Status != tasks.Cancelled {
		t.Errorf("status = %s, want cancelled", got.Status)
	}
}

func TestCloseStopsWork(t *testing.T) {
	m := tasks.NewManager(tasks.Options{})
	created, _ := m.Start(context.Background(), tasks.Requester{Owner: "me"}, 0, block)
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _ := m.Get(context.Background(), "me", created.ID)
	if !got.Status.Terminal() {
		t.Errorf("after Close: %s, want terminal", got.Status)
	}
	if _, err := m.Start(context.Background(), tasks.Requester{Owner: "me"}, 0, block); !errors.Is(err, tasks.ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
}

// TestExpiredNotServed: a finished task is gone at its ttl for every read, not at the
// next sweep.
func TestExpiredNotServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := tasks.NewMemoryStore()
		m := tasks.NewManager(tasks.Options{Store: store, SweepEvery: time.Hour})
		defer m.Close(context.Background())
		ctx := context.Background()
		done, _ := m.Start(ctx, tasks.Requester{Owner: "me"}, 2*time.Second, result(`{"n":1}`))
		synctest.Wait()
		time.Sleep(time.Second)
		if _, err := m.Get(ctx, "me", done.ID); err != nil {
			t.Fatalf("Get within the ttl = %v", err)
		}
		time.Sleep(1500 * time.Millisecond) // past the ttl; no sweep yet
		if _, err := store.Get(ctx, done.ID); err != nil {
			t.Fatalf("the store no longer holds the task (%v): the test needs it unswept", err)
		}
		reads := []struct {
			name string
			read func() error
		}{
			{"Get", func() error { _, err := m.Get(ctx, "me", done.ID); return err }},
			{"Watch", func() error { _, _, _, err := m.Watch(ctx, "me", done.ID); return err }},
			{"Wait", func() error { _, err := m.Wait(ctx, "me", done.ID); return err }},
			{"Cancel", func() error { _, err := m.Cancel(ctx, "me", done.ID); return err }},
		}
		for _, r := range reads {
			if err := r.read(); !errors.Is(err, tasks.ErrNotFound) {
				t.Errorf("%s after the ttl = %v, want %v", r.name, err, tasks.ErrNotFound)
			}
		}
		if page, _, err := m.List(ctx, "me", ""); err != nil || len(page) != 0 {
			t.Errorf("List after the ttl = %d tasks, %v, want none", len(page), err)
		}
	})
}

// TestFullStoreSweptFirst: a store full of expired tasks takes a new one at once.
func TestFullStoreSweptFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := tasks.NewManager(tasks.Options{MaxStoredTasks: 1, SweepEvery: time.Hour})
		defer m.Close(context.Background())
		ctx := context.Background()
		m.Start(ctx, tasks.Requester{Owner: "me"}, time.Second, result(`{}`))
		synctest.Wait()
		if _, err := m.Start(ctx, tasks.Requester{Owner: "me"}, 0, result(`{}`)); !errors.Is(err, tasks.ErrStoreFull) {
			t.Fatalf("Start with the store full = %v, want ErrStoreFull", err)
		}
		time.Sleep(2 * time.Second)
		if _, err := m.Start(ctx, tasks.Requester{Owner: "me"}, 0, result(`{}`)); err != nil {
			t.Errorf("Start with the store full of expired tasks = %v, want room", err)
		}
	})
}

// TestSweepInterval: with no SweepEvery, the sweep follows the ttls: a short default
// ttl is swept soon after it ends, not 30 s later.
func TestSweepInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := tasks.NewMemoryStore()
		m := tasks.NewManager(tasks.Options{Store: store, DefaultTTL: 4 * time.Second})
		defer m.Close(context.Background())
		ctx := context.Background()
		done, _ := m.Start(ctx, tasks.Requester{Owner: "me"}, 0, result(`{}`))
		time.Sleep(7 * time.Second)
		synctest.Wait()
		if _, err := store.Get(ctx, done.ID); !errors.Is(err, tasks.ErrNotFound) {
			t.Errorf("store.Get 3 s after a 4 s ttl = %v, want purged", err)
		}
	})
}

// putCounter is a MemoryStore that counts its Puts and can refuse them.
type putCounter struct {
	*tasks.MemoryStore
	mu     sync.Mutex
	puts   map[string]int
	refuse bool
}

func (s *putCounter) Put(ctx context.Context, t tasks.Task) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse {
		return errors.New("disk full")
	}
	s.puts[t.ID]++
	return s.MemoryStore.Put(ctx, t)
}

func (s *putCounter) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.puts[id]
}

// TestCreateWindow: with a window, a task whose work ends within it is stored once,
// finished; one that runs longer (and asks for input meanwhile) is stored at the end
// of the window and then as before; a store that refuses the task cancels its work.
func TestCreateWindow(t *testing.T) {
	ctx := context.Background()
	store := &putCounter{MemoryStore: tasks.NewMemoryStore(), puts: map[string]int{}}
	m := newManager(t, tasks.Options{Store: store, CreateWindow: time.Minute})

	fast, err := m.Start(ctx, tasks.Requester{Owner: "o"}, 0, result(`{"fast":1}`))
	if err != nil || fast.Status != tasks.Working {
		t.Fatalf("Start(fast) = %+v, %v; want the created task, working", fast, err)
	}
	got, _ := m.Get(ctx, "o", fast.ID)
	if got.Status != tasks.Completed || string(got.Result) != `{"fast":1}` || store.count(fast.ID) != 1 {
		t.Errorf("fast task when Start returns = %s %s after %d Puts, want completed after 1", got.Status, got.Result, store.count(fast.ID))
	}

	m = newManager(t, tasks.Options{Store: store, CreateWindow: 20 * time.Millisecond})
	asked := make(chan string, 1)
	slow, err := m.Start(ctx, tasks.Requester{Owner: "o"}, 0, func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		// Asking during the window waits for the task to be stored.
		ans, err := h.Ask(ctx, "elicitation/create", json.RawMessage(`{}`), func(in *tasks.Input) { asked <- in.Key })
		if err != nil {
			return nil, "", &tasks.Error{Code: -1, Message: err.Error()}
		}
		return ans, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	key := <-asked
	if !m.Answer("o", slow.ID, key, tasks.Reply{Result: json.RawMessage(`{"action":"accept"}`)}) {
		t.Fatal("Answer = false")
	}
	if got, _ := m.Wait(ctx, "o", slow.ID); got.Status != tasks.Completed || store.count(slow.ID) < 3 {
		t.Errorf("slow task = %s after %d Puts, want completed after created, input_required, working, completed", got.Status, store.count(slow.ID))
	}

	store.mu.Lock()
	store.refuse = true
	store.mu.Unlock()
	stopped := make(chan struct{})
	if _, err := m.Start(ctx, tasks.Requester{Owner: "o"}, 0, func(ctx context.Context, _ *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		<-ctx.Done()
		close(stopped)
		return nil, "", nil
	}); err == nil {
		t.Error("Start on a store that refuses = nil error")
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Error("the work of a task that could not be stored was not cancelled")
	}
}

// TestOnChangeInOrder: OnChange sees each task's states in the order they were stored,
// however many goroutines change the task at once (a status notification that
// overtook the one before it once made a client see completed before working).
func TestOnChangeInOrder(t *testing.T) {
	var mu sync.Mutex
	var seen []time.Time
	m := newManager(t, tasks.Options{Store: tasks.NewMemoryStore(), OnChange: func(x tasks.Task) {
		mu.Lock()
		seen = append(seen, x.LastUpdatedAt)
		mu.Unlock()
	}})
	ctx := context.Background()
	created, err := m.Start(ctx, tasks.Requester{Owner: "o"}, 0, func(ctx context.Context, h *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 200 {
					h.Note(string(rune('a'+w)) + string(rune('a'+i%26)))
				}
			})
		}
		wg.Wait()
		return json.RawMessage(`{"content":[]}`), "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Wait(ctx, "o", created.ID); got.Status != tasks.Completed {
		t.Fatalf("task ended %s", got.Status)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 {
		t.Fatalf("OnChange saw %d states", len(seen))
	}
	for i := 1; i < len(seen); i++ {
		if seen[i].Before(seen[i-1]) {
			t.Fatalf("OnChange saw state %d (updated %v) after state %d (updated %v): out of order", i, seen[i], i-1, seen[i-1])
		}
	}
}
