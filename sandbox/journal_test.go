package sandbox_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// journalHost answers a call's task journal requests as a host with a store would
// (task_log, checkpoint_save, checkpoint_load on a first run) and counts them.
type journalHost struct {
	recorder
	jmu    sync.Mutex
	counts map[string]int
	sizes  []int // the params size of each checkpoint_save
}

func newJournalHost() *journalHost {
	h := &journalHost{counts: map[string]int{}}
	h.reply = func(method string, params []byte) ([]byte, error) {
		h.jmu.Lock()
		defer h.jmu.Unlock()
		h.counts[method]++
		switch method {
		case "task_log":
			return fmt.Appendf(nil, `{"end":%d}`, h.counts[method]), nil
		case "checkpoint_save":
			h.sizes = append(h.sizes, len(params))
			return []byte(`{}`), nil
		case "checkpoint_load":
			return []byte(`{"data":null,"resumes":0}`), nil
		}
		return nil, sandbox.ErrUnsupported
	}
	return h
}

func (h *journalHost) count(method string) int {
	h.jmu.Lock()
	defer h.jmu.Unlock()
	return h.counts[method]
}

// TestJournalBudgets: one call's task_log requests and its checkpoint requests each
// have their own budget (sandbox.MaxTaskLogRequests, MaxCheckpointRequests): the
// guest gets LIMIT at the first request past it, and the host never sees it.
func TestJournalBudgets(t *testing.T) {
	m := load(t, "testdata/wasm/journal.wasm", sandbox.Limits{Timeout: 5 * time.Minute}, sandbox.Grants{})
	for _, tc := range []struct {
		op, method string
		budget     int
	}{
		{"log", "task_log", sandbox.MaxTaskLogRequests},
		{"checkpoint", "checkpoint_save", sandbox.MaxCheckpointRequests},
	} {
		t.Run(tc.op, func(t *testing.T) {
			h := newJournalHost()
			out, err := m.Call(context.Background(), call("repeat", map[string]any{"op": tc.op, "count": tc.budget + 1}), h)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("%s %d failed: LIMIT", tc.op, tc.budget+1); !strings.Contains(string(out), want) {
				t.Errorf("%d %s requests in one call = %s, want %q", tc.budget+1, tc.method, out, want)
			}
			if got := h.count(tc.method); got != tc.budget {
				t.Errorf("host saw %d %s requests, want the budget, %d", got, tc.method, tc.budget)
			}
		})
	}
}

// TestStepsPastOldJournalBudget: a guest that appends a log line and saves a
// checkpoint per step, as the bundled testrun does per case, gets past 50,000
// steps in one call. When both kinds shared one budget of 100,000 per call, such a
// run failed at the checkpoint of step 50,000 (testrun accepts up to 100,000
// cases).
func TestStepsPastOldJournalBudget(t *testing.T) {
	m := load(t, "testdata/wasm/journal.wasm", sandbox.Limits{Timeout: 5 * time.Minute}, sandbox.Grants{})
	h := newJournalHost()
	const steps = 60_000
	start := time.Now()
	out, err := m.Call(context.Background(), call("repeat", map[string]any{"op": "step", "count": steps, "size": 64}), h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"text":"done"`) {
		t.Errorf("%d steps of a log line and a checkpoint = %s, want done", steps, out)
	}
	if logs, saves := h.count("task_log"), h.count("checkpoint_save"); logs != steps || saves != steps {
		t.Errorf("host saw %d task_log and %d checkpoint_save requests, want %d of each", logs, saves, steps)
	}
	t.Logf("%d journal requests in one call in %v", 2*steps, time.Since(start))
}

// TestCheckpointOverTheABIBound: checkpoint_save params larger than a checkpoint of
// sandbox.MaxCheckpoint bytes in base64 (plus room for the JSON around it) are
// refused with TOO_LARGE before the host sees them; one of MaxCheckpoint bytes
// reaches the host.
func TestCheckpointOverTheABIBound(t *testing.T) {
	m := load(t, "testdata/wasm/journal.wasm", sandbox.Limits{}, sandbox.Grants{})
	for _, tc := range []struct {
		size int
		want string
	}{
		{sandbox.MaxCheckpoint, "done"},
		{sandbox.MaxCheckpointParams/4*3 + 1, "checkpoint 1 failed: TOO_LARGE"},
	} {
		h := newJournalHost()
		out, err := m.Call(context.Background(), call("repeat", map[string]any{"op": "checkpoint", "count": 1, "size": tc.size}), h)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("checkpoint of %d bytes = %s, want %q", tc.size, out, tc.want)
		}
		if seen := h.count("checkpoint_save"); tc.want == "done" && (seen != 1 || h.sizes[0] > sandbox.MaxCheckpointParams) ||
			tc.want != "done" && seen != 0 {
			t.Errorf("checkpoint of %d bytes: the host saw %d checkpoint_save requests (%v bytes)", tc.size, seen, h.sizes)
		}
	}
}
