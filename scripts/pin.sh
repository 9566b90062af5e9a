#!/bin/sh
# Rewrites every sha256 in a config file to the digest of the path above it, for the
# bundled plugins built from source here. Usage: scripts/pin.sh [config.toml]
# Never run it on a config that names plugins you did not build yourself: the pin is
# what makes the server refuse a tampered file.
set -eu
cfg=${1:-config.toml}
dir=$(dirname "$cfg")
tmp=$(mktemp)
awk -v dir="$dir" '
  /^path = "/ { p = $0; sub(/^path = "/, "", p); sub(/".*$/, "", p) }
  /^sha256 = "/ && p != "" {
    cmd = "sha256sum \"" (p ~ /^\// ? p : dir "/" p) "\""
    cmd | getline out; close(cmd); split(out, f, " ")
    print "sha256 = \"" f[1] "\""; p = ""; next
  }
  { print }
' "$cfg" > "$tmp"
cat "$tmp" > "$cfg"
rm -f "$tmp"
