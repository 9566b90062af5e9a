package guest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A task's journal (docs/ABI.md "Task logs and checkpoints"): lines a client reads
// while the task runs, and the checkpoint a resumable tool starts again from after
// its server or worker stopped.

// AppendLog appends lines to the call's task log, the resource
// mcp-wasmhost://tasks/{taskId}/log that the task's owner reads while it runs (and
// is told of as it grows). A last line without '\n' gets one. Only a task has a log:
// in a plain call it returns an error. The log keeps its last [tasks] max_log_kib
// (default 256 KiB); older lines are dropped.
func (c *Call) AppendLog(lines string) error {
	_, err := roundTrip[struct {
		End int64 `json:"end"`
	}](c, "task_log", map[string]string{"text": lines})
	return err
}

// Logf appends one formatted line to the call's task log (see AppendLog).
func (c *Call) Logf(format string, args ...any) error {
	line := fmt.Sprintf(format, args...)
	if strings.ContainsRune(line, '\n') {
		line = strings.ReplaceAll(strings.TrimRight(line, "\n"), "\n", " ")
	}
	return c.AppendLog(line + "\n")
}

// LogJSON appends v as one line of JSON to the call's task log (see AppendLog).
func (c *Call) LogJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode log line: %w", err)
	}
	return c.AppendLog(string(b) + "\n")
}

// SaveCheckpoint stores data (at most 1 MiB, or [tasks] max_checkpoint_kib) as the
// point a resumed task starts from, in one commit. Only a tool that declares
// execution.resumable (ToolOptions.Resumable) has checkpoints.
func (c *Call) SaveCheckpoint(data []byte) error {
	_, err := roundTrip[struct{}](c, "checkpoint_save", map[string][]byte{"data": data})
	return err
}

// Checkpoint returns what the call starts from: the last checkpoint the task saved
// before its server or worker stopped (nil on its first run), and how many times it
// has been resumed.
func (c *Call) Checkpoint() (data []byte, resumes int, err error) {
	r, err := roundTrip[struct {
		Data    []byte `json:"data"`
		Resumes int    `json:"resumes"`
	}](c, "checkpoint_load", struct{}{})
	if err != nil {
		return nil, 0, err
	}
	return r.Data, r.Resumes, nil
}
