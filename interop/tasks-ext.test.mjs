// Tasks interop (MCP 2025-11-25): @modelcontextprotocol/ext-tasks 0.2.2, the Tasks client
// library the MCP Inspector 2.x is built on, driving an @modelcontextprotocol/client 2.3.1
// Client (its peer dependency) against the mcp-wasmhost binary, over stdio and
// Streamable HTTP.
//
// On the 2025-11-25 path this client never calls tasks/result before the task is
// terminal: it follows notifications/tasks/status (stdio) or polls tasks/get (HTTP), and
// at input_required it waits for the server to push the elicitation/create request to it
// (the pipe, or the standalone GET stream). A server that only delivered input requests
// through tasks/result would hang it here.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { createApplicationInputHandler, createTaskSessionFromClient } from '@modelcontextprotocol/ext-tasks/client';

import {
  alive,
  cleanup,
  deadline,
  errorLines,
  openTransport,
  prepare,
  sleep,
  shutDown,
  tapTransport,
  text,
  TRANSPORTS,
  unexplainedClientErrors,
  withWire,
} from './helpers.mjs';

const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const classes = { Stdio: StdioClientTransport, HTTP: StreamableHTTPClientTransport };
const TERMINAL = ['completed', 'failed', 'cancelled'];

let env;
before(async () => {
  env = await prepare('mcp-wasmhost-tasks-ext-');
});
after(async () => {
  await cleanup(env);
});

/** The task status a received message reports for taskId, if any. */
function statusIn(w, taskId) {
  if (w.dir !== '<-') return undefined;
  const m = w.msg;
  const t = m.method === 'notifications/tasks/status' ? m.params : m.result;
  return t && t.taskId === taskId ? t.status : undefined;
}

