package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"
)

// ErrDuplicateKey reports an object with a key twice.
var ErrDuplicateKey = errors.New("duplicate object key")

// ErrLoneSurrogate reports a string with an escaped UTF-16 surrogate that is not half
// of a pair.
var ErrLoneSurrogate = errors.New("string has an escaped lone surrogate")

// Canonical returns doc's canonical form. doc must be one JSON value in valid UTF-8
// (space around it is allowed).
func Canonical(doc []byte) ([]byte, error) {
	if !utf8.Valid(doc) {
		return nil, errors.New("not valid UTF-8")
	}
	if out, ok := fastCanonical(doc); ok {
		return out, nil
	}
	return decodeCanonical(doc)
}

// decodeCanonical is Canonical through encoding/json's tokenizer: every document,
// with its error.
func decodeCanonical(doc []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	c := canon{doc: doc, d: d}
	out, err := c.value(nil, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return out, nil
}

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

type canon struct {
	doc  []byte
	d    *json.Decoder
	prev int64 // offset after the last token read
}

// token reads the next token and its raw text.
func (c *canon) token() (json.Token, []byte, error) {
	tok, err := c.d.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, nil, err
	}
	end := c.d.InputOffset()
	raw := bytes.TrimLeft(c.doc[c.prev:end], " \t\r\n,:")
	c.prev = end
	return tok, raw, nil
}

// value appends the canonical form of the next value to out.
func (c *canon) value(out []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, errors.New("nested too deeply")
	}
	tok, raw, err := c.token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			return c.object(out, depth)
		case '[':
			return c.array(out, depth)
		}
		return nil, fmt.Errorf("unexpected %q", v)
	case string:
		return appendString(out, v, raw)
	case json.Number:
		return append(out, v...), nil // exactly as written
	case bool:
		return strconv.AppendBool(out, v), nil
	case nil:
		return append(out, "null"...), nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

func (c *canon) object(out []byte, depth int) ([]byte, error) {
	type member struct {
		key   string
		value []byte // key and value, canonical
	}
	var members []member
	seen := map[string]bool{}
	for c.d.More() {
		tok, raw, err := c.token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("object key %v is not a string", tok)
		}
		if seen[key] {
			return nil, fmt.Errorf("%w %q", ErrDuplicateKey, key)
		}
		seen[key] = true
		m, err := appendString(nil, key, raw)
		if err != nil {
			return nil, err
		}
		m = append(m, ':')
		if m, err = c.value(m, depth+1); err != nil {
			return nil, err
		}
		members = append(members, member{key, m})
	}
	if _, _, err := c.token(); err != nil { // '}'
		return nil, err
	}
	slices.SortFunc(members, func(a, b member) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m.value...)
	}
	return append(out, '}'), nil
}

func (c *canon) array(out []byte, depth int) ([]byte, error) {
	out = append(out, '[')
	for i := 0; c.d.More(); i++ {
		if i > 0 {
			out = append(out, ',')
		}
		var err error
		if out, err = c.value(out, depth+1); err != nil {
			return nil, err
		}
	}
	if _, _, err := c.token(); err != nil { // ']'
		return nil, err
	}
	return append(out, ']'), nil
}

// appendString appends s, decoded from raw, re-encoded. It refuses a raw string whose
// decoding lost something (an escaped lone surrogate, which encoding/json turns into
// U+FFFD).
func appendString(out []byte, s string, raw []byte) ([]byte, error) {
	if err := checkSurrogates(raw); err != nil {
		return nil, err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return append(out, b...), nil
}

// checkSurrogates checks that every escaped surrogate in the raw string literal is
// a high one followed at once by an escaped low one.
func checkSurrogates(raw []byte) error {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if i >= len(raw) || raw[i] != 'u' {
			continue // a one-letter escape (the decoder checked it)
		}
		r, ok := hex4(raw, i+1)
		if !ok {
			return nil // the decoder refused it already
		}
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return ErrLoneSurrogate
		case r >= 0xD800 && r <= 0xDBFF:
			if i+2 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return ErrLoneSurrogate
			}
			lo, ok := hex4(raw, i+3)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return ErrLoneSurrogate
			}
			i += 6
		}
	}
	return nil
}

// hex4 reads four hex digits at raw[i:].
func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[i:i+4]), 16, 32)
	return rune(n), err == nil
}
