package audit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/audit"
)

// A Log is opened once, gets records from any goroutine without making them wait,
// and is closed at the end, which writes what is queued.
func Example() {
	dir, _ := os.MkdirTemp("", "audit")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "audit.jsonl")
	l, err := audit.Open(audit.Options{Path: path})
	if err != nil {
		fmt.Println(err)
		return
	}
	l.Record(audit.Record{Time: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC), Identity: "key:ci", Method: "tools/call",
		Tool: "textkit_ping", Outcome: audit.OutcomeOK, DurationMS: 1.5})
	l.Close(context.Background())

	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	r, _ := audit.DecodeLine([]byte(strings.TrimSpace(string(b))))
	fmt.Println(r.Identity, r.Tool, r.Outcome)
	// Output:
	// {"time":"2026-12-02T01:00:00Z","identity":"key:ci","method":"tools/call","tool":"textkit_ping","outcome":"ok","durationMs":1.5}
	// key:ci textkit_ping ok
}
