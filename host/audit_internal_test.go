package host

import (
	"testing"

	"github.com/mcp-wasmhost/mcp-wasmhost/tasks"
)

// TestStatusChanged: a task's audit lines follow its status, not its status
// message; a terminal status forgets the task.
func TestStatusChanged(t *testing.T) {
	var s Server
	steps := []struct {
		id     string
		status tasks.Status
		want   bool
	}{
		{"a", tasks.Working, false}, // a note while working: no line
		{"a", tasks.InputRequired, true},
		{"a", tasks.InputRequired, false}, // a note while waiting
		{"a", tasks.Working, true},
		{"b", tasks.Completed, true}, // created and done
		{"a", tasks.Cancelled, true},
	}
	for i, st := range steps {
		if got := s.statusChanged(tasks.Task{ID: st.id, Status: st.status}); got != st.want {
			t.Errorf("step %d: statusChanged(%s %s) = %t, want %t", i, st.id, st.status, got, st.want)
		}
	}
	if n := len(s.auditStatuses.last); n != 0 {
		t.Errorf("%d tasks remembered after all ended, want 0", n)
	}
}
