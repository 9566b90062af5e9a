// Command toolbox is a bundled mcp-wasmhost plugin written with the Go guest SDK: JSON
// utilities, a slow job that reports progress, files from a directory the operator
// granted read-only, and a note writer that asks the user before it writes.
//
// Build (from the repository root): make plugins
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	guest "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"
)

// Guest paths of the directories config.toml grants.
const (
	docsDir  = "/docs"  // read-only
	notesDir = "/notes" // writable
)

// maxReadBytes caps what read_file returns.
const maxReadBytes = 256 << 10

func main() {}

var readOnly = &guest.Annotations{ReadOnlyHint: true, IdempotentHint: true}

func init() {
	guest.Add(guest.Tool{
		Name: "json_format", Title: "Format JSON", Annotations: readOnly,
		Description: "Validates a JSON document and re-indents it (indent 0 makes it compact). Invalid JSON is reported with its line and column.",
	}, jsonFormat)
	guest.Add(guest.Tool{
		Name: "json_query", Title: "Query JSON", Annotations: readOnly,
		Description: `Extracts the value at a JSON Pointer (RFC 6901, e.g. "/items/0/name") from a JSON document.`,
	}, jsonQuery)
	guest.Add(guest.Tool{
		Name: "slow_count", Title: "Count slowly", TaskSupport: guest.TaskOptional, Annotations: readOnly,
		Description: "Counts from 1 to `to`, waiting delay_ms between steps and reporting progress at each: a stand-in for a long job.",
	}, slowCount)
	guest.Add(guest.Tool{
		Name: "timer", Title: "Timer", TaskSupport: guest.TaskRequired, Annotations: readOnly,
		Description: "Waits the given number of seconds, reporting progress every second, then returns the label: a long job that clients must run as a task.",
	}, timer)
	guest.Add(guest.Tool{
		Name: "list_files", Title: "List files", Annotations: readOnly,
		Description: "Lists the files under a directory of the read-only documents folder the operator granted (" + docsDir + ").",
	}, listFiles)
	guest.Add(guest.Tool{
		Name: "read_file", Title: "Read a file", Annotations: readOnly,
		Description: "Reads a UTF-8 text file (at most 256 KiB) from the read-only documents folder the operator granted (" + docsDir + ").",
	}, readFile)
	guest.Add(guest.Tool{
		Name: "summarize", Title: "Summarize", TaskSupport: guest.TaskOptional, Annotations: readOnly,
		Description: "Summarizes a text in at most max_words words, using the client's own language model (MCP sampling): the client decides whether and with which model.",
	}, summarize)
	destructive := true
	guest.Add(guest.Tool{
		Name: "write_note", Title: "Write a note", TaskSupport: guest.TaskOptional,
		Annotations: &guest.Annotations{DestructiveHint: &destructive},
		Description: "Writes a text note into the notes folder the operator granted (" + notesDir + "), after asking the user to confirm.",
	}, writeNote)
}

type jsonFormatArgs struct {
	JSON   string `json:"json" jsonschema:"the JSON document"`
	Indent *int   `json:"indent,omitempty" jsonschema:"spaces per level, 0-8 (default 2; 0 is compact)"`
}

func jsonFormat(_ *guest.Call, in jsonFormatArgs) (*guest.Result, error) {
	indent := 2
	if in.Indent != nil {
		indent = *in.Indent
	}
	if indent < 0 || indent > 8 {
		return guest.Errorf("indent must be between 0 and 8, got %d", indent), nil
	}
	if err := checkJSON(in.JSON); err != nil {
		return guest.Errorf("%v", err), nil
	}
	var out bytes.Buffer
	var err error
	if indent == 0 {
		err = json.Compact(&out, []byte(in.JSON))
	} else {
		err = json.Indent(&out, []byte(in.JSON), "", strings.Repeat(" ", indent))
	}
	if err != nil {
		return guest.Errorf("%v", err), nil
	}
	return guest.Text(out.String()), nil
}

// checkJSON reports where a document stops being valid JSON.
func checkJSON(doc string) error {
	var v any
	err := json.Unmarshal([]byte(doc), &v)
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		// Offset counts the bytes read, including the offending one.
		at := max(int(syn.Offset)-1, 0)
		line := 1 + strings.Count(doc[:at], "\n")
		col := at - strings.LastIndex(doc[:at], "\n")
		return fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, syn)
	}
	if err != nil {
		return fmt.Errorf("invalid JSON: %v", err)
	}
	return nil
}

