// Tasks interop on MCP 2026-07-28: @modelcontextprotocol/ext-tasks 0.2.2 on its
// 2026-07-28 path (the Tasks extension io.modelcontextprotocol/tasks), with an
// @modelcontextprotocol/client 2.3.1 Client pinned to 2026-07-28, against the
// mcp-wasmhost binary over Streamable HTTP (stateless).
//
// The session sends tasks/* through rawDispatch, a plain fetch here (the SDK Client's
// codecs reject the extension's results), framed with the per-request _meta the
// extension needs. A task that asks for input shows it in tasks/get's inputRequests;
// the session answers with tasks/update.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createApplicationInputHandler, createTaskSessionFromClient } from '@modelcontextprotocol/ext-tasks/client';

import { alive, cleanup, errorLines, prepare, startHTTPServer, text } from './helpers.mjs';

const VERSION = '2026-07-28';
const EXTENSION = 'io.modelcontextprotocol/tasks';
const clientInfo = { name: 'mcp-wasmhost-interop-ext-tasks-v2', version: '0.0.0' };
const clientCapabilities = { elicitation: { form: {} }, extensions: { [EXTENSION]: {} } };

let env;
before(async () => {
  env = await prepare('mcp-wasmhost-tasks-ext-v2-');
});
after(async () => {
  await cleanup(env);
});

/**
 * ext-tasks' rawDispatch: sends one request ({method, params}, already framed with the
 * per-request _meta) as a 2026-07-28 client would, and answers {kind: "result", result}
 * or {kind: "error", error}.
 */
function rawDispatcher(url, sent) {
  let nextId = 1;
  return async (request, options = {}) => {
    sent.push(request);
    const id = nextId++;
    const headers = {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': VERSION,
      'Mcp-Method': request.method,
      ...(options.context?.headers ?? {}),
    };
    const p = request.params ?? {};
    if (request.method === 'tools/call') headers['Mcp-Name'] = p.name;
    else if (request.method.startsWith('tasks/') && p.taskId) headers['Mcp-Name'] = p.taskId;
    const res = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id, method: request.method, params: p }),
      signal: options.signal,
    });
    const body = await res.text();
    let msg;
    if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
      for (const line of body.split(/\r?\n/)) {
        if (!line.startsWith('data:')) continue;
        const m = JSON.parse(line.slice(5));
        if (m.id === id && ('result' in m || 'error' in m)) msg = m;
      }
    } else {
      try {
        msg = JSON.parse(body);
      } catch {
        // not JSON: reported below
      }
    }
    if (!msg || !('result' in msg || 'error' in msg)) throw new Error(`${request.method}: HTTP ${res.status}: ${body}`);
    return 'error' in msg ? { kind: 'error', error: msg.error } : { kind: 'result', result: msg.result };
  };
}

describe('ext-tasks 0.2.2 (2026-07-28 path) over Streamable HTTP', () => {
  let server;
  let client;
  let session;
  const sent = [];
  const asked = [];
  const sessionErrors = [];

  before(async () => {
    server = await startHTTPServer(env);
    client = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: { pin: VERSION } } });
    await client.connect(new StreamableHTTPClientTransport(server.url));
    assert.equal(client.getProtocolEra(), 'modern');
    session = createTaskSessionFromClient(client, {
      endpointId: 'mcp-wasmhost-interop-v2',
      rawDispatch: rawDispatcher(server.url, sent),
      v2RequestFraming: { protocolVersion: VERSION, clientInfo, clientCapabilities },
      onInputRequest: createApplicationInputHandler({
        elicitation: async (request, context) => {
          asked.push({ request, context });
          return { action: 'accept', content: { confirm: true } };
        },
        sampling: async () => {
          throw new Error('this test does not sample');
        },
        roots: async () => ({ roots: [] }),
      }),
      onError: (err) => sessionErrors.push(err),
    });
  });

  after(async () => {
    const pid = server?.child.pid;
    try {
      await session?.close();
      await client?.close();
      await server?.stop();
    } finally {
      if (pid && alive(pid)) {
        process.kill(pid, 'SIGKILL');
        assert.fail(`server process ${pid} still ran after stop`);
      }
    }
  });

  test('the server offers the Tasks extension, and not 2025-11-25 capabilities.tasks', () => {
    const caps = client.getServerCapabilities();
    assert.ok(caps.extensions?.[EXTENSION], JSON.stringify(caps));
    assert.equal(caps.tasks, undefined);
  });

  test('toolbox_write_note becomes a task that asks for input; tasks/update answers it; completed', async () => {
    const name = 'ext-tasks-v2.txt';
    const body = 'written through ext-tasks on 2026-07-28 ✓\n';
    const execution = await session.callTool('toolbox_write_note', { name, text: body }, { requestTimeoutMs: 20_000 });
    assert.equal(execution.kind, 'task', `the server made it a task: ${JSON.stringify(execution)}`);
    const taskId = execution.handle.taskId;
    const events = [];
    const { outcome } = await execution.settle({ onEvent: (e) => events.push(e) });
    const statuses = events.filter((e) => e.type === 'task').map((e) => e.task.status);
    assert.equal(outcome.status, 'completed', `outcome ${JSON.stringify(outcome)} (${outcome.error?.message}; ${outcome.error?.cause}); statuses ${statuses}; log ${server.log()}`);
    assert.equal(text(outcome.result), `Created note ${name} (${Buffer.byteLength(body)} bytes).`);
    assert.equal(await readFile(join(env.notesDir, name), 'utf8'), body);

    assert.equal(asked.length, 1, 'asked once');
    assert.equal(asked[0].request.kind, 'elicitation');
    assert.equal(asked[0].context.taskId, taskId);
    assert.match(asked[0].request.params.message, /ext-tasks-v2\.txt/);
    // On the wire: the answer went back by tasks/update, and tasks/result was never used.
    const methods = sent.map((r) => r.method);
    assert.ok(methods.includes('tasks/update'), `${methods}`);
    assert.ok(!methods.includes('tasks/result'), `${methods}`);
    const update = sent.find((r) => r.method === 'tasks/update');
    assert.equal(update.params.taskId, taskId);
    assert.deepEqual(Object.values(update.params.inputResponses), [{ action: 'accept', content: { confirm: true } }]);
  });

  test('cancelling a running toolbox_timer task ends it as cancelled', async () => {
    const execution = await session.callTool('toolbox_timer', { seconds: 30, label: 'never' }, { requestTimeoutMs: 20_000 });
    assert.equal(execution.kind, 'task');
    const settled = execution.settle({ close: false });
    await execution.cancel();
    const res = await settled;
    assert.equal(res.outcome.status, 'cancelled', JSON.stringify(res.outcome));
    await execution.close();
  });

  test('no session errors and no server ERROR log lines', () => {
    assert.deepEqual(sessionErrors.map(String), []);
    assert.deepEqual(errorLines(server.log()), [], server.log());
  });
});
