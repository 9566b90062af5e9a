package audit

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/internal/testenv"
)

// readLines decodes every line of the file at path.
func readLines(t *testing.T, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		r, err := DecodeLine(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Bytes())
		}
		out = append(out, r)
	}
	return out
}

func TestRecordAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for round := range 2 { // the second Open appends
		l, err := Open(Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		l.Record(Record{Method: "tools/call", Tool: "t", Identity: "key:a", Outcome: OutcomeOK,
			Inputs: map[string]int{"elicitation/create": 2}, Egress: []string{"https://a.test"}})
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := readLines(t, path)
		if len(got) != round+1 || got[round].Tool != "t" || got[round].Inputs["elicitation/create"] != 2 ||
			got[round].Time.Location() != time.UTC || time.Since(got[round].Time) > time.Minute {
			t.Fatalf("round %d: lines %+v, want %d with the record", round, got, round+1)
		}
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600 (the trail says who ran what)", st.Mode().Perm())
	}
	var nilLog *Log
	nilLog.Record(Record{Method: "x"}) // a nil Log records nothing, and does not crash
	if nilLog.Close(context.Background()) != nil || nilLog.Dropped() != 0 {
		t.Error("nil Log: want no-ops")
	}
}

// TestRotation: a line that would take the file past MaxBytes goes to a new file;
// Keep old files are kept, the oldest dropped; no line is lost or split.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	l, err := Open(Options{Path: path, MaxBytes: 1000, Keep: 2, Queue: 1000})
	if err != nil {
		t.Fatal(err)
	}
	const n = 60 // about 100 bytes each: six files' worth
	for i := range n {
		l.Record(Record{Method: "tools/call", Tool: strings.Repeat("x", 40), TaskID: string(rune('a' + i%26))})
		if i%5 == 0 {
			time.Sleep(time.Millisecond) // let the writer take batches
		}
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "audit.jsonl audit.jsonl.1 audit.jsonl.2" {
		t.Fatalf("files %v, want audit.jsonl and 2 rotated", names)
	}
	total := 0
	for _, p := range []string{path + ".2", path + ".1", path} {
		st, _ := os.Stat(p)
		if st.Size() > 1000 {
			t.Errorf("%s is %d bytes, over MaxBytes 1000", p, st.Size())
		}
		total += len(readLines(t, p))
	}
	if total >= n || total < 15 {
		t.Errorf("%d lines in the kept files, want the newest (fewer than %d: the oldest files were dropped)", total, n)
	}
	last := readLines(t, path)
	if got := last[len(last)-1].TaskID; got != string(rune('a'+(n-1)%26)) {
		t.Errorf("last line's task %q, want the last recorded", got)
	}
}

// TestDropsCounted: a full queue drops lines and never blocks the caller; the drops
// are counted, logged and written as a dropped line.
func TestDropsCounted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var logBuf testenv.SyncBuffer
	l, err := Open(Options{Path: path, Queue: 16, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	start := time.Now()
	for range n {
		l.Record(Record{Method: "tools/call", Tool: strings.Repeat("y", 200)})
	}
	took := time.Since(start)
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	dropped := l.Dropped()
	if dropped == 0 {
		t.Fatalf("no line dropped of %d through a queue of 16 (took %s)", n, took)
	}
	var written, reported int64
	for _, r := range readLines(t, path) {
		switch r.Method {
		case MethodDropped:
			reported += r.Dropped
		default:
			written++
		}
	}
	if written+dropped != n || reported != dropped {
		t.Errorf("written %d + dropped %d != %d, or dropped lines report %d", written, dropped, n, reported)
	}
	if !strings.Contains(logBuf.String(), "audit lines dropped") {
		t.Errorf("log %q: want the drops logged", logBuf.String())
	}
	t.Logf("%d records in %s (%s each), %d dropped", n, took, took/n, dropped)
}

func TestDecodeLine(t *testing.T) {
	tests := []struct {
		line string
		err  string // "" means decoded
	}{
		{`{"time":"2026-12-02T01:00:00Z","method":"tools/call","tool":"a","outcome":"ok","durationMs":1.5}`, ""},
		{`{"time":"2026-12-02T01:00:00Z","method":"audit/dropped","dropped":3}`, ""},
		{`{"method":"tools/call"}`, "time and method"},
		{`{"time":"2026-12-02T01:00:00Z"}`, "time and method"},
		{`{"time":"2026-12-02T01:00:00Z","method":"x","arguments":{"a":1}}`, "unknown field"},
		{`{"time":"yesterday","method":"x"}`, "time"},
		{`{"time":"2026-12-02T01:00:00Z","method":"x"} {}`, "more than one"},
		{`not json`, "invalid"},
		{``, "EOF"},
	}
	for _, tt := range tests {
		_, err := DecodeLine([]byte(tt.line))
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("DecodeLine(%q) = %v, want %q", tt.line, err, tt.err)
		}
	}
}

