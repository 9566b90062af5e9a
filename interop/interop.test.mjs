// Interop test: the official MCP TypeScript SDK client (@modelcontextprotocol/sdk, pinned
// in package.json) against the mcp-wasmhost binary, over stdio and Streamable HTTP.
//
// Run: cd interop && npm install && node --test
//
// The test builds the server itself, writes its own config (absolute plugin paths, the
// sha256 pins read from ../config.toml, a temporary /notes grant and compilation cache),
// so it never writes into the repository.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..');

const EXPECTED_TOOLS = [
  'toolbox_json_format',
  'toolbox_json_query',
  'toolbox_slow_count',
  'toolbox_list_files',
  'toolbox_read_file',
  'toolbox_write_note',
  'textkit_stats',
  'textkit_sha256',
  'textkit_base64_encode',
  'textkit_base64_decode',
  'textkit_ping',
];

// Every process the test starts, so that none outlives it whatever happens.
const children = new Set();
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function run(cmd, args, opts) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => {
      children.delete(child);
      if (code === 0) resolvePromise(out);
      else reject(new Error(`${cmd} ${args.join(' ')} exited ${code}:\n${out}`));
    });
  });
}

/** Reads name -> sha256 of every [[plugins]] table of a config.toml. */
function readPins(toml) {
  const pins = {};
  for (const block of toml.split(/^\[\[plugins\]\]\s*$/m).slice(1)) {
    const name = block.match(/^name\s*=\s*"([^"]+)"/m)?.[1];
    const sha = block.match(/^sha256\s*=\s*"([0-9a-f]{64})"/m)?.[1];
    if (name && sha) pins[name] = sha;
  }
  return pins;
}

// TOML basic strings accept JSON's escapes for the characters a path can hold.
const q = (s) => JSON.stringify(s);

/**
 * Copies config.toml with every relative path and host made absolute (against the repo
 * root, as the server resolves them against the config's folder), the writable /notes
 * grant moved to notes, and cache_dir set to cache. Everything else is kept as it is.
 */
function rewriteConfig(toml, { notes, cache }) {
  // Split into tables: each starts at a line such as [server] or [[plugins.dirs]].
  const tables = toml.split(/^(?=\[)/m);
  return tables
    .map((table) => {
      if (/^\[\[plugins\.dirs\]\]/.test(table) && /^guest\s*=\s*"\/notes"/m.test(table)) {
        table = table.replace(/^host\s*=\s*"[^"]*"/m, `host = ${q(notes)}`);
      }
      table = table.replace(/^(path|host)(\s*=\s*)"([^"]+)"/gm, (all, key, eq, p) =>
        isAbsolute(p) ? all : `${key}${eq}${q(join(repo, p))}`,
      );
      return table.replace(/^cache_dir\s*=\s*"[^"]*"/m, `cache_dir = ${q(cache)}`);
    })
    .join('');
}

let tmp; // everything the test writes lives under here
let binary;
let configPath;
let notesDir;

before(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'mcp-wasmhost-interop-'));
  binary = join(tmp, 'mcp-wasmhost');
  notesDir = join(tmp, 'notes');
  configPath = join(tmp, 'config.toml');
  await mkdir(notesDir);
  const build = run('go', ['build', '-o', binary, './cmd/mcp-wasmhost'], { cwd: repo });
  build.catch(() => {}); // awaited below, after the config checks

  const original = await readFile(join(repo, 'config.toml'), 'utf8');
  const pins = readPins(original);
  for (const [name, file] of [['toolbox', 'plugins/toolbox/toolbox.wasm'], ['textkit', 'plugins/textkit/textkit.wasm']]) {
    assert.match(pins[name] ?? '', /^[0-9a-f]{64}$/, `the ${name} pin in config.toml`);
    const actual = createHash('sha256').update(await readFile(join(repo, file))).digest('hex');
    assert.equal(actual, pins[name], `${file} matches its pin in config.toml (rebuilt without \`make pins\`?)`);
  }
  const config = rewriteConfig(original, { notes: notesDir, cache: join(tmp, 'cache') });
  assert.deepEqual(readPins(config), pins, 'the copy keeps the pins');
  assert.ok(config.includes(`host = ${q(notesDir)}`), 'the /notes grant points into the temp dir');
  assert.ok(!/^(path|host)\s*=\s*"(?!\/)/m.test(config), `every path is absolute:\n${config}`);
  await writeFile(configPath, `# Written by interop/interop.test.mjs from ../config.toml.\n${config}`);
  await build;
});

