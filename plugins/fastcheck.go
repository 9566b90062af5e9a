package plugins

import (
	"bytes"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// The fast path. Most tools' schemas are an object of typed properties, some required,
// often closed (additionalProperties: false): jsonschema-go's reflection and a decode
// into map[string]any cost more than the call's guest. A schema that uses only the
// keywords below is also compiled at load into a fastNode tree, and a value is
// checked by one pass over its raw JSON (scan), without building it. The pass is
// strict: it accepts only what the full check (decode, canonjson, Schema.Check)
// accepts, and where it does not accept, the full check runs and gives its own error,
// so messages do not change. TestFastPathAgrees and FuzzFastPath compare the two.
//
// Keywords on the fast path: type (one or a list), properties, required,
// additionalProperties (false, or a fast schema), items (one schema), minimum,
// maximum, minLength, maxLength, pattern, minItems, maxItems, and annotations
// (title, description, default, examples, $comment, format, deprecated, readOnly,
// writeOnly, contentEncoding, contentMediaType, unknown keywords), which jsonschema-go
// does not check.

// JSON types as bits of fastNode.types.
const (
	tNull = 1 << iota
	tBoolean
	tObject
	tArray
	tNumber
	tInteger
	tString
)

var typeBits = map[string]uint8{"null": tNull, "boolean": tBoolean, "object": tObject, "array": tArray,
	"number": tNumber | tInteger, "integer": tInteger, "string": tString} // "number" subsumes integers

// fastNode is a subschema as the fast path checks it. The zero value accepts every
// value.
type fastNode struct {
	types              uint8 // allowed types; 0: any
	minimum, maximum   *float64
	minLength          int // -1: none
	maxLength          int // -1: none
	pattern            *regexp.Regexp
	minItems, maxItems int // -1: none
	props              map[string]*fastNode
	required           []string
	closed             bool      // additionalProperties: false
	additional         *fastNode // nil: members outside props are not checked
	items              *fastNode // nil: items are not checked
	// needString: the node looks at a string's decoded text.
	needString bool
}

// compileFast compiles s (resolved by jsonschema-go) for the fast path, or returns
// nil when s uses a keyword outside it.
func compileFast(s *jsonschema.Schema, root bool) *fastNode {
	if s == nil {
		return nil
	}
	if !root && s.Schema != "" {
		return nil // a dialect below the root: left to jsonschema-go
	}
	if root {
		switch s.Schema {
		case "", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#",
			"https://json-schema.org/draft/2020-12/schema":
		default:
			return nil
		}
	}
	// Every field not cleared here must be zero: a keyword jsonschema-go grows later
	// is off the fast path until it is added here.
	rest := *s
	rest.Schema, rest.Comment, rest.Title, rest.Description, rest.Default = "", "", "", "", nil
	rest.Deprecated, rest.ReadOnly, rest.WriteOnly, rest.Examples = false, false, false, nil
	rest.Format, rest.ContentEncoding, rest.ContentMediaType, rest.Extra, rest.PropertyOrder = "", "", "", nil, nil
	rest.Type, rest.Types, rest.Minimum, rest.Maximum, rest.MinLength, rest.MaxLength, rest.Pattern = "", nil, nil, nil, nil, nil, ""
	rest.MinItems, rest.MaxItems, rest.Items = nil, nil, nil
	rest.Properties, rest.Required, rest.AdditionalProperties = nil, nil, nil
	if !reflect.ValueOf(rest).IsZero() {
		return nil
	}
	n := &fastNode{minimum: s.Minimum, maximum: s.Maximum, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1,
		required: s.Required}
	if s.Type != "" {
		n.types = typeBits[s.Type]
		if n.types == 0 {
			return nil
		}
	}
	for _, t := range s.Types {
		b := typeBits[t]
		if b == 0 {
			return nil
		}
		n.types |= b
	}
	if s.Types != nil && n.types == 0 { // "type": [] accepts nothing
		return nil
	}
	for _, p := range []struct {
		v   *int
		dst *int
	}{{s.MinLength, &n.minLength}, {s.MaxLength, &n.maxLength}, {s.MinItems, &n.minItems}, {s.MaxItems, &n.maxItems}} {
		if p.v != nil {
			if *p.v < 0 {
				return nil
			}
			*p.dst = *p.v
		}
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern) // as jsonschema-go compiles it
		if err != nil {
			return nil
		}
		n.pattern = re
	}
	n.needString = n.pattern != nil || n.minLength >= 0 || n.maxLength >= 0
	if s.Properties != nil {
		n.props = make(map[string]*fastNode, len(s.Properties))
		for k, ps := range s.Properties {
			if n.props[k] = compileFast(ps, false); n.props[k] == nil {
				return nil
			}
		}
	}
	if a := s.AdditionalProperties; a != nil {
		if isFalseSchema(a) {
			n.closed = true
		} else if n.additional = compileFast(a, false); n.additional == nil {
			return nil
		}
	}
	if s.Items != nil {
		if n.items = compileFast(s.Items, false); n.items == nil {
			return nil
		}
	}
	return n
}

