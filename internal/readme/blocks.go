package readme

import (
	"fmt"
	"strings"
)

// Markers that mark the block after them.
const (
	TestMarker = "<!-- readme-test -->" // a shell block the test runs
	TourMarker = "<!-- readme-tour -->" // the tour's JSON lines
)

// Block is one fenced code block of a Markdown document.
type Block struct {
	Line int    // of the opening fence, 1-based
	Lang string // the fence's info string, such as "sh"
	Text string // the content, each line ending in "\n"
}

// MarkedBlocks returns the fenced blocks that directly follow a line holding only
// marker (blank lines may come between), in document order. A marker not followed by
// a fence, or a fence never closed, is an error naming its line.
func MarkedBlocks(doc, marker string) ([]Block, error) {
	lines := strings.Split(doc, "\n")
	var out []Block
	for i := 0; i < len(lines); i++ {
		if fence, _, ok := openFence(lines[i]); ok { // a marker inside a block is not one
			end := closeFence(lines, i+1, fence)
			if end < 0 {
				return nil, fmt.Errorf("line %d: code block never closed", i+1)
			}
			i = end
			continue
		}
		if strings.TrimSpace(lines[i]) != marker {
			continue
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j == len(lines) {
			return nil, fmt.Errorf("line %d: %s is not followed by a code block", i+1, marker)
		}
		fence, lang, ok := openFence(lines[j])
		if !ok {
			return nil, fmt.Errorf("line %d: %s is not followed by a code block", i+1, marker)
		}
		end := closeFence(lines, j+1, fence)
		if end < 0 {
			return nil, fmt.Errorf("line %d: code block never closed", j+1)
		}
		var text strings.Builder
		for _, l := range lines[j+1 : end] {
			text.WriteString(l)
			text.WriteByte('\n')
		}
		out = append(out, Block{Line: j + 1, Lang: lang, Text: text.String()})
		i = end
	}
	return out, nil
}

// openFence reports whether line opens a fenced block (three or more backticks or
// tildes, CommonMark 4.5), and returns the fence and the info string's first word.
func openFence(line string) (fence, lang string, ok bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return "", "", false
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	if n < 3 {
		return "", "", false
	}
	info := strings.TrimSpace(t[n:])
	if t[0] == '`' && strings.Contains(info, "`") {
		return "", "", false
	}
	lang, _, _ = strings.Cut(info, " ")
	return t[:n], lang, true
}

// closeFence returns the index of the line that closes fence, from lines[from], or -1.
func closeFence(lines []string, from int, fence string) int {
	for k := from; k < len(lines); k++ {
		t := strings.TrimSpace(lines[k])
		if len(t) >= len(fence) && t[0] == fence[0] && strings.Trim(t, fence[:1]) == "" {
			return k
		}
	}
	return -1
}