after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** Starts `mcp-wasmhost --http 127.0.0.1:0` and resolves with the process and its /mcp URL. */
function startHTTPServer() {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(binary, ['--config', configPath, '--http', '127.0.0.1:0'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.add(child);
    child.on('exit', () => children.delete(child));
    let log = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no "serving Streamable HTTP" line within 20 s:\n${log}`));
    }, 20_000);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d) => {
      log += d;
      const m = log.match(/msg="serving Streamable HTTP" url=(http:\/\/127\.0\.0\.1:\d+\/mcp)/);
      if (m) {
        clearTimeout(timer);
        resolvePromise({ child, url: new URL(m[1]), log: () => log });
      }
    });
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code ?? signal}) before serving:\n${log}`));
    });
  });
}

function waitExit(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolvePromise) => {
    const timer = setTimeout(() => resolvePromise(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolvePromise(true);
    });
  });
}

const text = (res) => res.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

async function expectInvalidParams(promise) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof McpError, `want McpError, got ${err}`);
    assert.equal(err.code, ErrorCode.InvalidParams);
    assert.equal(err.code, -32602);
    return true;
  });
}

const transports = {
  stdio: async () => {
    const transport = new StdioClientTransport({
      command: binary,
      args: ['--config', configPath],
      stderr: 'pipe',
    });
    let log = '';
    transport.stderr.setEncoding('utf8');
    transport.stderr.on('data', (d) => (log += d));
    return {
      transport,
      log: () => log,
      pid: () => transport.pid,
      // Client.close() closes the transport, which ends stdin and waits for the exit.
      stop: async () => {},
    };
  },
  'streamable-http': async () => {
    const server = await startHTTPServer();
    const transport = new StreamableHTTPClientTransport(server.url);
    return {
      transport,
      log: server.log,
      pid: () => server.child.pid,
      stop: async () => {
        server.child.kill('SIGTERM');
        if (!(await waitExit(server.child, 6000))) {
          server.child.kill('SIGKILL');
          await waitExit(server.child, 2000);
          assert.fail('the HTTP server did not exit within 6 s of SIGTERM');
        }
      },
    };
  },
};

