package tasks_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/boltstore"
	"github.com/mcp-wasmhost/mcp-wasmhost/tasks/sqlstore"
)

type opLog struct {
	mu  sync.Mutex
	ops []string
}

func (l *opLog) StoreOp(_ context.Context, op string, start time.Time, _ error) {
	if start.IsZero() || time.Since(start) < 0 {
		panic("bad start")
	}
	l.mu.Lock()
	l.ops = append(l.ops, op)
	l.mu.Unlock()
}

// notForwarded are methods of the stores that belong to no interface of package
// tasks: the command keeps the store itself for them. Any other method of a store
// must be on the observed store too, so that a new optional interface (a store's
// wake-up channel, say) cannot be hidden by Observe.
var notForwarded = []string{"Close", "Path", "Name", "UseNonce"}

func TestObserveKeepsInterfaces(t *testing.T) {
	dir := t.TempDir()
	bolt, err := boltstore.Open(filepath.Join(dir, "tasks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	sql, err := sqlstore.Open(context.Background(), filepath.Join(dir, "tasks.sqlite"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sql.Close()
	for _, tc := range []struct {
		name   string
		store  tasks.Store
		shared bool
	}{
		{"memory", tasks.NewMemoryStore(), false},
		{"bolt", bolt, false},
		{"sqlite", sql, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log opLog
			obs := tasks.Observe(tc.store, &log)
			if _, ok := obs.(tasks.Shared); ok != tc.shared {
				t.Errorf("Observe(%T) is Shared = %v, want %v", tc.store, ok, tc.shared)
			}
			if u, ok := obs.(interface{ Unwrap() tasks.Store }); !ok || u.Unwrap() != tc.store {
				t.Errorf("Observe(%T).Unwrap() is not the store", tc.store)
			}
			have := reflect.TypeOf(obs)
			st := reflect.TypeOf(tc.store)
			for i := range st.NumMethod() {
				name := st.Method(i).Name
				if slices.Contains(notForwarded, name) {
					continue
				}
				if _, ok := have.MethodByName(name); !ok {
					t.Errorf("%T has method %s that Observe(%[1]T) hides: forward it in tasks/observe.go", tc.store, name)
				}
			}
			// A Manager on the observed store reports what it does.
			m := tasks.NewManager(tasks.Options{Store: obs})
			defer m.Close(context.Background())
			task, err := m.Start(context.Background(), tasks.Requester{Owner: "o"}, 0, func(context.Context, *tasks.Handle) (json.RawMessage, string, *tasks.Error) {
				return json.RawMessage(`{}`), "", nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Get(context.Background(), "o", task.ID); err != nil {
				t.Fatal(err)
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			if !slices.Contains(log.ops, "put") || !slices.Contains(log.ops, "get") {
				t.Errorf("observed operations %v, want put and get among them", log.ops)
			}
		})
	}
}
