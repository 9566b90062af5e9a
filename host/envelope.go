package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The JSON-RPC envelope of a stdio line is decoded here, in one pass, instead of by
// json.Valid followed by jsonrpc.DecodeMessage: go-sdk v1.8.0's DecodeMessage runs its
// internal json.Unmarshal twice per request (the envelope, then the method name), and
// each Unmarshal builds a new segmentio Decoder with a fresh 32 KiB buffer
// (docs/upstream/go-sdk-json-decoder.md). The scanner below validates the whole line
// as json.Valid does, enforces MaxMessageDepth as nesting does, and records the raw
// bytes of the six top-level members a JSON-RPC message has. A message in the usual
// shape (jsonrpc "2.0", an integer or plain string id, a plain string method, no error
// member) is built here; anything else (escaped keys or strings, a repeated member,
// an id that is not a small integer, an error object, a wrong version) is handed to
// jsonrpc.DecodeMessage, so every refusal and every message is exactly what the SDK
// path gives. FuzzDecodeLineDifferential holds the two paths to the same output.

// envelope holds the raw top-level members of one JSON-RPC message object; a nil
// field was absent.
type envelope struct {
	version, id, method, params, result, errObj []byte
	// unusual is set when a key has an escape or one of the six members repeats:
	// the SDK decoder decides those.
	unusual bool
	seen    int // member bits
}

// member records one top-level member of the message.
func (env *envelope) member(key []byte, escaped bool, raw []byte) {
	if escaped {
		env.unusual = true
	}
	var field *[]byte
	var bit int
	switch string(key) {
	case "jsonrpc":
		field, bit = &env.version, seenVersion
	case "id":
		field, bit = &env.id, seenID
	case "method":
		field, bit = &env.method, seenMethod
	case "params":
		field, bit = &env.params, seenParams
	case "result":
		field, bit = &env.result, seenResult
	case "error":
		field, bit = &env.errObj, seenError
	default:
		return
	}
	if env.seen&bit != 0 {
		env.unusual = true
	}
	env.seen |= bit
	*field = raw
}

// member bits, to notice a repeated member.
const (
	seenVersion = 1 << iota
	seenID
	seenMethod
	seenParams
	seenResult
	seenError
)

// scanResult is how a scan ended.
type scanResult int

const (
	scanOK      scanResult = iota
	scanInvalid            // not JSON
	scanTooDeep            // a valid prefix nests deeper than MaxMessageDepth
)

// decodeLine turns one line into a JSON-RPC message, or into the error answer for a
// line that is not one: -32700 for bytes that are not JSON, -32600 for JSON that is not
// a single JSON-RPC 2.0 message (or nests deeper than MaxMessageDepth), with the
// request's id where it can be read and null otherwise.
func decodeLine(line []byte) (jsonrpc.Message, []byte) {
	var env envelope
	s := scanner{b: line}
	s.ws()
	isObject := s.i < len(s.b) && s.b[s.i] == '{'
	var res scanResult
	if isObject {
		res = s.object(0, env.member)
	} else {
		res = s.value(0)
	}
	if res == scanOK {
		if s.ws(); s.i != len(s.b) {
			res = scanInvalid // a second value, or trailing bytes
		}
	}
	// nesting decides between the two refusals of a line that is not JSON, since the
	// depth refusal comes first whatever follows the point where the scan stopped.
	if res == scanTooDeep || (res == scanInvalid && nesting(line) > MaxMessageDepth) {
		return nil, errorLine(peekID(line), codeInvalidRequest,
			fmt.Sprintf("message refused: nested deeper than %d levels", MaxMessageDepth))
	}
	if res == scanInvalid {
		return nil, errorLine(nil, codeParseError, "parse error: the line is not one JSON value")
	}
	if !isObject {
		msg := "invalid request: not a JSON-RPC message object"
		if bytes.TrimSpace(line)[0] == '[' {
			msg = "invalid request: JSON-RPC batches are not supported"
		}
		return nil, errorLine(nil, codeInvalidRequest, msg)
	}
	if msg, ok := env.message(); ok {
		return msg, nil
	}
	msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(line))
	if err != nil {
		return nil, errorLine(peekID(line), codeInvalidRequest, "invalid request: "+err.Error())
	}
	return msg, nil
}

// message builds the message env holds when it is in the usual shape, exactly as
// jsonrpc.DecodeMessage would; ok is false for anything else.
func (env *envelope) message() (msg jsonrpc.Message, ok bool) {
	if env.unusual || env.errObj != nil || string(env.version) != `"2.0"` {
		return nil, false
	}
	var id jsonrpc.ID
	if env.id != nil {
		v, ok := plainID(env.id)
		if !ok {
			return nil, false
		}
		id, _ = jsonrpc.MakeID(v) // v is nil, a float64 or a string
	}
	if env.method == nil {
		if !id.IsValid() {
			return nil, false // the SDK's "invalid request" error
		}
		return &jsonrpc.Response{ID: id, Result: env.result}, true
	}
	method, ok := plainString(env.method)
	if !ok {
		return nil, false
	}
	return &jsonrpc.Request{ID: id, Method: method, Params: env.params}, true
}