type jsonQueryArgs struct {
	JSON    string `json:"json" jsonschema:"the JSON document"`
	Pointer string `json:"pointer" jsonschema:"a JSON Pointer such as /items/0/name; empty selects the whole document"`
}

func jsonQuery(_ *guest.Call, in jsonQueryArgs) (*guest.Result, error) {
	if err := checkJSON(in.JSON); err != nil {
		return guest.Errorf("%v", err), nil
	}
	d := json.NewDecoder(strings.NewReader(in.JSON))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return guest.Errorf("invalid JSON: %v", err), nil
	}
	if in.Pointer != "" && !strings.HasPrefix(in.Pointer, "/") {
		return guest.Errorf("a JSON Pointer starts with %q: %q", "/", in.Pointer), nil
	}
	at := ""
	for _, tok := range strings.Split(in.Pointer, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		at += "/" + tok
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return guest.Errorf("no member %q at %s", tok, at), nil
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) || (tok != "0" && strings.HasPrefix(tok, "0")) {
				return guest.Errorf("no element %q at %s (array of %d)", tok, at, len(c)), nil
			}
			v = c[i]
		default:
			return guest.Errorf("cannot descend into a %T at %s", v, at), nil
		}
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return guest.Text(string(b)), nil
}

type slowCountArgs struct {
	To      int `json:"to" jsonschema:"count up to this number (1-1000)"`
	DelayMS int `json:"delay_ms,omitempty" jsonschema:"milliseconds to wait between steps (0-10000, default 100)"`
}

func slowCount(c *guest.Call, in slowCountArgs) (*guest.Result, error) {
	if in.To < 1 || in.To > 1000 {
		return guest.Errorf("to must be between 1 and 1000, got %d", in.To), nil
	}
	delay := 100
	if in.DelayMS != 0 {
		delay = in.DelayMS
	}
	if delay < 0 || delay > 10000 {
		return guest.Errorf("delay_ms must be between 0 and 10000, got %d", delay), nil
	}
	start := time.Now()
	for i := 1; i <= in.To; i++ {
		time.Sleep(time.Duration(delay) * time.Millisecond)
		c.Progress(float64(i), float64(in.To), fmt.Sprintf("counted %d of %d", i, in.To))
	}
	return guest.Structured(map[string]any{
		"counted":    in.To,
		"elapsed_ms": time.Since(start).Milliseconds(),
	})
}

type timerArgs struct {
	Seconds int    `json:"seconds" jsonschema:"how long to wait, 0-3600"`
	Label   string `json:"label,omitempty" jsonschema:"returned when the time is up (default: done)"`
}

func timer(c *guest.Call, in timerArgs) (*guest.Result, error) {
	if in.Seconds < 0 || in.Seconds > 3600 {
		return guest.Errorf("seconds must be between 0 and 3600, got %d", in.Seconds), nil
	}
	if in.Label == "" {
		in.Label = "done"
	}
	for i := 1; i <= in.Seconds; i++ {
		time.Sleep(time.Second)
		c.Progress(float64(i), float64(in.Seconds), fmt.Sprintf("%d of %d seconds", i, in.Seconds))
	}
	return guest.Text(in.Label), nil
}

type summarizeArgs struct {
	Text     string `json:"text" jsonschema:"the text to summarize"`
	MaxWords int    `json:"max_words,omitempty" jsonschema:"the longest summary wanted, 5-500 words (default 50)"`
}

func summarize(c *guest.Call, in summarizeArgs) (*guest.Result, error) {
	if in.MaxWords == 0 {
		in.MaxWords = 50
	}
	if in.MaxWords < 5 || in.MaxWords > 500 {
		return guest.Errorf("max_words must be between 5 and 500, got %d", in.MaxWords), nil
	}
	if strings.TrimSpace(in.Text) == "" {
		return guest.Errorf("text is empty"), nil
	}
	r, err := c.Sample(guest.SampleRequest{
		SystemPrompt: fmt.Sprintf("Summarize the user's text in at most %d words. Answer with the summary only.", in.MaxWords),
		Messages:     []guest.SampleMessage{{Role: "user", Content: guest.Content{Type: "text", Text: in.Text}}},
		MaxTokens:    in.MaxWords * 4,
	})
	if err != nil {
		return guest.Errorf("could not ask the client's model: %v", err), nil
	}
	if r.Content.Type != "text" {
		return guest.Errorf("the model answered with %s content, not text", r.Content.Type), nil
	}
	return guest.Text(r.Content.Text), nil
}

