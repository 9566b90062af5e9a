//go:build !wasip1

package guest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// TestHost stands in for mcp-wasmhost when a plugin's tools run natively under
// `go test`. The zero value is ready: it records logs and progress and answers
// elicitations with ErrUnavailable, as a client without the capability would.
type TestHost struct {
	// Elicit answers Call.Elicit; nil answers ErrUnavailable.
	Elicit func(message string, schema json.RawMessage) (*ElicitResult, error)
	// Sample answers Call.Sample; nil answers ErrUnavailable.
	Sample func(SampleRequest) (*SampleResult, error)
	// Ask answers each request of Call.Ask (and Call.ListRoots) with a value that
	// encodes as the client's result; ErrUnavailable leaves the request unasked.
	// nil: elicitations go to Elicit, sampling to Sample, and roots/list is
	// unavailable.
	Ask func(key string, req InputRequest) (any, error)

	// ResumeFrom is what Call.Checkpoint answers: a checkpoint to start from, as if
	// the task had been resumed once (nil: a first run).
	ResumeFrom []byte

	mu       sync.Mutex
	logs     []LogEntry
	progress []ProgressEntry
	updated  []string
	taskLog  strings.Builder
	saved    [][]byte
}

// TaskLog returns what the call appended to its task log.
func (h *TestHost) TaskLog() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.taskLog.String()
}

// Checkpoints returns the checkpoints the call saved, in order.
func (h *TestHost) Checkpoints() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]byte(nil), h.saved...)
}

// Updated returns the URIs announced with Call.ResourceUpdated so far.
func (h *TestHost) Updated() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.updated...)
}

// LogEntry is one recorded Call.Log.
type LogEntry struct {
	Level   Level
	Message string
}

// ProgressEntry is one recorded Call.Progress.
type ProgressEntry struct {
	Done, Total float64
	Message     string
}

// Logs returns the log lines recorded so far.
func (h *TestHost) Logs() []LogEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]LogEntry(nil), h.logs...)
}

// Progress returns the progress reports recorded so far.
func (h *TestHost) Progress() []ProgressEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]ProgressEntry(nil), h.progress...)
}

func (h *TestHost) log(level Level, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs = append(h.logs, LogEntry{level, msg})
}

func (h *TestHost) progressReport(done, total float64, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.progress = append(h.progress, ProgressEntry{done, total, msg})
}

// codeInvalidParams is JSON-RPC's "invalid params", the server's answer to arguments
// its input schema refuses.
const codeInvalidParams = -32602

type testBackend struct{ h *TestHost }

func (b testBackend) log(level Level, msg string)              { b.h.log(level, msg) }
func (b testBackend) progress(done, total float64, msg string) { b.h.progressReport(done, total, msg) }

