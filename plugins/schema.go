package plugins

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net/url"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// Bounds on a plugin's schemas, checked once when the plugin loads, and on the work of
// checking one value against a schema, checked before every check. A schema is
// plugin-supplied bytes and runs in the server process, outside the plugin's time and
// memory limits; jsonschema-go's Validate cannot be cancelled, so the work is bounded
// before it starts. These constants are the one source of each bound.
const (
	// MaxSchemaBytes is the longest schema (its JSON). Bundled and conformance
	// schemas are under 1 KiB; large generated schemas are tens of KiB.
	MaxSchemaBytes = 256 << 10
	// MaxSchemaDepth is how deeply a schema's JSON may nest. go-sdk refuses to send
	// JSON nested over 1,000 levels (and panics in AddTool); clients recurse on it.
	// 128 JSON levels are 64 levels of nested properties.
	MaxSchemaDepth = 128
	// MaxSchemaRefs is how many $ref and $dynamicRef keywords one schema may hold.
	MaxSchemaRefs = 1024
	// MaxSchemaFanOut is the longest allOf, anyOf or oneOf: every entry is evaluated
	// against the value (a oneOf of a few hundred titled constants is still common).
	MaxSchemaFanOut = 512
	// MaxAmplification is how many subschema evaluations the schema at any one place
	// may apply to a single value through $ref, $dynamicRef, allOf, anyOf, oneOf, not,
	// if/then/else and dependentSchemas, without descending into the value. A $ref
	// bomb (40 definitions, each an anyOf of two $refs to the next) needs about 2^42; the
	// bundled schemas need a few.
	MaxAmplification = 4096
	// MaxValueDepth is how deeply a value checked against a schema (arguments,
	// structured output) may nest; deeper values are refused before any check.
	MaxValueDepth = 64
	// MaxCheckWork is the most work one check may cost, in units of at most about a
	// nanosecond of jsonschema-go v0.4.3 validation on one core (see cost; the estimate
	// is an upper one: BenchmarkCheckWork measured 0.05 to 0.6 ns per unit on a loaded
	// 2-core machine): a check that could cost more is refused before it starts. A 1 MiB array of numbers checked against
	// {"items":{"type":"number"}} costs about 1.2e9 and passes; 500 failing anyOf
	// branches over a 20 KiB value (measured 0.8 to 2.3 s, a 10 MB error) cost 4e9 and
	// do not.
	MaxCheckWork = 1 << 31
	// MaxErrorBytes is the longest validation error passed on; the rest is cut.
	MaxErrorBytes = 1024
)

// Work units of the cost model (about a nanosecond each).
const (
	evalWork  = 1000 // evaluating one subschema, beside its keywords' entries
	entryWork = 125  // one entry of properties, required, enum...
	byteWork  = 16   // one byte of an error message: formatted, copied into each enclosing message, collected
	// msgBytes is an error message's own text beside the value it shows: the wrapping
	// "validating <path>: " and the keyword's words.
	msgBytes = 64
)

// Schema is a tool's input or output schema, resolved and measured at load: Check
// validates a value against it with bounded work.
type Schema struct {
	resolved *jsonschema.Resolved
	maxText  uint64 // the most schema text one error message may show (graph.maxText)
	// perDepth[d] is the most validation that can apply to one value at depth d below
	// the checked value (0: the value itself).
	perDepth [MaxValueDepth + 1]cost
	// fast is the schema compiled for the fast path (fastcheck.go), or nil when it
	// uses a keyword outside it.
	fast    *fastNode
	fastMax int // the longest document the fast path checks (fastMaxSize)
}

