package main

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
)

// templates are the plugin folders `new` writes, one per language; each file is a
// text/template named like its output plus ".tmpl" ("plugin" becomes the plugin's
// name), so that the Go tools never take a template for this module's source. The
// actions are written {%.Name%}: Go and C code is full of "{{".
//
//go:embed templates
var templates embed.FS

// sdkModule is the guest SDK's module path; a generated Go plugin requires it.
const sdkModule = "github.com/mcp-wasmhost/mcp-wasmhost/sdk-guest"

// templateData is what the templates are given.
type templateData struct {
	Name      string // the plugin's name, also its Go module path and .wasm name
	SDK       string // the absolute path of a checkout's sdk-guest folder
	GoVersion string // the go directive of the SDK's go.mod
}

// runNew is `mcp-wasmhost new go|c NAME [DIR]`: a plugin folder that builds, tests
// and prints its [[plugins]] table.
func runNew(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("mcp-wasmhost new", flag.ContinueOnError)
	fset.SetOutput(stderr)
	sdk := fset.String("sdk", "", "the sdk-guest folder of an mcp-wasmhost checkout (default: found above the working directory)")
	fset.Usage = func() {
		fmt.Fprint(stderr, `usage: mcp-wasmhost new [--sdk DIR] go|c NAME [DIR]

Writes a plugin folder (default ./NAME) with a tool, its test and a Makefile: make
builds NAME.wasm and prints the [[plugins]] table to paste, make test runs the test.

flags:
`)
		fset.PrintDefaults()
	}
	pos, err := parseInterleaved(fset, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: 2, err: err}
	}
	if len(pos) < 2 || len(pos) > 3 {
		fset.Usage()
		return usage("new: want go|c NAME [DIR]")
	}
	lang, name := pos[0], pos[1]
	if lang != "go" && lang != "c" {
		return usage("new: language %q: want go or c", lang)
	}
	if !pluginNameRE.MatchString(name) {
		return usage("new: name %q: want 1-32 characters of a-z, 0-9 and '-', starting with a letter (it becomes the plugin's name)", name)
	}
	dir := name
	if len(pos) == 3 {
		dir = pos[2]
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("new: %s exists and is not empty", dir)
	}
	data := templateData{Name: name}
	if data.SDK, err = findSDK(*sdk); err != nil {
		return err
	}
	if data.GoVersion, err = sdkGoVersion(data.SDK); err != nil {
		return err
	}
	files, err := render(lang, data)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.body, f.mode); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "wrote a %s plugin in %s: cd %s && make && make test\n", lang, dir, dir)
	return nil
}

var pluginNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

type renderedFile struct {
	name string
	body []byte
	mode fs.FileMode
}

// render executes every template of lang.
func render(lang string, data templateData) ([]renderedFile, error) {
	root := path.Join("templates", lang)
	entries, err := templates.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []renderedFile
	for _, e := range entries {
		src, err := templates.ReadFile(path.Join(root, e.Name()))
		if err != nil {
			return nil, err
		}
		t, err := template.New(e.Name()).Delims("{%", "%}").Option("missingkey=error").Parse(string(src))
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(e.Name(), ".tmpl")
		if base, ext, ok := strings.Cut(name, "."); ok && base == "plugin" {
			name = data.Name + "." + ext
		}
		mode := fs.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		out = append(out, renderedFile{name, b.Bytes(), mode})
	}
	return out, nil
}

// findSDK returns the absolute sdk-guest folder: flag, or the first one found in the
// working directory or above it.
func findSDK(flagValue string) (string, error) {
	if flagValue != "" {
		abs, err := filepath.Abs(flagValue)
		if err != nil {
			return "", err
		}
		if !isSDK(abs) {
			return "", usage("new --sdk %s: no go.mod of %s there", flagValue, sdkModule)
		}
		return abs, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if candidate := filepath.Join(dir, "sdk-guest"); isSDK(candidate) {
			return candidate, nil
		}
		if filepath.Dir(dir) == dir {
			return "", usage("new: no sdk-guest folder of an mcp-wasmhost checkout in %s or above it: run new there, or pass --sdk PATH/mcp-wasmhost/sdk-guest", wd)
		}
	}
}

func isSDK(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && bytes.HasPrefix(b, []byte("module "+sdkModule+"\n"))
}

var goDirective = regexp.MustCompile(`(?m)^go ([0-9][0-9.]*)$`)

func sdkGoVersion(sdk string) (string, error) {
	b, err := os.ReadFile(filepath.Join(sdk, "go.mod"))
	if err != nil {
		return "", err
	}
	m := goDirective.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("new: %s/go.mod has no go directive", sdk)
	}
	return string(m[1]), nil
}
