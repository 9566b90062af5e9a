// Package fakejobs is a small asynchronous job service for trying and testing the
// bundled jobs plugin: jobs are submitted, polled for their percent done, fetched
// when done and cancelled, as in many real job APIs.
//
//	POST   /jobs             {"kind", "input", "duration_ms"?, "lease_ms"?} -> 201 Job
//	GET    /jobs/{id}        -> Job (and renews its lease)
//	GET    /jobs/{id}/result -> {"result"} once succeeded, else 409
//	DELETE /jobs/{id}        -> Job, cancelled
//
// A job runs for its duration (the service's default unless the request sets one)
// and then succeeds with its input upper-cased (kind "upper") or as it is (any other
// kind), or fails (kind "fail"). A job with a lease is cancelled by the service
// when nobody polls it for lease_ms: a client that went away without a DELETE does
// not leave it running. Events records every request the service saw.
package fakejobs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Job is a job's state as the service reports it.
type Job struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Status  string `json:"status"` // running, succeeded, failed or cancelled
	Percent int    `json:"percent"`
	Message string `json:"message,omitempty"`
}

// Service is the fake job service, an http.Handler. Its zero value is not usable:
// use New.
type Service struct {
	duration time.Duration
	now      func() time.Time

	mu     sync.Mutex
	jobs   map[string]*job
	next   int
	events []string
}

type job struct {
	Job
	input    string
	start    time.Time
	duration time.Duration
	lease    time.Duration // 0: none
	polled   time.Time
}

// New returns a service whose jobs take duration unless a request says otherwise.
func New(duration time.Duration) *Service {
	return &Service{duration: duration, now: time.Now, jobs: map[string]*job{}}
}

// Events returns the requests seen so far, as "METHOD /path", and "lease expired
// /jobs/{id}" for a job the service cancelled itself.
func (s *Service) Events() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.events...)
}

// Lookup returns job id's current state.
func (s *Service) Lookup(id string) (Job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return Job{}, false
	}
	s.advance(j)
	return j.Job, true
}

// maxBody bounds a submitted job.
const maxBody = 64 << 10

func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.events = append(s.events, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	rest, ok := strings.CutPrefix(r.URL.Path, "/jobs")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if rest == "" || rest == "/" {
		if r.Method != http.MethodPost {
			http.Error(w, "use POST", http.StatusMethodNotAllowed)
			return
		}
		s.submit(w, r)
		return
	}
	id, sub, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok || (sub != "" && sub != "result") {
		http.NotFound(w, r)
		return
	}
	s.advance(j)
	switch {
	case sub == "result" && r.Method == http.MethodGet:
		if j.Status != "succeeded" {
			writeJSON(w, http.StatusConflict, map[string]string{"error": "job " + j.Status})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"result": j.result()})
	case sub == "" && r.Method == http.MethodGet:
		j.polled = s.now()
		writeJSON(w, http.StatusOK, j.Job)
	case sub == "" && r.Method == http.MethodDelete:
		if j.Status == "running" {
			j.Status, j.Message = "cancelled", "cancelled by the client"
		}
		writeJSON(w, http.StatusOK, j.Job)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (s *Service) submit(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Kind       string `json:"kind"`
		Input      string `json:"input"`
		DurationMS int    `json:"duration_ms"`
		LeaseMS    int    `json:"lease_ms"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(&req); err != nil || req.Kind == "" || req.DurationMS < 0 || req.LeaseMS < 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "want {kind, input, duration_ms?, lease_ms?}"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	now := s.now()
	j := &job{Job: Job{ID: fmt.Sprintf("j%d", s.next), Kind: req.Kind, Status: "running"},
		input: req.Input, start: now, polled: now, duration: s.duration,
		lease: time.Duration(req.LeaseMS) * time.Millisecond}
	if req.DurationMS > 0 {
		j.duration = time.Duration(req.DurationMS) * time.Millisecond
	}
	s.jobs[j.ID] = j
	s.advance(j)
	writeJSON(w, http.StatusCreated, j.Job)
}

// advance brings a running job up to now: its percent, its end, its lease.
func (s *Service) advance(j *job) {
	if j.Status != "running" {
		return
	}
	now := s.now()
	if j.lease > 0 && now.Sub(j.polled) > j.lease {
		j.Status, j.Message = "cancelled", "nobody polled it for "+j.lease.String()
		s.events = append(s.events, "lease expired /jobs/"+j.ID)
		return
	}
	elapsed := now.Sub(j.start)
	if elapsed >= j.duration {
		j.Percent = 100
		if j.Kind == "fail" {
			j.Status, j.Message = "failed", "the job failed, as kind fail does"
		} else {
			j.Status, j.Message = "succeeded", ""
		}
		return
	}
	j.Percent = int(100 * elapsed / j.duration)
	j.Message = fmt.Sprintf("%s: %d%% done", j.Kind, j.Percent)
}

func (j *job) result() string {
	if j.Kind == "upper" {
		return strings.ToUpper(j.input)
	}
	return j.input
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