for (const kind of TRANSPORTS) {
  describe(`ext-tasks 0.2.2 (2025-11-25 path) over ${kind}`, () => {
    let client;
    let conn;
    let pid;
    let wire;
    let session;
    let onElicit = async () => ({ action: 'decline' });
    const elicitations = []; // { request, context }
    const clientErrors = [];
    const sessionErrors = [];
    let noteTaskId;
    let timerTaskId;

    before(async () => {
      conn = await openTransport(kind, env, classes);
      wire = tapTransport(conn.transport);
      client = new Client({ name: 'mcp-wasmhost-interop-ext-tasks', version: '0.0.0' }, { capabilities: { elicitation: { form: {} } } });
      client.onerror = (err) => clientErrors.push(err);
      await client.connect(conn.transport);
      pid = conn.pid();
      assert.ok(pid > 0 && alive(pid), 'the server process runs');
      assert.equal(client.getProtocolEra(), 'legacy');
      assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
      session = createTaskSessionFromClient(client, {
        endpointId: `mcp-wasmhost-interop-${kind}`,
        onInputRequest: createApplicationInputHandler({
          elicitation: async (request, context) => {
            const seen = { request, context };
            elicitations.push(seen);
            return onElicit(seen);
          },
          sampling: async () => {
            throw new Error('this test does not sample');
          },
          roots: async () => ({ roots: [] }),
        }),
        onError: (err) => sessionErrors.push(err),
      });
    });

    after(() => shutDown({ kind, conn, client, pid, first: () => session?.close() }));

    test('the session sees the server as a 2025-11-25 Tasks server with list and cancel', () => {
      assert.deepEqual(session.capabilities, {
        inventory: 'server-list',
        execution: true,
        cancellation: true,
        inputResponses: false,
        requestedRetention: true,
      });
    });

    test('toolbox_write_note as a task: input_required, the pushed elicitation is answered, completed; tasks/result only at the end', () =>
      withWire(wire, async () => {
        const name = `ext-tasks-${kind}.txt`;
        const body = `written through ext-tasks over ${kind} ✓\n`;
        const from = wire.length;
        // Answer only once the client has observed input_required itself (stdio: the
        // status notification; HTTP: its tasks/get polling), so that it must cope with it.
        let sawInputRequired;
        const inputRequired = new Promise((r) => (sawInputRequired = r));
        onElicit = async () => {
          await Promise.race([inputRequired, deadline(5000)]);
          return { action: 'accept', content: { confirm: true } };
        };
        const started = Date.now();
        const execution = await session.callTool(
          'toolbox_write_note',
          { name, text: body },
          { task: { preference: 'require', retentionMs: 30_000 }, requestTimeoutMs: 20_000 },
        );
        assert.equal(execution.kind, 'task');
        noteTaskId = execution.handle.taskId;
        const events = [];
        const { outcome } = await execution.settle({
          onEvent: (e) => {
            events.push(e);
            if (e.type === 'task' && e.task.status === 'input_required') sawInputRequired();
          },
        });
        const statuses = events.filter((e) => e.type === 'task').map((e) => e.task.status);
        assert.equal(outcome.status, 'completed', `outcome ${JSON.stringify(outcome)}; statuses ${statuses}`);
        assert.ok(statuses.includes('input_required'), `the client saw input_required: ${statuses}`);
        assert.equal(statuses.at(-1), 'completed', `${statuses}`);
        assert.equal(text(outcome.result), `Created note ${name} (${Buffer.byteLength(body)} bytes).`);
        assert.deepEqual(outcome.result._meta?.[RELATED_TASK], { taskId: noteTaskId });
        assert.equal(outcome.task?.ttl, 30_000, 'the requested retention is granted');
        assert.equal(await readFile(join(env.notesDir, name), 'utf8'), body);
        assert.ok(Date.now() - started < 10_000);

        // One pushed question, correlated to the task by its related-task _meta.
        assert.equal(elicitations.length, 1, 'asked once');
        const [{ request, context }] = elicitations;
        assert.equal(request.kind, 'elicitation');
        assert.equal(context.scope, 'task');
        assert.equal(context.delivery, 'peer-request', 'the server pushed the request');
        assert.equal(context.taskId, noteTaskId);
        assert.match(request.params.message, new RegExp(name.replace(/\./g, '\\.')));

        // On the wire: the request came unasked, and tasks/result was sent once, after the
        // client had seen the task completed.
        const mine = wire.slice(from);
        const pushed = mine.findIndex((w) => w.dir === '<-' && w.msg.method === 'elicitation/create');
        const results = mine.map((w, i) => [w, i]).filter(([w]) => w.dir === '->' && w.msg.method === 'tasks/result');
        const terminal = mine.findIndex((w) => TERMINAL.includes(statusIn(w, noteTaskId)));
        assert.ok(pushed >= 0, 'elicitation/create arrived');
        assert.equal(results.length, 1, 'one tasks/result');
        assert.ok(pushed < results[0][1], 'the elicitation arrived before any tasks/result');
        assert.ok(terminal >= 0 && terminal < results[0][1], 'tasks/result only after a terminal status');
        assert.deepEqual(mine[pushed].msg.params._meta?.[RELATED_TASK], { taskId: noteTaskId });
        if (kind === 'streamable-http') {
          assert.ok(
            mine.some((w) => statusIn(w, noteTaskId) === 'input_required' && w.msg.result),
            'over HTTP the client polled tasks/get through input_required',
          );
        }
      }));

    test('cancelling a running toolbox_timer task ends it as cancelled', () =>
      withWire(wire, async () => {
        const execution = await session.callTool(
          'toolbox_timer',
          { seconds: 30, label: 'never' },
          { task: { preference: 'require', retentionMs: 30_000 }, requestTimeoutMs: 20_000 },
        );
        assert.equal(execution.kind, 'task');
        timerTaskId = execution.handle.taskId;
        const settled = execution.settle({ close: false });
        await sleep(300);
        const t0 = Date.now();
        await execution.cancel();
        const res = await Promise.race([settled, deadline(5000).then(() => 'not settled')]);
        assert.notEqual(res, 'not settled', 'the execution settles once cancelled');
        assert.equal(res.outcome.status, 'cancelled', JSON.stringify(res.outcome));
        assert.ok(Date.now() - t0 < 3000, `cancelled in ${Date.now() - t0} ms`);
        const view = await session.task(timerTaskId).snapshot();
        assert.equal(view.status, 'cancelled');
        await execution.close();
      }));

    test('listTasks lists both tasks with their final status', () =>
      withWire(wire, async () => {
        const { tasks } = await session.listTasks();
        const byId = new Map(tasks.map((t) => [t.taskId, t.status]));
        assert.equal(byId.get(noteTaskId), 'completed', JSON.stringify(tasks));
        assert.equal(byId.get(timerTaskId), 'cancelled', JSON.stringify(tasks));
      }));

    test('no client or session errors and no server ERROR log lines', () => {
      // A response crossing the client's own cancellation of that request is no error.
      assert.deepEqual(unexplainedClientErrors(clientErrors, wire), [], wire.dump(0, 400));
      assert.deepEqual(sessionErrors.map(String), []);
      assert.deepEqual(errorLines(conn.log()), [], conn.log());
    });
  });
}
