package worker_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

// events records what a Supervisor reports.
type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) add(s string)           { e.mu.Lock(); e.log = append(e.log, s); e.mu.Unlock() }
func (e *events) WorkerStarted(p string) { e.add("started " + p) }
func (e *events) WorkerKilled(p string, why worker.StopReason) {
	e.add("killed " + p + " " + why.String())
}
func (e *events) WorkerRestarted(p string, why worker.StopReason) {
	e.add("restarted " + p + " " + why.String())
}
func (e *events) all() []string { e.mu.Lock(); defer e.mu.Unlock(); return slices.Clone(e.log) }

// TestEventsOfAKill: a call that does not stop within KillGrace of its time limit
// costs its worker, which is reported killed and restarted as stuck, and started
// again.
func TestEventsOfAKill(t *testing.T) {
	ev := &events{}
	m := loadWith(t, worker.Options{KillGrace: time.Nanosecond, Events: ev}, "testdata/wasm/loop.wasm", sandbox.Limits{Timeout: 50 * time.Millisecond})
	if _, err := m.Call(t.Context(), input("spin", nil), nil); err == nil {
		t.Fatal("the spinning call returned no error")
	}
	want := []string{"started test", "killed test stuck", "restarted test stuck", "started test"}
	for deadline := time.Now().Add(30 * time.Second); !slices.Equal(ev.all(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("events %s, want %s", strings.Join(ev.all(), ", "), strings.Join(want, ", "))
		}
	}
}