// isFalseSchema reports whether s is the schema false ({"not":{}}), as jsonschema-go
// decodes it.
func isFalseSchema(s *jsonschema.Schema) bool {
	if s.Not == nil || !reflect.ValueOf(*s.Not).IsZero() {
		return false
	}
	rest := *s
	rest.Not = nil
	return reflect.ValueOf(rest).IsZero()
}

// scanner is one pass of the fast path over a JSON document.
type scanner struct {
	b   []byte
	i   int
	buf []byte // a decoded string with escapes
}

// accepts reports whether doc, a JSON document, is a single JSON object without a
// duplicate key or an escaped lone surrogate, nested no deeper than MaxValueDepth,
// and valid against n (nil: any object). doc must be valid UTF-8 where n checks
// strings (the pass reads bytes; rune counts and patterns need text). A false answer
// says nothing more: the full check decides and says why.
func accepts(n *fastNode, doc []byte) bool {
	sc := scanner{b: doc}
	sc.space()
	if sc.i >= len(sc.b) || sc.b[sc.i] != '{' {
		return false
	}
	if !sc.value(n, 0) {
		return false
	}
	sc.space()
	return sc.i == len(sc.b)
}

func (sc *scanner) space() {
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// value scans one value at depth d against n (nil: unchecked).
func (sc *scanner) value(n *fastNode, d int) bool {
	if d > MaxValueDepth {
		return false
	}
	sc.space()
	if sc.i >= len(sc.b) {
		return false
	}
	var typ uint8
	switch c := sc.b[sc.i]; {
	case c == '{':
		typ = tObject
		if n != nil && n.types != 0 && n.types&tObject == 0 {
			return false
		}
		if !sc.object(n, d) {
			return false
		}
	case c == '[':
		typ = tArray
		if n != nil && n.types != 0 && n.types&tArray == 0 {
			return false
		}
		if !sc.array(n, d) {
			return false
		}
	case c == '"':
		typ = tString
		need := n != nil && n.needString
		s, ok := sc.str(need)
		if !ok {
			return false
		}
		if need && !n.checkString(s) {
			return false
		}
	case c == 't':
		typ = tBoolean
		if !sc.literal("true") {
			return false
		}
	case c == 'f':
		typ = tBoolean
		if !sc.literal("false") {
			return false
		}
	case c == 'n':
		typ = tNull
		if !sc.literal("null") {
			return false
		}
	case c == '-' || '0' <= c && c <= '9':
		f, ok := sc.number()
		if !ok {
			return false
		}
		typ = tNumber
		if _, frac := math.Modf(f); frac == 0 {
			typ = tInteger
		}
		if n != nil && (n.minimum != nil && f < *n.minimum || n.maximum != nil && f > *n.maximum) {
			return false
		}
	default:
		return false
	}
	return n == nil || n.types == 0 || n.types&typ != 0
}

func (n *fastNode) checkString(s []byte) bool {
	if n.minLength >= 0 || n.maxLength >= 0 {
		c := utf8.RuneCount(s)
		if n.minLength >= 0 && c < n.minLength || n.maxLength >= 0 && c > n.maxLength {
			return false
		}
	}
	return n.pattern == nil || n.pattern.Match(s)
}

func (sc *scanner) literal(lit string) bool {
	if !bytes.HasPrefix(sc.b[sc.i:], []byte(lit)) {
		return false
	}
	sc.i += len(lit)
	return true
}

// smallObject is how many keys an object may have before duplicates are found with a
// map instead of by comparison with each earlier key.
const smallObject = 16

func (sc *scanner) object(n *fastNode, d int) bool {
	sc.i++ // '{'
	var small [smallObject][]byte
	keys := small[:0]
	var seen map[string]bool
	sc.space()
	if sc.i < len(sc.b) && sc.b[sc.i] == '}' {
		sc.i++
		return n == nil || sc.hasRequired(n, keys, seen)
	}
	for {
		sc.space()
		if sc.i >= len(sc.b) || sc.b[sc.i] != '"' {
			return false
		}
		key, ok := sc.str(true)
		if !ok {
			return false
		}
		if sc.buf != nil && len(key) > 0 && &key[0] == &sc.buf[0] {
			key = bytes.Clone(key) // the scratch buffer is reused
		}
		switch {
		case seen != nil:
			if seen[string(key)] {
				return false
			}
			seen[string(key)] = true
		case len(keys) < smallObject:
			for _, k := range keys {
				if bytes.Equal(k, key) {
					return false
				}
			}
			keys = append(keys, key)
		default:
			seen = make(map[string]bool, 2*smallObject)
			for _, k := range keys {
				seen[string(k)] = true
			}
			if seen[string(key)] {
				return false
			}
			seen[string(key)] = true
		}
		sc.space()
		if sc.i >= len(sc.b) || sc.b[sc.i] != ':' {
			return false
		}
		sc.i++
		var member *fastNode
		if n != nil {
			if p, ok := n.props[string(key)]; ok {
				member = p
			} else if n.closed {
				return false
			} else {
				member = n.additional
			}
		}
		if !sc.value(member, d+1) {
			return false
		}
		sc.space()
		if sc.i >= len(sc.b) {
			return false
		}
		switch sc.b[sc.i] {
		case ',':
			sc.i++
		case '}':
			sc.i++
			return n == nil || sc.hasRequired(n, keys, seen)
		default:
			return false
		}
	}
}

func (sc *scanner) hasRequired(n *fastNode, keys [][]byte, seen map[string]bool) bool {
next:
	for _, r := range n.required {
		if seen != nil {
			if !seen[r] {
				return false
			}
			continue
		}
		for _, k := range keys {
			if string(k) == r {
				continue next
			}
		}
		return false
	}
	return true
}

func (sc *scanner) array(n *fastNode, d int) bool {
	sc.i++ // '['
	var items *fastNode
	if n != nil {
		items = n.items
	}
	count := 0
	sc.space()
	if sc.i < len(sc.b) && sc.b[sc.i] == ']' {
		sc.i++
	} else {
		for {
			if !sc.value(items, d+1) {
				return false
			}
			count++
			sc.space()
			if sc.i >= len(sc.b) {
				return false
			}
			if sc.b[sc.i] == ']' {
				sc.i++
				break
			}
			if sc.b[sc.i] != ',' {
				return false
			}
			sc.i++
		}
	}
	return n == nil || (n.minItems < 0 || count >= n.minItems) && (n.maxItems < 0 || count <= n.maxItems)
}

// str scans a string and, if decode, returns its text: a slice of the document when
// it has no escapes, else of sc.buf (valid until the next str). It refuses what
// encoding/json refuses (control characters, bad escapes) and, as canonjson does, an
// escaped surrogate that is not half of a pair.
func (sc *scanner) str(decode bool) ([]byte, bool) {
	sc.i++ // '"'
	start := sc.i
	q := bytes.IndexByte(sc.b[start:], '"')
	if q < 0 {
		return nil, false
	}
	s := sc.b[start : start+q]
	if bs := bytes.IndexByte(s, '\\'); bs >= 0 {
		s = s[:bs]
	}
	for _, c := range s {
		if c < 0x20 {
			return nil, false
		}
	}
	if len(s) < q { // an escape
		sc.i = start + len(s)
		return sc.escaped(start, decode)
	}
	sc.i = start + q + 1
	return s, true
}

// escaped continues str from its first backslash; it decodes into sc.buf only if
// decode.
func (sc *scanner) escaped(start int, decode bool) ([]byte, bool) {
	var out []byte
	if decode {
		out = append(sc.buf[:0], sc.b[start:sc.i]...)
	}
	for sc.i < len(sc.b) {
		c := sc.b[sc.i]
		switch {
		case c == '"':
			sc.i++
			if decode {
				sc.buf = out
			}
			return out, true
		case c < 0x20:
			return nil, false
		case c != '\\':
			if decode {
				out = append(out, c)
			}
			sc.i++
			continue
		}
		if sc.i+1 >= len(sc.b) {
			return nil, false
		}
		e := sc.b[sc.i+1]
		sc.i += 2
		r := rune(e)
		switch e {
		case '"', '\\', '/':
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		case 'u':
			var ok bool
			if r, ok = sc.hex4(); !ok {
				return nil, false
			}
			if utf16.IsSurrogate(r) {
				if r >= 0xDC00 || sc.i+1 >= len(sc.b) || sc.b[sc.i] != '\\' || sc.b[sc.i+1] != 'u' {
					return nil, false // a lone surrogate
				}
				sc.i += 2
				lo, ok := sc.hex4()
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return nil, false
				}
				r = utf16.DecodeRune(r, lo)
			}
		default:
			return nil, false
		}
		if decode {
			out = utf8.AppendRune(out, r)
		}
	}
	return nil, false
}