// cost is the validation that can apply to one value. Arithmetic saturates at
// math.MaxUint64.
//
// jsonschema-go builds an error for every failing evaluation, showing the value, and
// wraps it in every enclosing evaluation's message. Where the first error ends the
// check, that is one chain of messages; but anyOf, oneOf, not, if and contains catch
// errors and go on, so under them every evaluation may build and copy a message:
// "caught" counts those.
type cost struct {
	evals   uint64 // subschema evaluations
	fixed   uint64 // work independent of the value's size
	perByte uint64 // work per byte of the value (enum comparisons, regular expressions, hashing)
	// nest is the longest chain of nested evaluations down to these: a message is
	// copied once by each evaluation it is nested in.
	nest uint64
	// caught evaluations may each build a message (msgBytes plus the value) that is
	// then copied up to nest times.
	caught uint64
	// text is the total length of the schema text (path, enum, pattern, required
	// names...) the evaluations' messages may show; caughtText that of caught ones.
	text, caughtText uint64
}

func (c cost) add(o cost) cost {
	return cost{sat(c.evals, o.evals), sat(c.fixed, o.fixed), sat(c.perByte, o.perByte), max(c.nest, o.nest),
		sat(c.caught, o.caught), sat(c.text, o.text), sat(c.caughtText, o.caughtText)}
}

func (c cost) max(o cost) cost {
	return cost{max(c.evals, o.evals), max(c.fixed, o.fixed), max(c.perByte, o.perByte), max(c.nest, o.nest),
		max(c.caught, o.caught), max(c.text, o.text), max(c.caughtText, o.caughtText)}
}

// catch is c applied under an applicator that catches errors: all its evaluations'
// messages may be built.
func (c cost) catch() cost {
	c.caught, c.caughtText = c.evals, c.text
	return c
}

// work is the cost of c's evaluations of a value of size bytes.
func (c cost) work(size uint64) uint64 {
	msgs := sat(mul(c.caught, sat(msgBytes, size)), c.caughtText)
	return sat(sat(c.fixed, mul(c.perByte, size)), mul(byteWork, mul(max(c.nest, 1), msgs)))
}

func sat(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return s
}

func mul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

