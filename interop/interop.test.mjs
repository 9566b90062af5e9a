// Interop test: the official MCP TypeScript SDK client (@modelcontextprotocol/sdk, pinned
// in package.json) against the mcp-wasmhost binary, over stdio and Streamable HTTP.
//
// Run: cd interop && npm ci && node --test
//
// The test builds the server itself and writes its own config (helpers.mjs: absolute
// plugin paths, the sha256 pins read from ../config.toml, a temporary /notes grant and
// compilation cache), so it never writes into the repository. The Tasks interop tests
// are tasks-*.test.mjs beside it.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

import { alive, cleanup, openTransport, prepare, repo, shutDown, text, TRANSPORTS } from './helpers.mjs';

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

let env; // { tmp, binary, configPath, notesDir }: everything the test writes lives under env.tmp
let notesDir;

before(async () => {
  env = await prepare();
  notesDir = env.notesDir;
});

after(async () => {
  await cleanup(env);
});

async function expectInvalidParams(promise) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof McpError, `want McpError, got ${err}`);
    assert.equal(err.code, ErrorCode.InvalidParams);
    assert.equal(err.code, -32602);
    return true;
  });
}

for (const kind of TRANSPORTS) {
  describe(`TypeScript SDK client over ${kind}`, () => {
    let client;
    let conn;
    let pid;
    // What the elicitation handler answers next, and the requests it saw.
    let elicitAnswer;
    const elicitations = [];
    const clientErrors = [];

    before(async () => {
      conn = await openTransport(kind, env, { Stdio: StdioClientTransport, HTTP: StreamableHTTPClientTransport });
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

    after(() => shutDown({ kind, conn, client, pid }));

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
