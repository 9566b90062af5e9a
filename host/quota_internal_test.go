package host

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// quotaOf reads the quota data of a refusal.
func quotaOf(t *testing.T, err error) QuotaData {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != codeLimit {
		t.Fatalf("refusal %v, want a -32000 JSON-RPC error", err)
	}
	var q QuotaData
	if err := json.Unmarshal(we.Data, &q); err != nil {
		t.Fatalf("refusal data %s: %v", we.Data, err)
	}
	return q
}

// TestQuotas: running calls are counted per identity and tool, released once, kept
// by a task that takes them over; parked tasks follow their status; only
// authenticated identities are counted.
func TestQuotas(t *testing.T) {
	q := newQuotas(Options{MaxParked: 2, MaxToolConcurrency: 2})
	const alice, bob = "user:key:alice", "user:key:bob"

	a1, err := q.admit(alice, "t")
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := q.admit(alice, "t")
	if _, err := q.admit(alice, "t"); quotaOf(t, err) != (QuotaData{QuotaToolConcurrency, 2, quotaRetryAfter}) {
		t.Errorf("alice's third call of t: %v, want max_tool_concurrency 2", err)
	}
	if s, err := q.admit(alice, "other"); err != nil {
		t.Errorf("alice's call of another tool: %v, want admitted", err)
	} else {
		s.requestDone()
	}
	if s, err := q.admit(bob, "t"); err != nil {
		t.Errorf("bob's call of t: %v, want admitted (his own count)", err)
	} else {
		s.requestDone()
	}
	for _, who := range []string{localOwner, "session:x", anonymousOwner} {
		for range 5 {
			if s, err := q.admit(who, "t"); err != nil || s != nil {
				t.Fatalf("admit(%s) = %v, %v; want no slot and no refusal (not an identity)", who, s, err)
			}
		}
	}

	a1.takeOver().requestDone() // a task holds it: still counted
	a2.requestDone()
	a2.release() // once only
	if _, err := q.admit(alice, "t"); err != nil {
		t.Errorf("after one call ended: %v, want admitted", err)
	}
	if _, err := q.admit(alice, "t"); err == nil {
		t.Error("with the task's and one call's slots taken: admitted, want refused")
	}
	a1.release() // the task's run ended
	if s, err := q.admit(alice, "t"); err != nil {
		t.Errorf("after the task ended: %v, want admitted", err)
	} else {
		s.release()
	}
	handed := &slot{q: q, key: runKey{alice, "x"}}
	handed.takeOver().handBack()
	if handed.task.Load() {
		t.Error("handBack: the request does not get the slot back")
	}

	// Parked: input_required adds, any other status removes.
	q2 := newQuotas(Options{MaxParked: 2})
	for _, id := range []string{"t1", "t2"} {
		q2.taskChanged(tasks.Task{ID: id, Owner: alice, Status: tasks.InputRequired})
	}
	q2.taskChanged(tasks.Task{ID: "t2", Owner: alice, Status: tasks.InputRequired}) // the same task again
	if _, err := q2.admit(alice, "t"); quotaOf(t, err) != (QuotaData{QuotaParked, 2, quotaRetryAfter}) {
		t.Errorf("alice with 2 parked: %v, want max_parked 2", err)
	}
	if s, err := q2.admit(bob, "t"); err != nil {
		t.Errorf("bob while alice is parked: %v, want admitted", err)
	} else {
		s.release()
	}
	q2.taskChanged(tasks.Task{ID: "t1", Owner: alice, Status: tasks.Working})
	if s, err := q2.admit(alice, "t"); err != nil {
		t.Errorf("alice after answering one: %v, want admitted", err)
	} else {
		s.release()
	}
	q2.taskChanged(tasks.Task{ID: "t2", Owner: alice, Status: tasks.Cancelled})
	if len(q2.parked) != 0 || len(q.running) != 1 {
		t.Errorf("left: parked %v, running %v; want nothing parked and alice's one call", q2.parked, q.running)
	}

	// Defaults.
	d := newQuotas(Options{})
	if d.maxParked != DefaultMaxParked || d.maxToolConcurrency != DefaultMaxToolConcurrency {
		t.Errorf("defaults %d, %d; want %d, %d", d.maxParked, d.maxToolConcurrency, DefaultMaxParked, DefaultMaxToolConcurrency)
	}
}