// compileSchema parses, bounds, resolves and measures a tool's schema. The error
// names the bound a pathological schema breaks.
func compileSchema(raw json.RawMessage) (_ *Schema, err error) {
	defer func() {
		if r := recover(); r != nil { // jsonschema-go asserts; a plugin must not crash the server
			err = fmt.Errorf("the schema library failed on it: %v", r)
		}
	}()
	if raw == nil {
		return nil, errors.New("missing")
	}
	if len(raw) > MaxSchemaBytes {
		return nil, fmt.Errorf("%d bytes exceeds the limit of %d bytes (MaxSchemaBytes)", len(raw), MaxSchemaBytes)
	}
	if jsonDeeper(raw, MaxSchemaDepth) {
		return nil, fmt.Errorf("JSON nests deeper than the limit of %d levels (MaxSchemaDepth)", MaxSchemaDepth)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if s.Type != "object" {
		return nil, fmt.Errorf(`type must be "object", got %q`, s.Type)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	g, err := newGraph(&s)
	if err != nil {
		return nil, err
	}
	out := &Schema{resolved: resolved, maxText: g.maxText, fast: compileFast(&s, true)}
	if err := g.measure(&out.perDepth); err != nil {
		return nil, err
	}
	if out.fast != nil {
		out.fastMax = out.fastMaxSize()
	}
	return out, nil
}

// jsonDeeper reports whether the JSON text b nests objects and arrays deeper than max.
func jsonDeeper(b []byte, max int) bool {
	depth := 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// Check validates v (a value decoded by encoding/json into any) against the schema,
// after refusing a value nested deeper than MaxValueDepth or whose check would cost
// more than MaxCheckWork. The error message is at most about MaxErrorBytes long.
func (s *Schema) Check(v any) (err error) {
	defer func() {
		if r := recover(); r != nil { // jsonschema-go asserts; a plugin must not crash the server
			err = fmt.Errorf("the schema library failed on this value: %v", r)
		}
	}()
	work, err := s.estimate(v)
	if err != nil {
		return err
	}
	if work > MaxCheckWork {
		return fmt.Errorf("checking this value against the schema could cost %s units of work, over the limit of %s (MaxCheckWork); send a smaller value", approx(work), approx(MaxCheckWork))
	}
	if err := s.resolved.Validate(v); err != nil {
		return errors.New(cut(err.Error(), MaxErrorBytes))
	}
	return nil
}

// estimate returns the most work checking v can cost, or why v is refused outright.
func (s *Schema) estimate(v any) (uint64, error) {
	work, size, err := s.work(v, 0)
	if err != nil {
		return 0, err
	}
	// The error the check returns: one chain of up to nest messages, each copying the
	// one below, which may show the whole value and one evaluation's schema text.
	var nest uint64
	for _, c := range s.perDepth {
		nest = max(nest, c.nest)
	}
	msg := sat(sat(size, s.maxText), mul(nest, msgBytes))
	return sat(work, mul(byteWork, mul(nest, msg))), nil
}

// work returns the most work validating v, d levels below the checked value, can
// cost, and about how many bytes v prints as. Every value pays for the evaluations its
// depth can apply, each of which may look at the whole value (print it in an error,
// hash it for uniqueItems, compare it with an enum).
func (s *Schema) work(v any, d int) (work, size uint64, err error) {
	if d > MaxValueDepth {
		return 0, 0, fmt.Errorf("the value nests deeper than the limit of %d levels (MaxValueDepth)", MaxValueDepth)
	}
	switch v := v.(type) {
	case map[string]any:
		size = 2
		for k, e := range v {
			w, n, err := s.work(e, d+1)
			if err != nil {
				return 0, 0, err
			}
			work, size = sat(work, w), sat(size, sat(uint64(len(k))+4, n))
		}
	case []any:
		size = 2
		for _, e := range v {
			w, n, err := s.work(e, d+1)
			if err != nil {
				return 0, 0, err
			}
			work, size = sat(work, w), sat(size, n+1)
		}
	case string:
		size = uint64(len(v)) + 2
	default: // number, bool, null
		size = 24
	}
	return sat(work, s.perDepth[d].work(size)), size, nil
}

// cut shortens a message to at most n bytes (at a UTF-8 boundary), saying so.
func cut(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	i := n
	for i > 0 && !utf8.RuneStart(msg[i]) {
		i--
	}
	return fmt.Sprintf("%s ... (cut: %d more bytes)", msg[:i], len(msg)-i)
}

// approx renders a large count briefly.
func approx(n uint64) string {
	if n == math.MaxUint64 {
		return "over 10^19"
	}
	if n < 10000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%.1e", float64(n))
}

// graph is a schema as the validator walks it: one node per subschema, with the
// subschemas each one applies to the same value (in place) and to the value's members.
type graph struct {
	nodes  []*node
	byPath map[string]int // JSON Pointer (escaped) -> node
	anchor map[string]int // $anchor and $dynamicAnchor -> node
	draft7 bool
	// maxText is the most schema text one evaluation's error message may show.
	maxText uint64
}

type node struct {
	s    *jsonschema.Schema
	path string // JSON Pointer from the root, for messages and $ref
	// inPlace are applied to the same value: $ref, $dynamicRef, allOf, then, else,
	// dependentSchemas (draft 7: dependencies); catching too, but catching their errors:
	// anyOf, oneOf, not, if.
	inPlace, catching []int
	// props: a member matches at most one (properties; max over them).
	props []int
	// members are applied to every member, in the worst case all together:
	// patternProperties, additionalProperties, unevaluatedProperties.
	members []int
	names   int // propertyNames (applies to each key), or -1
	// prefix: an item matches at most one (prefixItems; draft 7: items as an array).
	prefix []int
	// items are applied to every item: items, additionalItems, unevaluatedItems.
	items    []int
	contains int  // applied to every item, catching its errors; or -1
	own      cost // the work of evaluating this subschema alone
}

// newGraph builds the graph of a schema that jsonschema-go resolved, and resolves its
// references as jsonschema-go does. It refuses what it cannot follow exactly: an $id
// below the root (a second base URI).
func newGraph(root *jsonschema.Schema) (*graph, error) {
	g := &graph{byPath: map[string]int{}, anchor: map[string]int{}}
	switch root.Schema {
	case "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#":
		g.draft7 = true
	}
	refs := 0
	var errs []error
	var add func(s *jsonschema.Schema, path string) int
	add = func(s *jsonschema.Schema, path string) int {
		id := len(g.nodes)
		n := &node{s: s, path: path, names: -1, contains: -1}
		g.nodes = append(g.nodes, n)
		g.byPath[path] = id
		if s.ID != "" && path != "" {
			errs = append(errs, fmt.Errorf("%s: $id is allowed only at the root of a plugin's schema", where(path)))
		}
		if !g.draft7 {
			for _, a := range []string{s.Anchor, s.DynamicAnchor} {
				if a != "" {
					g.anchor[a] = id
				}
			}
		}
		if s.Ref != "" {
			refs++
		}
		if s.DynamicRef != "" {
			refs++
		}
		for i, n := range []int{len(s.AllOf), len(s.AnyOf), len(s.OneOf)} {
			if n > MaxSchemaFanOut {
				errs = append(errs, fmt.Errorf("%s: %s has %d entries, over the limit of %d (MaxSchemaFanOut)",
					where(path), [...]string{"allOf", "anyOf", "oneOf"}[i], n, MaxSchemaFanOut))
			}
		}
		n.own = ownCost(s, path)
		g.maxText = max(g.maxText, n.own.text)
		one := func(kw string, c *jsonschema.Schema) int {
			if c == nil {
				return -1
			}
			return add(c, path+"/"+kw)
		}
		list := func(kw string, cs []*jsonschema.Schema) []int {
			var ids []int
			for i, c := range cs {
				ids = append(ids, add(c, fmt.Sprintf("%s/%s/%d", path, kw, i)))
			}
			return ids
		}
		dict := func(kw string, cs map[string]*jsonschema.Schema) []int {
			keys := make([]string, 0, len(cs))
			for k := range cs {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var ids []int
			for _, k := range keys {
				ids = append(ids, add(cs[k], path+"/"+kw+"/"+escapePointer(k)))
			}
			return ids
		}
		some := func(ids ...int) []int {
			var out []int
			for _, id := range ids {
				if id >= 0 {
					out = append(out, id)
				}
			}
			return out
		}
		// Definitions are applied only through references.
		dict("$defs", s.Defs)
		dict("definitions", s.Definitions)
		one("contentSchema", s.ContentSchema) // an annotation; jsonschema-go does not apply it

		n.inPlace = append(n.inPlace, list("allOf", s.AllOf)...)
		n.catching = append(n.catching, list("anyOf", s.AnyOf)...)
		n.catching = append(n.catching, list("oneOf", s.OneOf)...)
		n.catching = append(n.catching, some(one("not", s.Not), one("if", s.If))...)
		n.inPlace = append(n.inPlace, some(one("then", s.Then), one("else", s.Else))...)
		n.inPlace = append(n.inPlace, dict("dependentSchemas", s.DependentSchemas)...)
		n.inPlace = append(n.inPlace, dict("dependencies", s.DependencySchemas)...)

		n.props = dict("properties", s.Properties)
		n.members = append(dict("patternProperties", s.PatternProperties),
			some(one("additionalProperties", s.AdditionalProperties), one("unevaluatedProperties", s.UnevaluatedProperties))...)
		n.names = one("propertyNames", s.PropertyNames)

		n.prefix = append(list("prefixItems", s.PrefixItems), list("items", s.ItemsArray)...)
		n.items = some(one("items", s.Items), one("additionalItems", s.AdditionalItems), one("unevaluatedItems", s.UnevaluatedItems))
		n.contains = one("contains", s.Contains)
		return id
	}
	add(root, "")
	if refs > MaxSchemaRefs {
		errs = append(errs, fmt.Errorf("%d $ref and $dynamicRef keywords, over the limit of %d (MaxSchemaRefs)", refs, MaxSchemaRefs))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	base := &url.URL{}
	if root.ID != "" && !(g.draft7 && root.Ref != "") {
		u, err := url.Parse(root.ID)
		if err != nil {
			return nil, fmt.Errorf("$id: %w", err)
		}
		base = u
	}
	for _, n := range g.nodes {
		for _, ref := range []string{n.s.Ref, n.s.DynamicRef} {
			if ref == "" {
				continue
			}
			target, err := g.resolve(base, ref)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", where(n.path), ref, err)
			}
			n.inPlace = append(n.inPlace, target)
		}
	}
	return g, nil
}

// resolve finds the subschema a reference names, as jsonschema-go resolves it in a
// schema with one base URI (the root's): a JSON Pointer or an anchor after '#'. A
// $dynamicRef to a $dynamicAnchor then has one possible target, the anchor's.
func (g *graph) resolve(base *url.URL, ref string) (int, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return 0, err
	}
	u = base.ResolveReference(u)
	frag := u.Fragment
	u.Fragment = ""
	if doc := u.String(); doc != "" && doc != base.String() {
		return 0, errors.New("refers outside the schema")
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		id, ok := g.anchor[frag]
		if !ok {
			return 0, fmt.Errorf("no anchor %q", frag)
		}
		return id, nil
	}
	// Normalise the pointer to the escaping the graph's paths use.
	path := ""
	if frag != "" {
		for seg := range strings.SplitSeq(frag[1:], "/") {
			path += "/" + escapePointer(strings.NewReplacer("~1", "/", "~0", "~").Replace(seg))
		}
	}
	id, ok := g.byPath[path]
	if !ok {
		return 0, errors.New("does not name a subschema")
	}
	return id, nil
}

func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func where(path string) string {
	if path == "" {
		return "root"
	}
	return path
}

// ownCost is the work of evaluating s alone against a value: a fixed part for each of
// its keywords' entries (properties, required, enum...) and a part per byte of the
// value (printing it in an error, hashing it, comparing it with each enum entry,
// running each regular expression over it).
func ownCost(s *jsonschema.Schema, path string) cost {
	entries := len(s.Properties) + len(s.PatternProperties) + len(s.Required) + len(s.Enum) + len(s.Types) +
		len(s.DependentRequired) + len(s.DependencyStrings) + len(s.DependentSchemas) + len(s.DependencySchemas) +
		len(s.PrefixItems) + len(s.ItemsArray)
	for _, r := range s.DependentRequired {
		entries += len(r)
	}
	for _, r := range s.DependencyStrings {
		entries += len(r)
	}
	perByte := uint64(1 + len(s.Enum))
	if s.Const != nil {
		perByte++
	}
	perByte = sat(perByte, regexWork(s.Pattern))
	for p := range s.PatternProperties {
		perByte = sat(perByte, regexWork(p))
	}
	return cost{evals: 1, fixed: sat(evalWork, mul(uint64(entries), entryWork)), perByte: perByte, text: messageText(s, path)}
}

// messageText is about how much schema text an error of s's evaluation may show: its
// path (or $id), and what its failing keyword prints (the enum, the const, the pattern,
// the required names, the anyOf and oneOf entries).
func messageText(s *jsonschema.Schema, path string) uint64 {
	n := len(path) + len(s.ID) + len(s.Pattern) + 32*(len(s.AnyOf)+len(s.OneOf))
	if s.Enum != nil {
		b, _ := json.Marshal(s.Enum)
		n += len(b)
	}
	if s.Const != nil {
		b, _ := json.Marshal(*s.Const)
		n += len(b)
	}
	for _, r := range s.Required {
		n += len(r) + 3
	}
	for k, rs := range s.DependentRequired {
		n += len(k) + 3
		for _, r := range rs {
			n += len(r) + 3
		}
	}
	for k, rs := range s.DependencyStrings {
		n += len(k) + 3
		for _, r := range rs {
			n += len(r) + 3
		}
	}
	return uint64(n)
}

// regexWork is the work per input byte of matching a regular expression: Go's
// regexp is linear in the input times the size of the compiled program.
func regexWork(re string) uint64 {
	if re == "" {
		return 0
	}
	p, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return 0 // jsonschema-go refused it already
	}
	prog, err := syntax.Compile(p.Simplify())
	if err != nil {
		return 0
	}
	return uint64(len(prog.Inst))
}

// measure fills perDepth with the most validation that can apply to one value at each
// depth below the root, and refuses a schema that applies itself to the same value
// without end (a cycle of in-place references) or too many subschemas to one value.
func (g *graph) measure(perDepth *[MaxValueDepth + 1]cost) error {
	order, err := g.inPlaceOrder()
	if err != nil {
		return err
	}
	prev := make([]cost, len(g.nodes))
	cur := make([]cost, len(g.nodes))
	for d := 0; d <= MaxValueDepth; d++ {
		for _, i := range order { // in-place subschemas before those that apply them
			n := g.nodes[i]
			var c cost
			if d == 0 {
				c = n.own
			} else {
				c = g.members(n, prev, d)
			}
			for _, j := range n.inPlace {
				c = c.add(cur[j])
			}
			for _, j := range n.catching {
				c = c.add(cur[j].catch())
			}
			if c.evals > 0 {
				c.nest++ // this evaluation holds the others
			}
			cur[i] = c
		}
		if d == 0 {
			for i, c := range cur {
				if c.evals > MaxAmplification {
					return fmt.Errorf("%s: %s subschema evaluations can apply to one value, over the limit of %d (MaxAmplification)",
						where(g.nodes[i].path), approx(c.evals), MaxAmplification)
				}
			}
		}
		perDepth[d] = cur[0]
		if cur[0] == (cost{}) {
			break // nothing applies deeper
		}
		prev, cur = cur, prev
	}
	return nil
}

// members is the validation n applies to one value d levels below its own value,
// given prev, what every node applies d-1 levels below its value.
func (g *graph) members(n *node, prev []cost, d int) cost {
	var obj, arr cost
	for _, p := range n.props {
		obj = obj.max(prev[p])
	}
	for _, m := range n.members {
		obj = obj.add(prev[m])
	}
	if n.names >= 0 && d == 1 {
		obj = obj.add(prev[n.names])
	}
	for _, p := range n.prefix {
		arr = arr.max(prev[p])
	}
	for _, it := range n.items {
		arr = arr.add(prev[it])
	}
	if n.contains >= 0 {
		arr = arr.add(prev[n.contains].catch())
	}
	return obj.max(arr) // a value is an object or an array, not both
}

// inPlaceOrder orders the nodes so that every node comes after those it applies in
// place, or reports a cycle of in-place application: validation would never end.
func (g *graph) inPlaceOrder() ([]int, error) {
	const (
		unseen = iota
		open
		done
	)
	state := make([]byte, len(g.nodes))
	order := make([]int, 0, len(g.nodes))
	var stack []int
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case done:
			return nil
		case open:
			var cycle []string
			for k := len(stack) - 1; k >= 0; k-- {
				cycle = append([]string{where(g.nodes[stack[k]].path)}, cycle...)
				if stack[k] == i {
					break
				}
			}
			return fmt.Errorf("a cycle of references that never descends into the value (it would never end): %s -> %s",
				strings.Join(cycle, " -> "), where(g.nodes[i].path))
		}
		state[i] = open
		stack = append(stack, i)
		for _, j := range slices.Concat(g.nodes[i].inPlace, g.nodes[i].catching) {
			if err := visit(j); err != nil {
				return err
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = done
		order = append(order, i)
		return nil
	}
	for i := range g.nodes {
		if err := visit(i); err != nil {
			return nil, err
		}
	}
	return order, nil
}