func FuzzDecodeLine(f *testing.F) {
	f.Add([]byte(`{"time":"2026-12-02T01:00:00Z","method":"tools/call","inputs":{"a":1},"egress":["x"]}`))
	f.Add([]byte(`{"time":"2026-12-02T01:00:00Z","method":"audit/dropped","dropped":-1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := DecodeLine(line)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		l := &Log{opts: Options{MaxBytes: 1 << 20}, w: bufio.NewWriter(&buf), logger: slog.New(slog.DiscardHandler)}
		l.write(r)
		l.w.Flush()
		again, err := DecodeLine(buf.Bytes())
		if err != nil || !again.Time.Equal(r.Time) || again.Method != r.Method {
			t.Fatalf("a decoded line does not survive writing: %v (%s)", err, buf.Bytes())
		}
	})
}

func TestOpenRefusesBadOptions(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no path", Options{}, "no path"},
		{"negative size", Options{Path: filepath.Join(dir, "a"), MaxBytes: -1}, "negative"},
		{"negative queue", Options{Path: filepath.Join(dir, "a"), Queue: -1}, "negative"},
		{"a directory", Options{Path: dir}, "is a directory"},
		{"no such directory", Options{Path: filepath.Join(dir, "none", "audit.jsonl")}, "no such file"},
	}
	for _, tt := range tests {
		l, err := Open(tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Open(%+v) = %v, want an error with %q", tt.name, tt.opts, err, tt.want)
		}
		if l != nil {
			l.Close(context.Background())
		}
	}
}

// TestWriteFailureNotFatal: a file that cannot take lines is logged once and the
// writer goes on; Close still returns.
func TestWriteFailureNotFatal(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	var logBuf testenv.SyncBuffer
	l, err := Open(Options{Path: "/dev/full", Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	if err == nil {
		t.Fatal("Open(/dev/full) = nil, want refused: not a regular file")
	}
	_ = l
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err = Open(Options{Path: path, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	l.f.Close() // every write now fails
	for range 3 {
		l.Record(Record{Method: "x"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logBuf.String(), "audit: write failed"); n != 1 {
		t.Errorf("log has %d write failures, want 1:\n%s", n, logBuf.String())
	}
}

// BenchmarkRecord: what queueing a line costs a call (the writer runs beside it;
// a full queue drops, which is the cheap path).
func BenchmarkRecord(b *testing.B) {
	l, err := Open(Options{Path: filepath.Join(b.TempDir(), "audit.jsonl")})
	if err != nil {
		b.Fatal(err)
	}
	r := Record{Method: "tools/call", Tool: "textkit_ping", Identity: "key:ci", Outcome: OutcomeOK,
		ArgsSHA256: strings.Repeat("ab", 32), DurationMS: 1.25}
	b.ReportAllocs()
	for b.Loop() {
		l.Record(r)
	}
	b.StopTimer()
	l.Close(context.Background())
	b.ReportMetric(float64(l.Dropped())/float64(b.N), "dropped/op")
}

// TestRefusedBounded: refusal lines are written up to MaxRefusedPerSecond at once
// and per second; the rest are counted, and the count is on the next refusal line
// written, so that lines written plus counts make every refusal.
func TestRefusedBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		l, err := Open(Options{Path: path, Queue: 1024})
		if err != nil {
			t.Fatal(err)
		}
		const flood = 3 * MaxRefusedPerSecond
		for range flood {
			l.Refused(Record{Reason: "missing_token", HTTPStatus: 401, Source: "192.0.2.7"})
		}
		time.Sleep(time.Second) // the bucket refills
		l.Refused(Record{Reason: "rate_limit", HTTPStatus: 429, Identity: "key:ci"})
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		lines := readLines(t, path)
		if len(lines) != MaxRefusedPerSecond+1 {
			t.Fatalf("%d lines for %d refusals at once and one a second later, want %d", len(lines), flood+1, MaxRefusedPerSecond+1)
		}
		var counted int64
		for i, r := range lines {
			if r.Method != MethodRefused || r.Reason == "" || r.HTTPStatus == 0 {
				t.Errorf("line %d = %+v, want a refusal with its reason and status", i, r)
			}
			counted += r.Dropped
		}
		if last := lines[len(lines)-1]; last.Reason != "rate_limit" || last.Identity != "key:ci" || last.Dropped != flood-MaxRefusedPerSecond {
			t.Errorf("the line after the flood = %+v, want rate_limit for key:ci with dropped %d", last, flood-MaxRefusedPerSecond)
		}
		if int64(len(lines))+counted != flood+1 {
			t.Errorf("lines %d + counted %d != %d refusals", len(lines), counted, flood+1)
		}
	})
}
