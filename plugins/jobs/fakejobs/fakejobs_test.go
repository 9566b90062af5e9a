package fakejobs

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestService walks jobs through their lives on a fake clock.
func TestService(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := New(10 * time.Second)
	s.now = func() time.Time { return now }
	do := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	steps := []struct {
		name         string
		advance      time.Duration
		method, path string
		body         string
		code         int
		field, want  string
	}{
		{"submit", 0, "POST", "/jobs", `{"kind":"upper","input":"abc"}`, 201, "id", "j1"},
		{"bad submit", 0, "POST", "/jobs", `{"input":"no kind"}`, 400, "error", "want {kind, input, duration_ms?, lease_ms?}"},
		{"percent", 4 * time.Second, "GET", "/jobs/j1", "", 200, "message", "upper: 40% done"},
		{"result too early", 0, "GET", "/jobs/j1/result", "", 409, "error", "job running"},
		{"done", 6 * time.Second, "GET", "/jobs/j1", "", 200, "status", "succeeded"},
		{"result", 0, "GET", "/jobs/j1/result", "", 200, "result", "ABC"},
		{"submit with a lease", 0, "POST", "/jobs", `{"kind":"echo","input":"x","lease_ms":1000}`, 201, "id", "j2"},
		{"polled in time", 900 * time.Millisecond, "GET", "/jobs/j2", "", 200, "status", "running"},
		{"lease expired", 1100 * time.Millisecond, "GET", "/jobs/j2", "", 200, "status", "cancelled"},
		{"submit to delete", 0, "POST", "/jobs", `{"kind":"echo","input":"x","duration_ms":5000}`, 201, "id", "j3"},
		{"delete", time.Second, "DELETE", "/jobs/j3", "", 200, "message", "cancelled by the client"},
		{"deleted stays cancelled", 10 * time.Second, "GET", "/jobs/j3", "", 200, "status", "cancelled"},
		{"fail", 0, "POST", "/jobs", `{"kind":"fail","duration_ms":1}`, 201, "id", "j4"},
		{"failed", time.Second, "GET", "/jobs/j4", "", 200, "status", "failed"},
		{"unknown job", 0, "GET", "/jobs/j9", "", 404, "", ""},
		{"wrong method", 0, "PUT", "/jobs/j1", "", 405, "", ""},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			now = now.Add(st.advance)
			code, out := do(st.method, st.path, st.body)
			if code != st.code || (st.field != "" && out[st.field] != st.want) {
				t.Errorf("%s %s = %d %v, want %d with %s %q", st.method, st.path, code, out, st.code, st.field, st.want)
			}
		})
	}
	if ev := strings.Join(s.Events(), ","); !strings.Contains(ev, "lease expired /jobs/j2") || !strings.Contains(ev, "DELETE /jobs/j3") {
		t.Errorf("Events() = %s", ev)
	}
	if _, ok := s.Lookup("j1"); !ok {
		t.Errorf("Lookup(j1) found nothing")
	}
}