for (const [kind, open] of Object.entries(transports)) {
  describe(`TypeScript SDK client over ${kind}`, () => {
    let client;
    let conn;
    let pid;
    // What the elicitation handler answers next, and the requests it saw.
    let elicitAnswer;
    const elicitations = [];
    const clientErrors = [];

    before(async () => {
      conn = await open();
      client = new Client(
        { name: 'mcp-wasmhost-interop', version: '0.0.0' },
        { capabilities: { elicitation: { form: {} } } },
      );
      client.onerror = (err) => clientErrors.push(err);
      client.setRequestHandler(ElicitRequestSchema, async (req) => {
        elicitations.push(req.params);
        return elicitAnswer(req.params);
      });
      await client.connect(conn.transport);
      pid = conn.pid();
      assert.ok(pid > 0 && alive(pid), 'the server process runs');
    });

    after(async () => {
      try {
        // Streamable HTTP: end the session with DELETE /mcp (the server answers 204).
        if (kind === 'streamable-http' && conn) await conn.transport.terminateSession();
        await client?.close();
        await conn?.stop();
      } finally {
        if (pid && alive(pid)) {
          process.kill(pid, 'SIGKILL');
          assert.fail(`server process ${pid} still ran after close`);
        }
      }
    });

    test('initialize: server info and capabilities', () => {
      assert.equal(client.getServerVersion()?.name, 'mcp-wasmhost');
      assert.ok(client.getServerCapabilities()?.tools, 'tools capability');
    });

    test('tools/list lists every tool with an inputSchema', async () => {
      const { tools } = await client.listTools();
      const byName = new Map(tools.map((t) => [t.name, t]));
      for (const name of EXPECTED_TOOLS) {
        const t = byName.get(name);
        assert.ok(t, `${name} is listed (got ${[...byName.keys()].join(', ')})`);
        assert.equal(t.inputSchema?.type, 'object', `${name} inputSchema`);
      }
      assert.equal(byName.get('textkit_stats').outputSchema?.type, 'object');
      assert.equal(byName.get('toolbox_write_note').annotations?.destructiveHint, true);
    });

    test('textkit_ping', async () => {
      const res = await client.callTool({ name: 'textkit_ping', arguments: {} });
      assert.ok(!res.isError);
      assert.equal(text(res), 'pong');
    });

    test('textkit_sha256', async () => {
      const res = await client.callTool({ name: 'textkit_sha256', arguments: { text: 'abc' } });
      assert.ok(!res.isError);
      const want = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
      assert.deepEqual(res.structuredContent, { sha256: want });
      assert.match(text(res), new RegExp(want));
      const s = 'héllo wörld ✓ 🎉';
      const res2 = await client.callTool({ name: 'textkit_sha256', arguments: { text: s } });
      assert.equal(res2.structuredContent.sha256, createHash('sha256').update(s, 'utf8').digest('hex'));
    });

    test('textkit_base64_encode / decode round trip of non-ASCII text', async () => {
      const s = 'Grüße, 世界! 🎉\nline two';
      const enc = await client.callTool({ name: 'textkit_base64_encode', arguments: { text: s } });
      assert.ok(!enc.isError, text(enc));
      assert.equal(text(enc), Buffer.from(s, 'utf8').toString('base64'));
      const dec = await client.callTool({ name: 'textkit_base64_decode', arguments: { data: text(enc) } });
      assert.ok(!dec.isError, text(dec));
      assert.equal(text(dec), s);
    });

    test('textkit_stats structuredContent', async () => {
      const s = 'héllo wörld\nsecond line ✓';
      const res = await client.callTool({ name: 'textkit_stats', arguments: { text: s } });
      assert.ok(!res.isError, text(res));
      assert.deepEqual(res.structuredContent, {
        bytes: Buffer.byteLength(s, 'utf8'),
        chars: [...s].length,
        words: 5,
        lines: 2,
      });
    });

    test('toolbox_json_format', async () => {
      const res = await client.callTool({
        name: 'toolbox_json_format',
        arguments: { json: '{"a":[1,2],"b":{"c":"ü"}}', indent: 2 },
      });
      assert.ok(!res.isError, text(res));
      assert.equal(text(res), '{\n  "a": [\n    1,\n    2\n  ],\n  "b": {\n    "c": "ü"\n  }\n}');
      const compact = await client.callTool({
        name: 'toolbox_json_format',
        arguments: { json: '{ "a" : [ 1 ] }', indent: 0 },
      });
      assert.equal(text(compact), '{"a":[1]}');
      const bad = await client.callTool({ name: 'toolbox_json_format', arguments: { json: '{\n"a": }' } });
      assert.equal(bad.isError, true);
      assert.match(text(bad), /line 2, column 6/);
    });

    test('toolbox_json_query', async () => {
      const doc = JSON.stringify({ items: [{ name: 'first' }, { name: 'zwei', n: 12345678901234567890 }] });
      const res = await client.callTool({
        name: 'toolbox_json_query',
        arguments: { json: doc, pointer: '/items/1/name' },
      });
      assert.ok(!res.isError, text(res));
      assert.equal(text(res), '"zwei"');
      const missing = await client.callTool({
        name: 'toolbox_json_query',
        arguments: { json: doc, pointer: '/items/7' },
      });
      assert.equal(missing.isError, true);
    });

    test('toolbox_list_files and toolbox_read_file (read-only /docs)', async () => {
      const ls = await client.callTool({ name: 'toolbox_list_files', arguments: {} });
      assert.ok(!ls.isError, text(ls));
      const want = (await readdir(join(repo, 'docs'))).sort();
      for (const f of want) assert.match(text(ls), new RegExp(`^${f.replace(/\./g, '\\.')}\\b`, 'm'));

      const rf = await client.callTool({ name: 'toolbox_read_file', arguments: { path: 'ABI.md' } });
      assert.ok(!rf.isError, text(rf));
      assert.ok(text(rf).startsWith('# Guest ABI v1'), text(rf).slice(0, 80));
      assert.equal(text(rf), await readFile(join(repo, 'docs/ABI.md'), 'utf8'));

      const escape = await client.callTool({ name: 'toolbox_read_file', arguments: { path: '../go.mod' } });
      assert.equal(escape.isError, true);
    });

    test('toolbox_slow_count reports progress 1..N', async () => {
      const N = 5;
      const seen = [];
      const res = await client.callTool(
        { name: 'toolbox_slow_count', arguments: { to: N, delay_ms: 20 } },
        undefined,
        { onprogress: (p) => seen.push(p) },
      );
      assert.ok(!res.isError, text(res));
      assert.equal(res.structuredContent?.counted, N);
      assert.deepEqual(seen.map((p) => p.progress), Array.from({ length: N }, (_, i) => i + 1));
      for (const p of seen) assert.equal(p.total, N);
      assert.equal(seen.at(-1).message, `counted ${N} of ${N}`);
    });

    test('toolbox_write_note: accepted elicitation writes the note', async () => {
      const name = `accepted-${kind}.txt`;
      const body = `written over ${kind}: grüße ✓\n`;
      elicitations.length = 0;
      elicitAnswer = () => ({ action: 'accept', content: { confirm: true } });
      const res = await client.callTool({ name: 'toolbox_write_note', arguments: { name, text: body } });
      assert.ok(!res.isError, text(res));
      assert.equal(elicitations.length, 1);
      assert.match(elicitations[0].message, new RegExp(name.replace(/\./g, '\\.')));
      assert.equal(elicitations[0].requestedSchema?.properties?.confirm?.type, 'boolean');
      assert.match(text(res), /^Created note /);
      assert.equal(await readFile(join(notesDir, name), 'utf8'), body);
    });

    test('toolbox_write_note: declined elicitation writes nothing', async () => {
      const name = `declined-${kind}.txt`;
      elicitations.length = 0;
      elicitAnswer = () => ({ action: 'decline' });
      const res = await client.callTool({ name: 'toolbox_write_note', arguments: { name, text: 'nope' } });
      assert.ok(!res.isError, text(res));
      assert.equal(elicitations.length, 1);
      assert.match(elicitations[0].message, new RegExp(name.replace(/\./g, '\\.')));
      assert.match(text(res), /Not written/);
      assert.match(text(res), /decline/);
      assert.equal(existsSync(join(notesDir, name)), false);
    });

    test('invalid arguments reject with McpError -32602', async () => {
      await expectInvalidParams(client.callTool({ name: 'textkit_sha256', arguments: { text: 5 } }));
      await expectInvalidParams(client.callTool({ name: 'textkit_sha256', arguments: {} }));
      await expectInvalidParams(client.callTool({ name: 'toolbox_json_query', arguments: { json: 1, pointer: '' } }));
    });

    test('a failing tool gives isError true', async () => {
      const res = await client.callTool({ name: 'textkit_base64_decode', arguments: { data: '!!' } });
      assert.equal(res.isError, true);
      assert.ok(text(res).length > 0, 'an error message');
    });

    test('accepted elicitation without confirm writes nothing', async () => {
      const name = `unconfirmed-${kind}.txt`;
      elicitations.length = 0;
      elicitAnswer = () => ({ action: 'accept', content: { confirm: false } });
      const res = await client.callTool({ name: 'toolbox_write_note', arguments: { name, text: 'nope' } });
      assert.ok(!res.isError, text(res));
      assert.equal(elicitations.length, 1);
      assert.match(text(res), /Not written/);
      assert.equal(existsSync(join(notesDir, name)), false);
    });

    test('an unknown tool rejects with McpError -32602', async () => {
      await expectInvalidParams(client.callTool({ name: 'no_such_tool', arguments: {} }));
    });

    test('no client-side errors and no server ERROR log lines', () => {
      assert.deepEqual(clientErrors.map(String), []);
      const errors = conn.log().split('\n').filter((l) => /\blevel=ERROR\b/.test(l));
      assert.deepEqual(errors, [], conn.log());
    });
  });
}
