package main

import (
	"html"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Convert turns an HTML page into readable text: tags, comments, scripts and styles
// removed, entities decoded, whitespace collapsed, blocks separated by blank lines
// and list items on lines of their own ("- "). With markdown, headings become
// "# ..." and links "[text](url)" with url resolved against base (only http, https
// and mailto links; others keep their text). It reads the page once, left to right,
// whatever the markup: unclosed tags, comments or quotes end at the end of the page.
func Convert(page string, base *url.URL, markdown bool) string {
	c := &converter{md: markdown, base: base}
	for i := 0; i < len(page); {
		if page[i] != '<' {
			j := strings.IndexByte(page[i:], '<')
			if j < 0 {
				j = len(page) - i
			}
			c.text(html.UnescapeString(page[i : i+j]))
			i += j
			continue
		}
		i = c.markup(page, i)
	}
	return strings.TrimRight(c.b.String(), " \n")
}

// rawText are the elements whose content is never text of the page.
var rawText = map[string]bool{"script": true, "style": true, "noscript": true, "template": true,
	"title": true, "textarea": true, "svg": true, "math": true, "iframe": true, "object": true}

// blocks are the elements that start and end a paragraph.
var blocks = map[string]bool{"p": true, "div": true, "section": true, "article": true, "header": true,
	"footer": true, "main": true, "nav": true, "aside": true, "blockquote": true, "table": true,
	"tr": true, "ul": true, "ol": true, "dl": true, "dt": true, "dd": true, "figure": true,
	"figcaption": true, "form": true, "fieldset": true, "address": true, "hr": true, "pre": true,
	"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "body": true, "html": true}

type converter struct {
	b    strings.Builder
	md   bool
	base *url.URL

	nl     int    // line breaks owed before the next text (at most 2)
	space  bool   // a space owed before the next text
	prefix string // written at the start of the next text's line ("- ", "## ")
	pre    int    // depth of <pre>: whitespace kept

	linkURL    string // the open link's resolved URL; "" when none
	linkOpened bool   // its "[" has been written
}

// markup reads the tag, comment or declaration at page[i] == '<' and returns the
// index after it (after the content of a raw-text element).
func (c *converter) markup(page string, i int) int {
	rest := page[i:]
	switch {
	case strings.HasPrefix(rest, "<!--"):
		end := strings.Index(rest[4:], "-->")
		if end < 0 {
			return len(page)
		}
		return i + 4 + end + 3
	case strings.HasPrefix(rest, "<!") || strings.HasPrefix(rest, "<?"):
		return skipTag(page, i+2)
	}
	closing := strings.HasPrefix(rest, "</")
	start := i + 1
	if closing {
		start++
	}
	n := start
	for n < len(page) && (isASCIILetter(page[n]) || (n > start && page[n] >= '0' && page[n] <= '9')) {
		n++
	}
	if n == start { // "<" that starts no tag is text
		c.text("<")
		return i + 1
	}
	name := strings.ToLower(page[start:n])
	end, attrs := tagAttrs(page, n)
	if closing {
		c.endTag(name)
		return end
	}
	if rawText[name] && !strings.HasSuffix(strings.TrimSpace(page[n:max(n, end-1)]), "/") {
		return skipRawText(page, end, name)
	}
	c.startTag(name, attrs)
	return end
}

func (c *converter) startTag(name string, attrs map[string]string) {
	switch {
	case name == "br":
		c.lineBreak(1)
	case name == "li":
		c.lineBreak(1)
		c.prefix = "- "
	case len(name) == 2 && name[0] == 'h' && name[1] >= '1' && name[1] <= '6':
		c.lineBreak(2)
		if c.md {
			c.prefix = strings.Repeat("#", int(name[1]-'0')) + " "
		}
	case name == "td" || name == "th":
		c.space = true
	case name == "a" && c.md && c.linkURL == "":
		c.linkURL = c.resolve(attrs["href"])
	case name == "img" && attrs["alt"] != "":
		c.text(attrs["alt"])
	case blocks[name]:
		c.lineBreak(2)
		if name == "pre" {
			c.pre++
		}
	}
}

func (c *converter) endTag(name string) {
	switch {
	case name == "a":
		if c.linkOpened {
			c.b.WriteString("](" + c.linkURL + ")")
		}
		c.linkURL, c.linkOpened = "", false
	case name == "li":
		c.lineBreak(1)
	case blocks[name]:
		c.lineBreak(2)
		if name == "pre" && c.pre > 0 {
			c.pre--
		}
	}
}

// resolve returns href as an absolute http, https or mailto URL, or "".
func (c *converter) resolve(href string) string {
	href = strings.TrimSpace(href)
	if href == "" || c.base == nil {
		return ""
	}
	u, err := c.base.Parse(href)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "mailto") {
		return ""
	}
	// Parentheses and spaces would end the markdown link early.
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29").Replace(u.String())
}

func (c *converter) lineBreak(n int) {
	if c.b.Len() > 0 {
		c.nl = max(c.nl, n)
	}
	c.space = false
	c.prefix = ""
}

// text writes decoded text, collapsing whitespace outside <pre>.
func (c *converter) text(s string) {
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		if r == utf8.RuneError && size == 1 {
			r = unicode.ReplacementChar
		}
		if c.pre == 0 && unicode.IsSpace(r) {
			if r != '\u00a0' {
				c.space = true
				continue
			}
			r = ' '
		}
		c.flush()
		if c.md && c.linkURL != "" && (r == '[' || r == ']') {
			c.b.WriteByte('\\')
		}
		c.b.WriteRune(r)
	}
}

