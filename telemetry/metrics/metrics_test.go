package metrics

import (
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

func TestMethodBounded(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"tools/call", "tools/call"},
		{"tasks/get", "tasks/get"},
		{"notifications/cancelled", "notifications/cancelled"},
		{"x/made-up-" + strings.Repeat("a", 100), "other"},
		{"", "other"},
	} {
		if got := Method(tc.in); got != tc.want {
			t.Errorf("Method(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics // every method is safe on nil
	m.Request("tools/call", "none", "stdio", time.Millisecond)
	m.ToolCall("p", "t", OutcomeOK, time.Millisecond)
	m.Report("p", nil)
	m.TaskChanged(tasks.Task{ID: "a", Status: tasks.InputRequired})
	m.StoreOp("get", time.Millisecond, nil)
	m.Egress("p", "", EgressRefused)
	m.AuthFailure("invalid_token")
	m.Refused(RefusedAdmission)
	if m.Events() != nil {
		t.Error("Events of nil Metrics is not nil")
	}
}

// value is the value of the gauge or counter name with labels (k=v pairs), or -1.
func value(t *testing.T, m *Metrics, name string, labels ...string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, mt := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !hasLabel(mt, labels[i], labels[i+1]) {
					continue next
				}
			}
			if g := mt.GetGauge(); g != nil {
				return g.GetValue()
			}
			return mt.GetCounter().GetValue()
		}
	}
	return -1
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}

func TestParkedTasks(t *testing.T) {
	m := New(nil)
	for _, st := range []struct {
		id     string
		status tasks.Status
		parked float64
	}{
		{"a", tasks.InputRequired, 1},
		{"b", tasks.InputRequired, 2},
		{"a", tasks.InputRequired, 2}, // again: still one
		{"a", tasks.Working, 1},
		{"b", tasks.Cancelled, 0},
		{"c", tasks.Completed, 0},
	} {
		m.TaskChanged(tasks.Task{ID: st.id, Status: st.status})
		if got := value(t, m, "mcpwh_tasks_input_required"); got != st.parked {
			t.Errorf("after %s %s: parked = %v, want %v", st.id, st.status, got, st.parked)
		}
	}
	if got := value(t, m, "mcpwh_task_transitions_total", "state", "input_required"); got != 3 {
		t.Errorf("transitions to input_required = %v, want 3", got)
	}
}

func TestEgressWithoutOrigin(t *testing.T) {
	m := New(nil)
	m.Egress("web", "", EgressRefused)
	m.Egress("web", "https://api.example.com:443", EgressAllowed)
	if got := value(t, m, "mcpwh_egress_requests_total", "origin", "none", "decision", "refused"); got != 1 {
		t.Errorf("refused without origin = %v, want 1", got)
	}
	if got := value(t, m, "mcpwh_egress_requests_total", "origin", "https://api.example.com:443", "decision", "allowed"); got != 1 {
		t.Errorf("allowed = %v, want 1", got)
	}
}
