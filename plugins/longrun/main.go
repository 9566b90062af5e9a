// Command longrun is a bundled mcp-wasmhost plugin that shows tasks which show their
// work and outlive their server (docs/ABI.md "Task logs and checkpoints"):
//
//   - testrun runs many test cases, appends each outcome to its task's live log
//     (the resource mcp-wasmhost://tasks/{taskId}/log, which a client reads while
//     the run goes on), and saves a checkpoint after each case;
//   - crunch computes a checksum over a long generated sequence and saves its
//     position every checkpoint_every steps.
//
// Both are resumable: if the server (or the tool's worker process) stops under a
// task, the next server starts the tool again and it goes on from its last
// checkpoint, losing at most the work since then. Each result says where the run
// resumed from and how often it was resumed.
//
// Build (from the repository root): make plugins
package main

import (
	"encoding/json"
	"fmt"
	"time"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

func main() {}

var readOnly = &guest.Annotations{ReadOnlyHint: true, IdempotentHint: true}

func init() {
	guest.Add(guest.Tool{
		Name: "testrun", Title: "Run a test suite", TaskSupport: guest.TaskRequired, Resumable: true, Annotations: readOnly,
		Description: "Runs `cases` generated test cases (every fail_every-th one fails), case_ms each, appending one line per case to the task's log (see the task's _meta for its URI) and saving a checkpoint after each case: a stand-in for a test platform's long run. It resumes from its checkpoint if the server stops.",
	}, testrun)
	guest.Add(guest.Tool{
		Name: "crunch", Title: "Crunch numbers", TaskSupport: guest.TaskRequired, Resumable: true, Annotations: readOnly,
		Description: "Computes a 64-bit checksum over a generated sequence of n values, saving its position every checkpoint_every steps and logging each checkpoint: a stand-in for an hours-long analysis. It resumes from its checkpoint if the server stops.",
	}, crunch)
}

type testrunArgs struct {
	Cases     int `json:"cases" jsonschema:"how many test cases to run, 1-100000"`
	FailEvery int `json:"fail_every,omitempty" jsonschema:"every fail_every-th case fails (0: none fails)"`
	CaseMS    int `json:"case_ms,omitempty" jsonschema:"how long each case takes, 0-60000 ms"`
	ConfirmAt int `json:"confirm_at,omitempty" jsonschema:"before this case, ask the user whether to go on (0: never ask)"`
}

// testrunState is testrun's checkpoint.
type testrunState struct {
	Next     int   `json:"next"` // the first case not yet run
	Passed   int   `json:"passed"`
	Failures []int `json:"failures"` // the failed cases (the first 100)
	Failed   int   `json:"failed"`
	// Confirmed: the user agreed to go on past confirm_at (asked again after a resume
	// that came before the answer).
	Confirmed bool `json:"confirmed,omitempty"`
}

const maxFailuresListed = 100

func testrun(c *guest.Call, in testrunArgs) (*guest.Result, error) {
	switch {
	case in.Cases < 1 || in.Cases > 100_000:
		return guest.Errorf("cases must be between 1 and 100000, got %d", in.Cases), nil
	case in.FailEvery < 0:
		return guest.Errorf("fail_every must not be negative, got %d", in.FailEvery), nil
	case in.CaseMS < 0 || in.CaseMS > 60_000:
		return guest.Errorf("case_ms must be between 0 and 60000, got %d", in.CaseMS), nil
	}
	st := testrunState{Next: 1}
	cp, resumes, err := c.Checkpoint()
	if err != nil {
		return nil, err
	}
	if cp != nil {
		if err := json.Unmarshal(cp, &st); err != nil {
			return guest.Errorf("the checkpoint to resume from is unreadable: %v", err), nil
		}
		if err := c.Logf("resumed at case %d (resume %d)", st.Next, resumes); err != nil {
			return nil, err
		}
	}
	resumedFrom := st.Next
	for ; st.Next <= in.Cases; st.Next++ {
		i := st.Next
		if i == in.ConfirmAt && !st.Confirmed {
			ans, err := c.Elicit(fmt.Sprintf("The test run reached case %d of %d (%d failed so far). Go on?", i, in.Cases, st.Failed),
				map[string]any{"type": "object", "properties": map[string]any{"go_on": map[string]any{"type": "boolean"}}, "required": []string{"go_on"}})
			if err != nil {
				return nil, err
			}
			if !ans.Accepted() || ans.Content["go_on"] != true {
				return guest.Errorf("stopped by the user before case %d", i), nil
			}
			st.Confirmed = true
			if err := c.Logf("the user agreed to go on at case %d", i); err != nil {
				return nil, err
			}
		}
		time.Sleep(time.Duration(in.CaseMS) * time.Millisecond)
		if in.FailEvery > 0 && i%in.FailEvery == 0 {
			st.Failed++
			if len(st.Failures) < maxFailuresListed {
				st.Failures = append(st.Failures, i)
			}
			err = c.Logf("case %d: FAIL (case %d is a multiple of %d)", i, i, in.FailEvery)
		} else {
			st.Passed++
			err = c.Logf("case %d: PASS", i)
		}
		if err != nil {
			return nil, err
		}
		c.Progress(float64(i), float64(in.Cases), fmt.Sprintf("%d of %d cases run", i, in.Cases))
		next := st
		next.Next = i + 1
		b, _ := json.Marshal(next)
		if err := c.SaveCheckpoint(b); err != nil {
			return nil, err
		}
	}
	return guest.Structured(map[string]any{
		"cases": in.Cases, "passed": st.Passed, "failed": st.Failed, "failures": st.Failures,
		"resumedFrom": resumedFrom, "resumes": resumes,
	})
}

type crunchArgs struct {
	N               int64 `json:"n" jsonschema:"how many values to fold in, 1-10000000000"`
	CheckpointEvery int64 `json:"checkpoint_every,omitempty" jsonschema:"steps between checkpoints (default 1000000)"`
}

// crunchState is crunch's checkpoint.
type crunchState struct {
	Step int64  `json:"step"` // values folded in so far
	Sum  uint64 `json:"sum"`
}

// Fold is one step of crunch's checksum: a 64-bit LCG over the sequence with an
// xorshift of each value, so that the result depends on every step in order.
func Fold(sum uint64, i int64) uint64 {
	v := uint64(i) * 0x9E3779B97F4A7C15
	v ^= v >> 29
	return sum*6364136223846793005 + v
}

func crunch(c *guest.Call, in crunchArgs) (*guest.Result, error) {
	every := in.CheckpointEvery
	if every == 0 {
		every = 1_000_000
	}
	switch {
	case in.N < 1 || in.N > 10_000_000_000:
		return guest.Errorf("n must be between 1 and 10000000000, got %d", in.N), nil
	case every < 1:
		return guest.Errorf("checkpoint_every must be at least 1, got %d", every), nil
	}
	var st crunchState
	cp, resumes, err := c.Checkpoint()
	if err != nil {
		return nil, err
	}
	if cp != nil {
		if err := json.Unmarshal(cp, &st); err != nil {
			return guest.Errorf("the checkpoint to resume from is unreadable: %v", err), nil
		}
		if err := c.Logf("resumed at step %d (resume %d)", st.Step, resumes); err != nil {
			return nil, err
		}
	}
	resumedFrom := st.Step
	for st.Step < in.N {
		end := min(st.Step+every, in.N)
		for i := st.Step + 1; i <= end; i++ {
			st.Sum = Fold(st.Sum, i)
		}
		st.Step = end
		b, _ := json.Marshal(st)
		if err := c.SaveCheckpoint(b); err != nil {
			return nil, err
		}
		if err := c.Logf("step %d of %d", st.Step, in.N); err != nil {
			return nil, err
		}
		c.Progress(float64(st.Step), float64(in.N), "")
	}
	return guest.Structured(map[string]any{
		"n": in.N, "checksum": fmt.Sprintf("%016x", st.Sum), "resumedFrom": resumedFrom, "resumes": resumes,
	})
}