func (sc *scanner) hex4() (rune, bool) {
	if sc.i+4 > len(sc.b) {
		return 0, false
	}
	var r rune
	for _, c := range sc.b[sc.i : sc.i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	sc.i += 4
	return r, true
}

// number scans a number as JSON writes it and returns it as encoding/json decodes it
// into any (a float64); false where that fails (out of range).
func (sc *scanner) number() (float64, bool) {
	start := sc.i
	b := sc.b
	if sc.i < len(b) && b[sc.i] == '-' {
		sc.i++
	}
	digits := func() int {
		n := 0
		for sc.i < len(b) && '0' <= b[sc.i] && b[sc.i] <= '9' {
			sc.i++
			n++
		}
		return n
	}
	switch {
	case sc.i < len(b) && b[sc.i] == '0':
		sc.i++
	case digits() == 0:
		return 0, false
	}
	simple := true
	if sc.i < len(b) && b[sc.i] == '.' {
		sc.i++
		simple = false
		if digits() == 0 {
			return 0, false
		}
	}
	if sc.i < len(b) && (b[sc.i] == 'e' || b[sc.i] == 'E') {
		sc.i++
		simple = false
		if sc.i < len(b) && (b[sc.i] == '+' || b[sc.i] == '-') {
			sc.i++
		}
		if digits() == 0 {
			return 0, false
		}
	}
	text := b[start:sc.i]
	if simple && len(text) <= 18 { // fits an int64, which converts with the rounding ParseFloat does
		var v int64
		neg := text[0] == '-'
		if neg {
			text = text[1:]
		}
		for _, c := range text {
			v = v*10 + int64(c-'0')
		}
		if neg {
			if v == 0 {
				return math.Copysign(0, -1), true
			}
			v = -v
		}
		return float64(v), true
	}
	f, err := strconv.ParseFloat(string(text), 64)
	return f, err == nil
}

// fastMaxSize is the longest document whose check fastWorkBound keeps within
// MaxCheckWork: longer ones are left to the full check, which measures them.
func (s *Schema) fastMaxSize() int {
	lo, hi := 0, 1<<40 // fastWorkBound(lo) is within the bound; fastWorkBound(hi) is not
	if s.fastWorkBound(lo) > MaxCheckWork {
		return -1
	}
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; s.fastWorkBound(mid) <= MaxCheckWork {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// fastWorkBound is an upper bound on Schema.estimate for any value whose JSON is size
// bytes long: a value prints in at most 25 times its JSON's length (a one-digit
// number prints as 24 bytes), the values at one depth print in at most the whole
// value's size, and the document holds at most size values (each starts at its own
// byte).
func (s *Schema) fastWorkBound(size int) uint64 {
	var perValue, perByte, nest, caught, caughtText uint64
	for _, c := range s.perDepth {
		perValue = max(perValue, c.fixed)
		nest = max(nest, c.nest)
		caught = max(caught, c.caught)
		caughtText = max(caughtText, c.caughtText)
		perByte = sat(perByte, c.perByte)
	}
	n := uint64(size)
	printed := mul(25, n)
	msgs := mul(byteWork, mul(max(nest, 1), sat(mul(caught, msgBytes), caughtText)))
	var catchPerByte uint64
	for _, c := range s.perDepth {
		catchPerByte = sat(catchPerByte, mul(byteWork, mul(max(nest, 1), c.caught)))
	}
	work := sat(mul(n, sat(perValue, msgs)), mul(printed, sat(perByte, catchPerByte)))
	msg := sat(sat(printed, s.maxText), mul(nest, msgBytes))
	return sat(work, mul(byteWork, mul(nest, msg)))
}

// What one pass over a document (Schema.scan) found.
type scanResult int

const (
	// scanUnsure: the full check decides (and says what is wrong, if anything).
	scanUnsure scanResult = iota
	// scanWellFormed: a JSON object nested within MaxValueDepth that every decoder
	// reads alike (no key twice, no lone surrogate); its schema is off the fast path.
	scanWellFormed
	// scanAccepted: as scanWellFormed, and valid against the schema.
	scanAccepted
)

// scan checks doc, valid UTF-8, in one pass: against the schema where it is on the
// fast path and the check's work bound cannot refuse doc, else only its form.
func (s *Schema) scan(doc []byte) scanResult {
	if s.fast != nil && len(doc) <= s.fastMax {
		if accepts(s.fast, doc) {
			return scanAccepted
		}
		return scanUnsure
	}
	if accepts(nil, doc) {
		return scanWellFormed
	}
	return scanUnsure
}
