package canonjson

import (
	"bytes"
	"slices"
)

// fastCanonical is Canonical's one pass for the common document: no escape in any
// string, no key twice, nested within maxDepth. ok is false for anything else, which
// the decoder-based path (decodeCanonical) then writes or refuses with its error. The
// form is the same byte for byte (FuzzFastCanonical): a string without escapes, <, >,
// & or U+2028/U+2029 is what json.Marshal writes of its value.
func fastCanonical(doc []byte) (_ []byte, ok bool) {
	f := fast{b: doc}
	out, ok := f.value(make([]byte, 0, len(doc)), 0)
	if !ok {
		return nil, false
	}
	f.space()
	return out, f.i == len(f.b)
}

type fast struct {
	b []byte
	i int
}

func (f *fast) space() {
	for f.i < len(f.b) {
		switch f.b[f.i] {
		case ' ', '\t', '\n', '\r':
			f.i++
		default:
			return
		}
	}
}

func (f *fast) value(out []byte, depth int) ([]byte, bool) {
	if depth > maxDepth {
		return nil, false
	}
	f.space()
	if f.i >= len(f.b) {
		return nil, false
	}
	switch c := f.b[f.i]; {
	case c == '{':
		return f.object(out, depth)
	case c == '[':
		return f.array(out, depth)
	case c == '"':
		s, ok := f.str()
		if !ok {
			return nil, false
		}
		return append(append(append(out, '"'), s...), '"'), true
	case c == 't':
		return f.literal(out, "true")
	case c == 'f':
		return f.literal(out, "false")
	case c == 'n':
		return f.literal(out, "null")
	case c == '-' || '0' <= c && c <= '9':
		start := f.i
		if !f.number() {
			return nil, false
		}
		return append(out, f.b[start:f.i]...), true
	}
	return nil, false
}

func (f *fast) literal(out []byte, lit string) ([]byte, bool) {
	if !bytes.HasPrefix(f.b[f.i:], []byte(lit)) {
		return nil, false
	}
	f.i += len(lit)
	return append(out, lit...), true
}

// str scans a string that json.Marshal writes as it is, and returns its text.
func (f *fast) str() ([]byte, bool) {
	f.i++ // '"'
	start := f.i
	for ; f.i < len(f.b); f.i++ {
		switch c := f.b[f.i]; {
		case c == '"':
			f.i++
			return f.b[start : f.i-1], true
		case c < 0x20 || c == '\\' || c == '<' || c == '>' || c == '&':
			return nil, false
		case c == 0xE2 && f.i+2 < len(f.b) && f.b[f.i+1] == 0x80 && f.b[f.i+2]&^1 == 0xA8: // U+2028, U+2029
			return nil, false
		}
	}
	return nil, false
}

func (f *fast) number() bool {
	b := f.b
	digits := func() int {
		n := 0
		for f.i < len(b) && '0' <= b[f.i] && b[f.i] <= '9' {
			f.i++
			n++
		}
		return n
	}
	if b[f.i] == '-' {
		f.i++
	}
	switch {
	case f.i < len(b) && b[f.i] == '0':
		f.i++
	case digits() == 0:
		return false
	}
	if f.i < len(b) && b[f.i] == '.' {
		f.i++
		if digits() == 0 {
			return false
		}
	}
	if f.i < len(b) && (b[f.i] == 'e' || b[f.i] == 'E') {
		f.i++
		if f.i < len(b) && (b[f.i] == '+' || b[f.i] == '-') {
			f.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

func (f *fast) object(out []byte, depth int) ([]byte, bool) {
	f.i++ // '{'
	type member struct {
		key        []byte
		start, end int // the member's canonical text in out
	}
	var members []member
	open := len(out)
	out = append(out, '{')
	f.space()
	if f.i < len(f.b) && f.b[f.i] == '}' {
		f.i++
		return append(out, '}'), true
	}
	for {
		f.space()
		if f.i >= len(f.b) || f.b[f.i] != '"' {
			return nil, false
		}
		start := len(out)
		if len(members) > 0 {
			out = append(out, ',')
			start++
		}
		key, ok := f.str()
		if !ok {
			return nil, false
		}
		out = append(append(append(out, '"'), key...), '"', ':')
		f.space()
		if f.i >= len(f.b) || f.b[f.i] != ':' {
			return nil, false
		}
		f.i++
		if out, ok = f.value(out, depth+1); !ok {
			return nil, false
		}
		members = append(members, member{key, start, len(out)})
		f.space()
		if f.i >= len(f.b) {
			return nil, false
		}
		if f.b[f.i] == ',' {
			f.i++
			continue
		}
		if f.b[f.i] != '}' {
			return nil, false
		}
		f.i++
		break
	}
	sorted := slices.IsSortedFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	if !sorted {
		slices.SortFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	}
	for i := 1; i < len(members); i++ {
		if bytes.Equal(members[i-1].key, members[i].key) {
			return nil, false // a key twice: decodeCanonical says so
		}
	}
	if !sorted {
		body := make([]byte, 0, len(out)-open)
		body = append(body, '{')
		for i, m := range members {
			if i > 0 {
				body = append(body, ',')
			}
			body = append(body, out[m.start:m.end]...)
		}
		out = append(out[:open], body...)
	}
	return append(out, '}'), true
}

func (f *fast) array(out []byte, depth int) ([]byte, bool) {
	f.i++ // '['
	out = append(out, '[')
	f.space()
	if f.i < len(f.b) && f.b[f.i] == ']' {
		f.i++
		return append(out, ']'), true
	}
	for n := 0; ; n++ {
		if n > 0 {
			out = append(out, ',')
		}
		var ok bool
		if out, ok = f.value(out, depth+1); !ok {
			return nil, false
		}
		f.space()
		if f.i >= len(f.b) {
			return nil, false
		}
		if f.b[f.i] == ']' {
			f.i++
			return append(out, ']'), true
		}
		if f.b[f.i] != ',' {
			return nil, false
		}
		f.i++
	}
}