func (b testBackend) request(method string, params []byte) ([]byte, error) {
	switch method {
	case "task":
		return []byte(`{"started":false}`), nil
	case "task_log":
		var p struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		b.h.mu.Lock()
		defer b.h.mu.Unlock()
		b.h.taskLog.WriteString(p.Text)
		if p.Text != "" && !strings.HasSuffix(p.Text, "\n") {
			b.h.taskLog.WriteByte('\n')
		}
		return fmt.Appendf(nil, `{"end":%d}`, b.h.taskLog.Len()), nil
	case "checkpoint_save":
		var p struct {
			Data []byte `json:"data"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		b.h.mu.Lock()
		defer b.h.mu.Unlock()
		b.h.saved = append(b.h.saved, p.Data)
		return []byte("{}"), nil
	case "checkpoint_load":
		resumes := 0
		if b.h.ResumeFrom != nil {
			resumes = 1
		}
		return json.Marshal(map[string]any{"data": b.h.ResumeFrom, "resumes": resumes})
	case "elicit_all":
		if b.h.Elicit == nil {
			return nil, ErrUnavailable
		}
		var p struct {
			Requests []struct {
				Message         string          `json:"message"`
				RequestedSchema json.RawMessage `json:"requestedSchema"`
			} `json:"requests"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		var out struct {
			Results []*ElicitResult `json:"results"`
		}
		for _, q := range p.Requests {
			r, err := b.h.Elicit(q.Message, q.RequestedSchema)
			if err != nil {
				return nil, err
			}
			out.Results = append(out.Results, r)
		}
		return json.Marshal(out)
	case "elicit":
	case "resource_updated":
		var p struct {
			URI string `json:"uri"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		b.h.mu.Lock()
		b.h.updated = append(b.h.updated, p.URI)
		b.h.mu.Unlock()
		return []byte("{}"), nil
	case "close_stream":
		return nil, ErrUnavailable
	case "input":
		return b.input(params)
	case "sample":
		if b.h.Sample == nil {
			return nil, ErrUnavailable
		}
		var req SampleRequest
		if err := json.Unmarshal(params, &req); err != nil {
			return nil, err
		}
		r, err := b.h.Sample(req)
		if err != nil {
			return nil, err
		}
		return json.Marshal(r)
	default:
		return nil, ErrUnsupported
	}
	if b.h.Elicit == nil {
		return nil, ErrUnavailable
	}
	var p struct {
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	r, err := b.h.Elicit(p.Message, p.RequestedSchema)
	if err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// CallTool runs a registered tool natively, as the host would: args is encoded to JSON,
// checked against the tool's input schema ([CheckArguments]; arguments the server
// would refuse return a [ProtocolError] with code -32602, as a client gets it, and the
// tool does not run) and decoded into the tool's argument type, and the result comes
// back as the client would see it. A tool that answers with a [ProtocolError] returns
// it as the error. A nil h is a zero TestHost.
func CallTool(h *TestHost, name string, args any) (*Result, error) {
	if h == nil {
		h = &TestHost{}
	}
	a, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("encode arguments: %w", err)
	}
	if string(a) == "null" {
		a = []byte("{}") // the server reads absent arguments as {}
	}
	if r, ok := tools[name]; ok {
		if err := CheckArguments(r.tool.InputSchema, a); errors.Is(err, ErrUncheckedKeyword) {
			return nil, fmt.Errorf("tool %q: %w", name, err)
		} else if err != nil {
			return nil, &ProtocolError{Code: codeInvalidParams, Message: fmt.Sprintf("invalid arguments for tool %q: %v", name, err)}
		}
	}
	input, err := json.Marshal(struct {
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	}{name, a})
	if err != nil {
		return nil, err
	}
	out, err := dispatch(testBackend{h}, input)
	if err != nil {
		return nil, err
	}
	var r struct {
		Result
		Error *ProtocolError `json:"error"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("decode result: %w", err)
	}
	if r.Error != nil {
		return nil, r.Error
	}
	return &r.Result, nil
}

// Manifest returns the manifest the plugin would give the host: its tools and schemas.
func Manifest() ([]byte, error) {
	return manifest()
}

// input answers an "input" request as mcp-wasmhost does: by key, the unanswerable
// ones listed as unavailable.
func (b testBackend) input(params []byte) ([]byte, error) {
	var p struct {
		Requests map[string]struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	out := Answers{Responses: map[string]json.RawMessage{}}
	for key, r := range p.Requests {
		res, err := b.answer(key, InputRequest{Method: r.Method, Params: r.Params})
		if errors.Is(err, ErrUnavailable) {
			out.Unavailable = append(out.Unavailable, key)
			continue
		}
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(res)
		if err != nil {
			return nil, err
		}
		out.Responses[key] = raw
	}
	if len(out.Responses) == 0 {
		return nil, ErrUnavailable
	}
	slices.Sort(out.Unavailable)
	return json.Marshal(out)
}

func (b testBackend) answer(key string, req InputRequest) (any, error) {
	if b.h.Ask != nil {
		return b.h.Ask(key, req)
	}
	raw, _ := req.Params.(json.RawMessage)
	switch req.Method {
	case "elicitation/create":
		if b.h.Elicit == nil {
			return nil, ErrUnavailable
		}
		var q struct {
			Message         string          `json:"message"`
			RequestedSchema json.RawMessage `json:"requestedSchema"`
		}
		if err := json.Unmarshal(raw, &q); err != nil {
			return nil, err
		}
		return b.h.Elicit(q.Message, q.RequestedSchema)
	case "sampling/createMessage":
		if b.h.Sample == nil {
			return nil, ErrUnavailable
		}
		var sr SampleRequest
		if err := json.Unmarshal(raw, &sr); err != nil {
			return nil, err
		}
		return b.h.Sample(sr)
	}
	return nil, ErrUnavailable
}
