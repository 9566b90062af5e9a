package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mcp-wasmhost/mcp-wasmhost/config"
	"github.com/mcp-wasmhost/mcp-wasmhost/host"
	"github.com/mcp-wasmhost/mcp-wasmhost/internal/wasmfile"
	"github.com/mcp-wasmhost/mcp-wasmhost/sandbox"
)

// Bounds of inspect: the largest file it reads (a Go plugin is 4-12 MB), and how
// long loading may take (compiling a large module cold takes a few seconds).
const (
	maxInspectBytes = 256 << 20
	inspectTimeout  = 2 * time.Minute
)

// runInspect is `mcp-wasmhost inspect PLUGIN.wasm`: what the file declares, what it
// offers when loaded as the server loads it (in a worker), and the problems check
// would report. It exits 1 if the server would refuse the plugin.
func runInspect(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp-wasmhost inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var pf pluginFlags
	pf.register(fs, false)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: mcp-wasmhost inspect [flags] PLUGIN.wasm
       mcp-wasmhost inspect --config FILE [flags] PLUGIN-NAME

Prints the module's size, sha256 and pin line, imports and exports, memories and
tables, its manifest (tools with schemas, resources, prompts) and the problems
check would report. Exits 1 if the server would refuse it.

flags:
`)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: 2, err: err}
	}
	if len(pos) != 1 {
		fs.Usage()
		return usage("inspect: want one PLUGIN")
	}
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()

	path := pos[0]
	memoryMiB := pf.memoryMiB
	if pf.config != "" {
		cfg, i, err := pf.pluginConfig(path)
		if err != nil {
			return err
		}
		path, memoryMiB = cfg.Plugins[i].Path, cfg.Plugins[i].MemoryMiB
	}
	if memoryMiB == 0 {
		memoryMiB = config.DefaultMemoryMiB
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.Size() > maxInspectBytes {
		return fmt.Errorf("inspect %s: %d bytes, over the %d MiB inspect reads (and no plugin needs)", path, st.Size(), maxInspectBytes>>20)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	w := &sectionWriter{w: stdout}
	line, err := config.PinLine(path)
	if err != nil {
		return err
	}
	w.field("file", path)
	w.field("size", fmt.Sprintf("%d bytes (%s)", len(b), mib(int64(len(b)))))
	w.field("sha256", strings.TrimSuffix(strings.TrimPrefix(line, `sha256 = "`), `"`))
	w.field("pin", line)

	var problems, warnings []string
	mod, err := wasmfile.Read(b)
	if err != nil {
		problems = append(problems, err.Error())
	} else {
		describeModule(w, mod)
		if pages := mod.InitialMemoryPages(); pages*wasmfile.PageSize > uint64(memoryMiB)<<20 {
			need := (pages*wasmfile.PageSize + 1<<20 - 1) >> 20
			problems = append(problems, fmt.Sprintf("the module's memory starts at %d pages (%s), above memory_mib %d: raise memory_mib to at least %d",
				pages, mib(int64(pages*wasmfile.PageSize)), memoryMiB, need))
		}
	}

	// The manifest, from the plugin loaded as the server loads it.
	if pf.config == "" {
		pf.memoryMiB = memoryMiB
	}
	cfg, i, err := pf.pluginConfig(pos[0])
	if err != nil {
		return err
	}
	logger, err := stderrLogger(pf.logLevel, stderr)
	if err != nil {
		return err
	}
	l, err := loadPlugin(ctx, cfg, i, logger)
	if err != nil {
		problems = append(problems, err.Error())
	} else {
		defer l.Close(context.WithoutCancel(ctx))
		w.field("abi", fmt.Sprintf("version %d (the host checked it at load)", sandbox.ABIVersion))
		describeManifest(w, l)
		for _, err := range host.Vet(l.catalog) {
			problems = append(problems, err.Error())
		}
		if len(l.catalog.Tools()) == 0 {
			warnings = append(warnings, "the plugin offers no tools: a Go plugin must call guest.Add in init(), not in main(), which never runs in a reactor module")
		}
	}

	w.section("problems", len(problems)+len(warnings))
	for _, p := range problems {
		w.item("error: " + p)
	}
	for _, p := range warnings {
		w.item("warning: " + p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("inspect %s: %d problem(s): the server would refuse this plugin", pos[0], len(problems))
	}
	return nil
}

func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// sectionWriter prints inspect's report: fields, and sections of indented items.
type sectionWriter struct{ w io.Writer }

func (s *sectionWriter) field(name, value string) { fmt.Fprintf(s.w, "%-10s %s\n", name, value) }
func (s *sectionWriter) section(name string, n int) {
	fmt.Fprintf(s.w, "%s (%d)\n", name, n)
}
func (s *sectionWriter) item(text string) { fmt.Fprintf(s.w, "  %s\n", text) }

func describeModule(w *sectionWriter, m *wasmfile.Module) {
	w.section("imports", len(m.Imports))
	for _, im := range m.Imports {
		desc := string(im.Kind)
		switch {
		case im.Type != "":
			desc += " " + im.Type
		case im.Memory != nil:
			desc += " " + memoryText(*im.Memory)
		case im.Table != nil:
			desc += " " + im.Table.ElemType + " " + im.Table.Limits.String()
		}
		w.item(fmt.Sprintf("%s.%s  %s", im.Module, im.Name, desc))
	}
	w.section("exports", len(m.Exports))
	for _, e := range m.Exports {
		w.item(strings.TrimSpace(fmt.Sprintf("%s  %s %s", e.Name, e.Kind, e.Type)))
	}
	w.section("memories", len(m.Memories))
	for i, mem := range m.Memories {
		w.item(fmt.Sprintf("%d: %s", i, memoryText(mem)))
	}
	w.section("tables", len(m.Tables))
	for i, t := range m.Tables {
		w.item(fmt.Sprintf("%d: %s %s", i, t.ElemType, t.Limits.String()))
	}
}

func memoryText(m wasmfile.Memory) string {
	s := fmt.Sprintf("min %d pages (%s), no max", m.Min, mib(int64(m.Min*wasmfile.PageSize)))
	if m.HasMax {
		s = fmt.Sprintf("min %d pages (%s), max %d", m.Min, mib(int64(m.Min*wasmfile.PageSize)), m.Max)
	}
	if m.Shared {
		s += ", shared"
	}
	if m.Memory64 {
		s += ", 64-bit"
	}
	return s
}

func describeManifest(w *sectionWriter, l *loadedPlugin) {
	c := l.catalog
	w.section("tools", len(c.Tools()))
	for _, t := range c.Tools() {
		w.item(fmt.Sprintf("%s  [task %s]  %s", t.Name, t.TaskSupport, firstLine(t.Description)))
		w.item("  input:  " + compactJSON(t.InputSchema))
		if t.OutputSchema != nil {
			w.item("  output: " + compactJSON(t.OutputSchema))
		}
	}
	w.section("resources", len(c.Resources())+len(c.Templates()))
	for _, r := range c.Resources() {
		w.item(strings.TrimSpace(fmt.Sprintf("%s  %s %s", r.URI, r.MimeType, firstLine(r.Description))))
	}
	for _, r := range c.Templates() {
		w.item(strings.TrimSpace(fmt.Sprintf("%s  (template) %s", r.URITemplate, firstLine(r.Description))))
	}
	w.section("prompts", len(c.Prompts()))
	for _, p := range c.Prompts() {
		var args []string
		for _, a := range p.Arguments {
			name := a.Name
			if a.Required {
				name += " (required)"
			}
			args = append(args, name)
		}
		w.item(strings.TrimSpace(fmt.Sprintf("%s(%s)  %s", p.Name, strings.Join(args, ", "), firstLine(p.Description))))
	}
}

func compactJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
