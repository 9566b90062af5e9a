package readme

import (
	"reflect"
	"strings"
	"testing"
)

func TestMarkedBlocks(t *testing.T) {
	const m = TestMarker
	tests := []struct {
		name, doc string
		want      []Block
		err       string
	}{
		{"none", "# x\n```sh\nls\n```\n", nil, ""},
		{"one", "a\n" + m + "\n```sh\nls\npwd\n```\nb\n", []Block{{Line: 3, Lang: "sh", Text: "ls\npwd\n"}}, ""},
		{"blank lines between", m + "\n\n\n```sh\nls\n```\n", []Block{{Line: 4, Lang: "sh", Text: "ls\n"}}, ""},
		{"indented marker and tildes", "  " + m + "\n~~~~ bash extra\nls\n~~~\n~~~~\n", []Block{{Line: 2, Lang: "bash", Text: "ls\n~~~\n"}}, ""},
		{"only marked ones", "```sh\nrm -rf x\n```\n" + m + "\n```sh\nls\n```\n```sh\nno\n```\n", []Block{{Line: 5, Lang: "sh", Text: "ls\n"}}, ""},
		{"marker inside a block is text", "```md\n" + m + "\n```\n```sh\nno\n```\n", nil, ""},
		{"longer fence holds a shorter one", m + "\n````md\n```sh\nx\n```\n````\n", []Block{{Line: 2, Lang: "md", Text: "```sh\nx\n```\n"}}, ""},
		{"other marker ignored", TourMarker + "\n```json\n{}\n```\n", nil, ""},
		{"marker then prose", m + "\ntext\n```sh\nls\n```\n", nil, "line 1: " + m + " is not followed by a code block"},
		{"marker at the end", "x\n" + m + "\n", nil, "line 2: " + m + " is not followed by a code block"},
		{"never closed", m + "\n```sh\nls\n", nil, "line 2: code block never closed"},
		{"two blocks", m + "\n```sh\na\n```\n" + m + "\n```\nb\n```\n", []Block{{Line: 2, Lang: "sh", Text: "a\n"}, {Line: 6, Lang: "", Text: "b\n"}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MarkedBlocks(tc.doc, m)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("MarkedBlocks(%q) = %v, %v; want error %q", tc.doc, got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("MarkedBlocks(%q) = %+v, %v; want %+v", tc.doc, got, err, tc.want)
			}
		})
	}
}
