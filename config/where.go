package config

import (
	"regexp"
	"strconv"
	"strings"
)

// A value problem is reported as fail(where, message): where names the table
// ("server", "server.auth.keys[1]", `plugins[2] ("web")`, `plugins[2] ("web"): dirs[0]`)
// and the message starts with the key it is about ("memory_mib 0 out of range"). lineOf
// finds the line of that key from the two, so every check written that way, in this
// file or the others of the package, reports its line without knowing about lines.

// wherePattern splits a where: the table path, an optional plugin name, and an
// optional sub-table with its index.
var wherePattern = regexp.MustCompile(`^([a-z_.]+)(?:\[(\d+)\])?(?: \("(?:[^"\\]|\\.)*"\))?(?:: ([a-z_]+)\[(\d+)\])?$`)

// keyWord is the key a message starts with, such as "memory_mib" or "net_limits.timeout".
var keyWord = regexp.MustCompile(`^[a-z_][a-z0-9_.]*`)

// written reports whether the table where names has key in the file.
func written(lines []keyLine, where, key string) bool {
	table, plugin, index, ok := parseWhere(where)
	if !ok {
		return false
	}
	for _, kl := range scope(lines, table, plugin, index) {
		if kl.key == table+"."+key {
			return true
		}
	}
	return false
}

// parseWhere splits a where into the table's full key, the plugin index (-1: not in a
// plugin) and the index in an array of tables (-1: not one).
func parseWhere(where string) (table string, plugin, index int, ok bool) {
	m := wherePattern.FindStringSubmatch(where)
	if m == nil {
		return "", -1, -1, false
	}
	table, index, plugin = m[1], atoi(m[2]), -1
	if table == "plugins" {
		plugin, index = index, -1
	}
	if m[3] != "" {
		table += "." + m[3]
		index = atoi(m[4])
	}
	return table, plugin, index, true
}

// lineOf returns the line in the file that the problem fail(where, msg) is about: the
// key the message names, else the table it is in, else 0 (unknown).
func lineOf(lines []keyLine, where, msg string) int {
	table, plugin, index, ok := parseWhere(where)
	if !ok {
		return 0
	}
	region := scope(lines, table, plugin, index)
	if len(region) == 0 {
		return 0
	}
	if word := keyWord.FindString(msg); word != "" {
		for _, k := range []string{word, word + "s"} { // "header" is about key "headers"
			for _, kl := range region {
				if kl.key == table+"."+k {
					return kl.line
				}
			}
		}
	}
	return region[0].line
}

// scope returns the lines of one table: its header (or, for a table written inline,
// its key) first, then its keys. plugin >= 0 keeps the lines of that [[plugins]]
// entry; index >= 0 picks that entry of an array of tables.
func scope(lines []keyLine, table string, plugin, index int) []keyLine {
	var in []keyLine
	for _, kl := range lines {
		if plugin < 0 || kl.plugin == plugin {
			in = append(in, kl)
		}
	}
	start, n := -1, 0
	for i, kl := range in {
		if kl.key != table || (table == "plugins" && kl.plugin != plugin) {
			continue
		}
		if index < 0 || n == index {
			start = i
			break
		}
		n++
	}
	if start < 0 && table == "plugins" {
		return in // plugins = [{...}]: the entry's keys
	}
	if start < 0 && index > 0 {
		return scope(lines, table, plugin, -1) // an inline array: its first line
	}
	if start < 0 {
		return nil
	}
	end := start + 1
	for end < len(in) && strings.HasPrefix(in[end].key, table+".") && !(in[end].header && in[end].key == table) {
		end++
	}
	return in[start:end]
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// keysOf returns the line of each key written directly in the table where names
// ("memory_mib", not "dirs.host"), or nil.
func keysOf(lines []keyLine, where string) map[string]int {
	table, plugin, index, ok := parseWhere(where)
	if !ok {
		return nil
	}
	var out map[string]int
	for _, kl := range scope(lines, table, plugin, index) {
		k, ok := strings.CutPrefix(kl.key, table+".")
		if !ok || strings.Contains(k, ".") || kl.header {
			continue
		}
		if out == nil {
			out = map[string]int{}
		}
		out[k] = kl.line
	}
	return out
}
