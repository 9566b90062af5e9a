package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

// TestTestrunResumes runs testrun natively: from the start it runs every case, logs
// each and checkpoints after each; from a checkpoint it goes on from there.
func TestTestrunResumes(t *testing.T) {
	h := &guest.TestHost{}
	res, err := guest.CallTool(h, "testrun", map[string]any{"cases": 10, "fail_every": 4})
	if err != nil || res.IsError {
		t.Fatalf("testrun = %+v, %v", res, err)
	}
	var out struct {
		Passed, Failed, ResumedFrom int
		Failures                    []int
	}
	decode(t, res, &out)
	if out.Passed != 8 || out.Failed != 2 || out.ResumedFrom != 1 || len(out.Failures) != 2 || out.Failures[1] != 8 {
		t.Errorf("testrun(10, fail_every 4) = %+v; want 8 passed, cases 4 and 8 failed, from case 1", out)
	}
	if n := strings.Count(h.TaskLog(), "\n"); n != 10 || !strings.Contains(h.TaskLog(), "case 8: FAIL") {
		t.Errorf("log = %q; want one line per case", h.TaskLog())
	}
	cps := h.Checkpoints()
	if len(cps) != 10 {
		t.Fatalf("%d checkpoints, want one per case", len(cps))
	}

	resumed := &guest.TestHost{ResumeFrom: cps[5]} // after case 6
	res, _ = guest.CallTool(resumed, "testrun", map[string]any{"cases": 10, "fail_every": 4})
	decode(t, res, &out)
	if out.Passed != 8 || out.Failed != 2 || out.ResumedFrom != 7 {
		t.Errorf("resumed testrun = %+v; want the same totals, resumed from case 7", out)
	}
	if !strings.HasPrefix(resumed.TaskLog(), "resumed at case 7") || strings.Contains(resumed.TaskLog(), "case 6:") {
		t.Errorf("resumed log = %q; want it to start at case 7", resumed.TaskLog())
	}
}

// TestCrunchResumes: crunch's checksum is the same whether it ran at once or
// resumed from any checkpoint.
func TestCrunchResumes(t *testing.T) {
	var want uint64
	for i := int64(1); i <= 10_000; i++ {
		want = Fold(want, i)
	}
	h := &guest.TestHost{}
	res, err := guest.CallTool(h, "crunch", map[string]any{"n": 10_000, "checkpoint_every": 1000})
	if err != nil || res.IsError {
		t.Fatalf("crunch = %+v, %v", res, err)
	}
	var out struct {
		Checksum    string
		ResumedFrom int64
	}
	decode(t, res, &out)
	if got := out.Checksum; got != hex64(want) {
		t.Errorf("checksum = %s, want %s", got, hex64(want))
	}
	cps := h.Checkpoints()
	if len(cps) != 10 {
		t.Fatalf("%d checkpoints, want 10", len(cps))
	}
	resumed := &guest.TestHost{ResumeFrom: cps[3]}
	res, _ = guest.CallTool(resumed, "crunch", map[string]any{"n": 10_000, "checkpoint_every": 1000})
	decode(t, res, &out)
	if out.Checksum != hex64(want) || out.ResumedFrom != 4000 {
		t.Errorf("resumed crunch = %+v; want the same checksum, from step 4000", out)
	}
}

func hex64(v uint64) string { return fmt.Sprintf("%016x", v) }

// decode reads a result's structuredContent into out.
func decode(t *testing.T, res *guest.Result, out any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		t.Fatalf("structuredContent %v: %v", res.StructuredContent, err)
	}
}