// flush writes what is owed before the next character of text.
func (c *converter) flush() {
	switch {
	case c.b.Len() == 0:
	case c.nl > 0:
		c.b.WriteString("\n\n"[:c.nl])
	case c.space:
		c.b.WriteByte(' ')
	}
	if c.nl > 0 || c.b.Len() == 0 {
		c.b.WriteString(c.prefix)
		c.prefix = ""
	}
	c.nl, c.space = 0, false
	if c.linkURL != "" && !c.linkOpened {
		c.b.WriteByte('[')
		c.linkOpened = true
	}
}

func isASCIILetter(b byte) bool { return (b|0x20) >= 'a' && (b|0x20) <= 'z' }

// skipTag returns the index after the '>' that ends the tag begun before i.
func skipTag(page string, i int) int {
	j := strings.IndexByte(page[i:], '>')
	if j < 0 {
		return len(page)
	}
	return i + j + 1
}

// tagAttrs reads a tag's attributes from page[i:] up to its '>' (quotes respected)
// and returns the index after it. Names are lower-cased, values decoded.
func tagAttrs(page string, i int) (int, map[string]string) {
	attrs := map[string]string{}
	for i < len(page) {
		for i < len(page) && (page[i] == ' ' || page[i] == '\t' || page[i] == '\n' || page[i] == '\r' || page[i] == '\f' || page[i] == '/') {
			i++
		}
		if i >= len(page) {
			break
		}
		if page[i] == '>' {
			return i + 1, attrs
		}
		n := i
		for i < len(page) && !strings.ContainsRune(" \t\n\r\f/>=", rune(page[i])) {
			i++
		}
		if i == n { // a lone '='
			i++
			continue
		}
		name := strings.ToLower(page[n:i])
		if i >= len(page) || page[i] != '=' {
			attrs[name] = ""
			continue
		}
		i++
		var val string
		switch {
		case i < len(page) && (page[i] == '"' || page[i] == '\''):
			q := page[i]
			j := strings.IndexByte(page[i+1:], q)
			if j < 0 {
				return len(page), attrs
			}
			val, i = page[i+1:i+1+j], i+1+j+1
		default:
			n := i
			for i < len(page) && !strings.ContainsRune(" \t\n\r\f>", rune(page[i])) {
				i++
			}
			val = page[n:i]
		}
		attrs[name] = html.UnescapeString(val)
	}
	return len(page), attrs
}

// skipRawText returns the index after the end tag of the raw-text element name
// whose content starts at i, or the page's end.
func skipRawText(page string, i int, name string) int {
	for {
		j := strings.Index(page[i:], "</")
		if j < 0 {
			return len(page)
		}
		i += j + 2
		if len(page)-i >= len(name) && strings.EqualFold(page[i:i+len(name)], name) {
			k := i + len(name)
			if k == len(page) || !isASCIILetter(page[k]) {
				return skipTag(page, k)
			}
		}
	}
}
