package main

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestConvert(t *testing.T) {
	base, _ := url.Parse("https://example.com/docs/page.html")
	page := `<!DOCTYPE html><html><head><title>T</title><style>p{color:red}</style>
<script>var x = "<p>not text</p>";</script></head><body>
<h1>Main &amp; title</h1><!-- a comment <p>hidden</p> -->
<p>First   paragraph
with <a href="../about?x=1">an  <b>about</b> link</a> and <a href="javascript:alert(1)">js</a>.</p>
<ul><li>one</li><li>two &lt;3&gt;</li></ul>
<h2>Second</h2><p>caf&eacute; &#8212; &#x263A;<br>next line</p>
<SCRIPT type="x">document.write('</scrip>')</SCRIPT ><p>end</p>
</body></html>`
	for _, tc := range []struct {
		name     string
		markdown bool
		want     string
	}{
		{"text", false, "Main & title\n\nFirst paragraph with an about link and js.\n\n- one\n- two <3>\n\nSecond\n\ncafé — ☺\nnext line\n\nend"},
		{"markdown", true, "# Main & title\n\nFirst paragraph with [an about link](https://example.com/about?x=1) and js.\n\n- one\n- two <3>\n\n## Second\n\ncafé — ☺\nnext line\n\nend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Convert(page, base, tc.markdown); got != tc.want {
				t.Errorf("Convert(markdown=%v) =\n%q\nwant\n%q", tc.markdown, got, tc.want)
			}
		})
	}
}

func TestConvertBrokenMarkup(t *testing.T) {
	for _, page := range []string{"<", "a < b", "<p", "<a href='x", "<!--", "<script>", "<p>x</p", "<<>>", "</>", "<a href=x>y"} {
		t.Run(page, func(t *testing.T) {
			_ = Convert(page, nil, true) // must end, and not panic
		})
	}
	if got := Convert("a < b and c>d", nil, false); got != "a < b and c>d" {
		t.Errorf("Convert(a < b) = %q", got)
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
		cut  bool
	}{{"hello", 10, "hello", false}, {"hello", 3, "hel", true}, {"héllo", 2, "h", true}} {
		got, cut := truncate(tc.in, tc.n)
		if got != tc.want || cut != tc.cut {
			t.Errorf("truncate(%q, %d) = %q, %v, want %q, %v", tc.in, tc.n, got, cut, tc.want, tc.cut)
		}
	}
}

// FuzzConvert: any page converts to valid UTF-8 without panicking.
func FuzzConvert(f *testing.F) {
	for _, s := range []string{"<p>x</p>", "<a href=\"/y\">z</a>", "<script>", "<!-- x", "&amp;&#0;&#xD800;", "<pre> a\n b</pre>"} {
		f.Add(s)
	}
	base, _ := url.Parse("http://h/")
	f.Fuzz(func(t *testing.T, page string) {
		for _, md := range []bool{false, true} {
			out := Convert(page, base, md)
			if !utf8.ValidString(out) {
				t.Fatalf("Convert(%q) = %q: not UTF-8", page, out)
			}
			if strings.Contains(page, "\x00<script>") && strings.Contains(out, "<script>") {
				t.Fatalf("script kept")
			}
		}
	})
}
