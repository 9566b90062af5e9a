package guest

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Level is a log level.
type Level int32

// Log levels.
const (
	LevelDebug Level = iota
	LevelInfo
	LevelNotice
	LevelWarning
	LevelError
)

// Errors of [Call.Elicit].
var (
	// ErrUnavailable: the client cannot be asked (it declared no elicitation capability).
	ErrUnavailable = errors.New("the client cannot be asked for input")
	// ErrUnsupported: the host does not know the request.
	ErrUnsupported = errors.New("the host does not support this request")
)

// backend carries a call's host requests: the ABI's imports on wasip1, a TestHost on
// other targets.
type backend interface {
	log(level Level, msg string)
	progress(done, total float64, msg string)
	request(method string, params []byte) ([]byte, error)
}

// Call is the running call, the tool's door to the client.
type Call struct {
	Tool    string // the tool's name, as registered; "" when Method is set
	Method  string // resources/read, prompts/get or completion/complete; "" in a tool call
	backend backend
}

// Log sends a log line to the client and the server log.
func (c *Call) Log(level Level, format string, args ...any) {
	c.backend.log(level, fmt.Sprintf(format, args...))
}

// Progress reports progress: done out of total (total <= 0 when unknown).
func (c *Call) Progress(done, total float64, message string) {
	c.backend.progress(done, total, message)
}

// ElicitResult is the user's answer.
type ElicitResult struct {
	Action  string         `json:"action"` // accept, decline or cancel
	Content map[string]any `json:"content,omitempty"`
}

// Accepted reports whether the user accepted.
func (r *ElicitResult) Accepted() bool { return r.Action == "accept" }

// Elicit asks the user for input: message says what and why, schema (a JSON Schema
// object of flat primitive properties, as MCP form elicitation requires) what to fill
// in. It blocks until the user answers.
func (c *Call) Elicit(message string, schema any) (*ElicitResult, error) {
	return roundTrip[ElicitResult](c, "elicit", struct {
		Message         string `json:"message"`
		RequestedSchema any    `json:"requestedSchema"`
	}{message, schema})
}

// ElicitRequest is one question of [Call.ElicitAll].
type ElicitRequest struct {
	Message         string `json:"message"`
	RequestedSchema any    `json:"requestedSchema"`
}

// ElicitAll asks the user several questions at once: the client sees them all pending
// together and may answer them in any order. It blocks until every one is answered
// and returns the answers in the order of the questions. A host older than this
// request answers ErrUnsupported; ask one by one with [Call.Elicit] then.
func (c *Call) ElicitAll(reqs ...ElicitRequest) ([]ElicitResult, error) {
	r, err := roundTrip[struct {
		Results []ElicitResult `json:"results"`
	}](c, "elicit_all", struct {
		Requests []ElicitRequest `json:"requests"`
	}{reqs})
	if err != nil {
		return nil, err
	}
	if len(r.Results) != len(reqs) {
		return nil, fmt.Errorf("elicit_all: %d answers to %d questions", len(r.Results), len(reqs))
	}
	return r.Results, nil
}

// StartTask says that the call's long part begins here. Where the server decides when
// a call becomes an MCP Task and the client can follow one, the client gets the task
// now and the rest of the call runs as its work; elsewhere (a client without tasks, a
// call that already is a task) nothing changes. It reports whether a task was
// started. Declare the tool with StartsTask.
func (c *Call) StartTask() (bool, error) {
	r, err := roundTrip[struct {
		Started bool `json:"started"`
	}](c, "task", struct{}{})
	if errors.Is(err, ErrUnsupported) || errors.Is(err, ErrUnavailable) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return r.Started, nil
}

// ProtocolError, returned by a tool, answers the call with this JSON-RPC error
// instead of a result: the request failed (a crashed backend, say), as opposed to a
// tool that ran and reports a failure with [Errorf]. Code must be -32603 or in
// -32099..-32000; the host turns anything else into an isError result.
type ProtocolError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *ProtocolError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// roundTrip sends a host request and decodes its reply into a new R.
func roundTrip[R any](c *Call, method string, params any) (*R, error) {
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encode %s request: %w", method, err)
	}
	reply, err := c.backend.request(method, b)
	if err != nil {
		return nil, err
	}
	r := new(R)
	if err := json.Unmarshal(reply, r); err != nil {
		return nil, fmt.Errorf("decode %s reply: %w", method, err)
	}
	return r, nil
}

// SampleRequest asks the client's language model for a completion (MCP
// sampling/createMessage). The client, and usually the user, decide whether and how.
type SampleRequest struct {
	Messages     []SampleMessage `json:"messages"`
	SystemPrompt string          `json:"systemPrompt,omitempty"`
	MaxTokens    int             `json:"maxTokens"`
	Temperature  float64         `json:"temperature,omitempty"`
}

// SampleMessage is one turn of the conversation sent for sampling.
type SampleMessage struct {
	Role    string  `json:"role"` // user or assistant
	Content Content `json:"content"`
}

// SampleResult is the model's answer.
type SampleResult struct {
	Role       string  `json:"role"`
	Content    Content `json:"content"`
	Model      string  `json:"model"`
	StopReason string  `json:"stopReason,omitempty"`
}

// Sample asks the client's model for a completion and blocks until it answers. It
// returns ErrUnavailable when the client declared no sampling capability.
func (c *Call) Sample(req SampleRequest) (*SampleResult, error) {
	return roundTrip[SampleResult](c, "sample", req)
}