// plainID reads an id written as null, a plain string, or an integer of at most 15
// digits (exact as a float64, which is how the SDK decodes it).
func plainID(raw []byte) (any, bool) {
	switch {
	case string(raw) == "null":
		return nil, true
	case raw[0] == '"':
		return plainString(raw)
	}
	digits := raw
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 {
		return nil, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return nil, false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return nil, false
	}
	return float64(n), true
}

// plainString reads a JSON string that has no escapes and is valid UTF-8, which
// decodes to its bytes.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}

// scanner validates JSON as encoding/json's json.Valid does (any byte at or above
// 0x20 is allowed in a string, as there), without recursing deeper than
// MaxMessageDepth+1.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans one value at s.i; depth is how many containers enclose it.
func (s *scanner) value(depth int) scanResult {
	if s.i >= len(s.b) {
		return scanInvalid
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(depth, nil)
	case c == '[':
		return s.array(depth)
	case c == '"':
		_, ok := s.str()
		return okOrInvalid(ok)
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return okOrInvalid(s.number())
	}
	return scanInvalid
}

func okOrInvalid(ok bool) scanResult {
	if ok {
		return scanOK
	}
	return scanInvalid
}

func (s *scanner) literal(lit string) scanResult {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return scanInvalid
	}
	s.i += len(lit)
	return scanOK
}

// object scans an object at s.i, calling member (if not nil) with each member's key
// as written (escaped: it has a backslash) and its raw value.
func (s *scanner) object(depth int, member func(key []byte, escaped bool, raw []byte)) scanResult {
	if depth++; depth > MaxMessageDepth {
		return scanTooDeep
	}
	s.i++ // '{'
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return scanOK
	}
	for {
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return scanInvalid
		}
		keyStart := s.i
		escaped, ok := s.str()
		if !ok {
			return scanInvalid
		}
		key := s.b[keyStart+1 : s.i-1]
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return scanInvalid
		}
		s.i++
		s.ws()
		start := s.i
		if r := s.value(depth); r != scanOK {
			return r
		}
		if member != nil {
			member(key, escaped, s.b[start:s.i:s.i])
		}
		if done, r := s.next('}'); done {
			return r
		}
	}
}

func (s *scanner) array(depth int) scanResult {
	if depth++; depth > MaxMessageDepth {
		return scanTooDeep
	}
	s.i++ // '['
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return scanOK
	}
	for {
		if r := s.value(depth); r != scanOK {
			return r
		}
		if done, r := s.next(']'); done {
			return r
		}
	}
}

// next reads what follows a member or an element: a comma and the space after it (not
// done), or close, which ends the object or array (done, scanOK); anything else is
// invalid (done).
func (s *scanner) next(close byte) (done bool, r scanResult) {
	s.ws()
	if s.i >= len(s.b) {
		return true, scanInvalid
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		s.ws()
		return false, scanOK
	case close:
		s.i++
		return true, scanOK
	}
	return true, scanInvalid
}

// str scans a string at s.i (which is '"'); escaped reports a backslash in it.
func (s *scanner) str() (escaped, ok bool) {
	s.i++
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return escaped, true
		case c < 0x20:
			return escaped, false
		case c == '\\':
			escaped = true
			s.i++
			if s.i >= len(s.b) {
				return escaped, false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if len(s.b)-s.i < 5 {
					return escaped, false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !isHex(h) {
						return escaped, false
					}
				}
				s.i += 5
			default:
				return escaped, false
			}
		default:
			s.i++
		}
	}
	return escaped, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at s.i.
func (s *scanner) number() bool {
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(s.b):
		return false
	case s.b[s.i] == '0':
		s.i++
	case s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// peekID reads the top-level "id" of what may be the start of a JSON-RPC message. It
// returns the id as written when it is a string or an integer and comes before
// anything unreadable, and nil otherwise.
func peekID(b []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if key != "id" {
			continue
		}
		var n json.Number
		var str string
		if json.Unmarshal(v, &str) == nil {
			return v
		}
		if json.Unmarshal(v, &n) == nil {
			if _, err := n.Int64(); err == nil {
				return v
			}
		}
		return nil
	}
	return nil
}

// members calls fn with each member of the JSON object raw (as scanned by decodeLine:
// valid JSON), and reports false if raw is not an object.
func members(raw []byte, fn func(key []byte, escaped bool, raw []byte)) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	s := scanner{b: raw}
	return s.object(0, fn) == scanOK
}
