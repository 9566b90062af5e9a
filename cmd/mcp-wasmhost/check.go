package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mcp-wasmhost/mcp-wasmhost/config"
	"github.com/mcp-wasmhost/mcp-wasmhost/plugins"
	"github.com/mcp-wasmhost/mcp-wasmhost/worker"
)

// initRule is the warning for a plugin that declares no tools: the usual cause.
const initRule = "no tools: a Go plugin registers its tools in init(), not main() " +
	"(a reactor's main never runs); a plugin that serves only resources or prompts may ignore this"

// checkFlags parses the flags after "check".
func checkFlags(args []string, stderr io.Writer) (strict bool, err error) {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&strict, "strict", false, "fail on warnings too (a plugin with no tools)")
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	if fs.NArg() > 0 {
		return false, fmt.Errorf("check: unexpected argument %q", fs.Arg(0))
	}
	return strict, nil
}

// checkReport prints a table per plugin (where it is declared, what it is, what it
// may use, what it offers), then the tools, prompts and resources. It fails if a
// plugin was refused, and with strict also on a warning. c is nil when no plugin
// loaded (the caller reports that).
func checkReport(w io.Writer, cfg *config.Config, loaded []*plugins.Plugin, errs []error, c *plugins.Catalog, refused []error, strict bool) error {
	warnings := 0
	for i, pc := range cfg.Plugins {
		warnings += pluginTable(w, pc, loaded[i], errs[i])
		fmt.Fprintln(w)
	}
	if c == nil { // nothing loaded
		return nil
	}
	if err := report(w, c, refused); err != nil {
		return err
	}
	if strict && warnings > 0 {
		return fmt.Errorf("check --strict: %d warning(s)", warnings)
	}
	return nil
}

// pluginTable prints one plugin's table and returns its number of warnings.
func pluginTable(w io.Writer, pc config.Plugin, p *plugins.Plugin, loadErr error) (warnings int) {
	fmt.Fprintf(w, "plugin %s  %s\n", pc.Name, pc.Where)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "  %s\t%s\n", k, v) }
	row("path", pc.Path)
	row("sha256", pc.SHA256)
	if pc.Trusted {
		row("mode", "trusted (in the server process)")
	} else {
		n := pc.Workers
		if n == 0 {
			n = worker.DefaultProcesses
		}
		row("mode", fmt.Sprintf("worker (%d processes)", n))
	}
	row("memory", fmt.Sprintf("%d MiB", pc.MemoryMiB))
	row("timeout", pc.Timeout.String())
	row("dirs", orNone(dirs(pc.Dirs)))
	row("env", orNone(envNames(pc)))
	row("net", orNone(origins(pc.Net)))
	switch {
	case loadErr != nil:
		row("refused", firstLine(loadErr.Error()))
	default:
		row("offers", fmt.Sprintf("%d tools, %d resources, %d templates, %d prompts",
			len(p.Tools), len(p.Resources), len(p.Templates), len(p.Prompts)))
		if len(p.Tools) == 0 {
			row("warning", initRule)
			warnings++
		}
	}
	tw.Flush()
	return warnings
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// dirs lists directory grants as "GUEST <- HOST (ro|rw)".
func dirs(ds []config.Dir) string {
	var out []string
	for _, d := range ds {
		mode := "ro"
		if d.Writable {
			mode = "rw"
		}
		out = append(out, fmt.Sprintf("%s <- %s (%s)", d.Guest, d.Host, mode))
	}
	return strings.Join(out, ", ")
}

// envNames lists the guest's variables by name, never by value: env's, then
// inherit_env's (marked "from the server").
func envNames(pc config.Plugin) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(pc.Env)) {
		out = append(out, k)
	}
	for _, k := range pc.InheritEnv {
		out = append(out, k+" (from the server)")
	}
	return strings.Join(out, ", ")
}

// origins lists the network grants' origins, with their methods when limited.
func origins(ns []config.Net) string {
	var out []string
	for _, n := range ns {
		s := strings.Join(n.Origins, " ")
		if len(n.Methods) > 0 {
			s += " (" + strings.Join(n.Methods, ", ") + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}