type listFilesArgs struct {
	Dir string `json:"dir,omitempty" jsonschema:"directory relative to the documents folder (default: its root)"`
}

func listFiles(_ *guest.Call, in listFilesArgs) (*guest.Result, error) {
	p, res := docsPath(in.Dir)
	if res != nil {
		return res, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return fsError(in.Dir, err), nil
	}
	var lines []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			name += "/"
		} else if info, err := e.Info(); err == nil {
			name += fmt.Sprintf("\t%d bytes", info.Size())
		}
		lines = append(lines, name)
	}
	sort.Strings(lines)
	if len(lines) == 0 {
		return guest.Text("(empty)"), nil
	}
	return guest.Text(strings.Join(lines, "\n")), nil
}

type readFileArgs struct {
	Path string `json:"path" jsonschema:"file path relative to the documents folder"`
}

func readFile(_ *guest.Call, in readFileArgs) (*guest.Result, error) {
	p, res := docsPath(in.Path)
	if res != nil {
		return res, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return fsError(in.Path, err), nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
	if err != nil {
		return fsError(in.Path, err), nil
	}
	if len(b) > maxReadBytes {
		return guest.Errorf("%s is larger than %d KiB", in.Path, maxReadBytes>>10), nil
	}
	if !utf8.Valid(b) {
		return guest.Errorf("%s is not UTF-8 text", in.Path), nil
	}
	return guest.Text(string(b)), nil
}

type writeNoteArgs struct {
	Name string `json:"name" jsonschema:"file name of the note, such as todo.txt (letters, digits, . _ -)"`
	Text string `json:"text" jsonschema:"the note's text"`
}

func writeNote(c *guest.Call, in writeNoteArgs) (*guest.Result, error) {
	if !validNoteName(in.Name) {
		return guest.Errorf("note name %q: use 1-64 letters, digits, '.', '_' or '-', not starting with '.'", in.Name), nil
	}
	target := path.Join(notesDir, in.Name)
	verb := "Create"
	if _, err := os.Stat(target); err == nil {
		verb = "Overwrite"
	}
	answer, err := c.Elicit(
		fmt.Sprintf("%s note %q with %d bytes?", verb, in.Name, len(in.Text)),
		map[string]any{
			"type": "object",
			"properties": map[string]any{
				"confirm": map[string]any{"type": "boolean", "title": "Write the note", "default": true},
			},
			"required": []string{"confirm"},
		})
	if err != nil {
		return guest.Errorf("could not ask for confirmation, nothing written: %v", err), nil
	}
	if !answer.Accepted() || answer.Content["confirm"] != true {
		return guest.Text(fmt.Sprintf("Not written: the user answered %q.", answer.Action)), nil
	}
	if err := os.WriteFile(target, []byte(in.Text), 0o644); err != nil {
		return fsError(in.Name, err), nil
	}
	c.Log(guest.LevelInfo, "wrote note %s (%d bytes)", in.Name, len(in.Text))
	return guest.Text(fmt.Sprintf("%s note %s (%d bytes).", map[string]string{"Create": "Created", "Overwrite": "Overwrote"}[verb], in.Name, len(in.Text))), nil
}

func validNoteName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '.' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// docsPath maps a relative path into the documents folder, refusing escapes.
func docsPath(rel string) (string, *guest.Result) {
	if path.IsAbs(rel) || !fs.ValidPath(path.Clean("./"+rel)) {
		return "", guest.Errorf("path %q must be relative to the documents folder and stay inside it", rel)
	}
	return path.Join(docsDir, path.Clean("./"+rel)), nil
}

func fsError(p string, err error) *guest.Result {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return guest.Errorf("%s does not exist (or the operator granted no such folder)", p)
	case errors.Is(err, fs.ErrPermission):
		return guest.Errorf("%s: permission denied (the folder is read-only or not granted)", p)
	}
	return guest.Errorf("%s: %v", p, err)
}
