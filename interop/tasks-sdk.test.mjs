// Tasks interop (MCP 2025-11-25): the official TypeScript SDK client
// (@modelcontextprotocol/sdk 1.32.2, client.experimental.tasks) against the mcp-wasmhost
// binary, over stdio and Streamable HTTP.
//
// How this client behaves (see ../../shared/notes/interop-testing.md): it adds params.task
// to tools/call, polls tasks/get every pollInterval, and at input_required calls
// tasks/result once, expecting the elicitation on that call's stream (stdio: the pipe).
// The server also pushes the elicitation at once (stdio; HTTP: the standalone GET
// stream), so the handler may see the same question twice on HTTP; the first answer wins.
//
// Every JSON-RPC message is recorded (helpers.tapTransport); a failing test prints the
// exchange it caused.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  ErrorCode,
  McpError,
  TaskStatusNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

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
  waitFor,
  withWire,
} from './helpers.mjs';

const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const classes = { Stdio: StdioClientTransport, HTTP: StreamableHTTPClientTransport };

let env;
before(async () => {
  env = await prepare('mcp-wasmhost-tasks-sdk-');
});
after(async () => {
  await cleanup(env);
});

async function expectCode(promise, code, messageRE) {
  let caught;
  await assert.rejects(promise, (err) => {
    caught = err;
    assert.ok(err instanceof McpError, `want McpError, got ${err?.stack ?? err}`);
    assert.equal(err.code, code, `error code of: ${err.message}`);
    if (messageRE) assert.match(err.message, messageRE);
    return true;
  });
  return caught;
}

function assertWireTask(task, what) {
  assert.equal(typeof task.taskId, 'string', `${what}: taskId`);
  assert.ok(task.taskId.length >= 16, `${what}: an unguessable taskId, got ${task.taskId}`);
  assert.ok(['working', 'input_required', 'completed', 'failed', 'cancelled'].includes(task.status), `${what}: status ${task.status}`);
  for (const k of ['createdAt', 'lastUpdatedAt']) {
    assert.equal(typeof task[k], 'string', `${what}: ${k}`);
    assert.ok(!Number.isNaN(Date.parse(task[k])), `${what}: ${k} is a date: ${task[k]}`);
  }
  assert.ok(task.ttl === null || Number.isInteger(task.ttl), `${what}: ttl ${task.ttl}`);
  if (task.pollInterval !== undefined) assert.ok(task.pollInterval > 0, `${what}: pollInterval`);
}

for (const kind of TRANSPORTS) {
  describe(`TypeScript SDK 1.32.2 Tasks over ${kind}`, () => {
    let client;
    let conn;
    let pid;
    let wire;
    // The elicitation handler delegates to onElicit, set per test; every request it saw.
    let onElicit = async () => ({ action: 'decline' });
    const elicitations = [];
    const statusNotes = []; // notifications/tasks/status params, in order
    const clientErrors = [];
    let noteTaskId; // the write_note task of the first test

    before(async () => {
      conn = await openTransport(kind, env, classes);
      wire = tapTransport(conn.transport);
      client = new Client(
        { name: 'mcp-wasmhost-interop-tasks', version: '0.0.0' },
        { capabilities: { elicitation: { form: {} } } },
      );
      client.onerror = (err) => clientErrors.push(err);
      client.setRequestHandler(ElicitRequestSchema, async (req, extra) => {
        const seen = { params: req.params, requestId: extra.requestId, at: Date.now() };
        elicitations.push(seen);
        return onElicit(seen, extra);
      });
      client.setNotificationHandler(TaskStatusNotificationSchema, (n) => statusNotes.push(n.params));
      await client.connect(conn.transport);
      pid = conn.pid();
      assert.ok(pid > 0 && alive(pid), 'the server process runs');
    });

    after(() => shutDown({ kind, conn, client, pid }));

    test('initialize advertises capabilities.tasks; tools/list carries execution.taskSupport', () =>
      withWire(wire, async () => {
        assert.deepEqual(client.getServerCapabilities()?.tasks, {
          list: {},
          cancel: {},
          requests: { tools: { call: {} } },
        });
        const { tools } = await client.listTools(); // also fills the client's taskSupport cache
        const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]));
        assert.equal(support.toolbox_write_note, 'optional');
        assert.equal(support.toolbox_slow_count, 'optional');
        assert.equal(support.toolbox_timer, 'required');
        assert.equal(support.textkit_sha256, 'forbidden');
        for (const t of tools) assert.ok(['forbidden', 'optional', 'required'].includes(t.execution?.taskSupport), t.name);
      }));

    test('callToolStream: toolbox_write_note goes working -> input_required -> completed, the elicitation is answered, the note is written', () =>
      withWire(wire, async () => {
        const name = `task-note-${kind}.txt`;
        const body = `written by a task over ${kind} ✓\n`;
        elicitations.length = 0;
        // Answer only once the client's own polling has seen input_required (or after 5 s,
        // and the assertions below fail), so that the stream must show that state.
        let sawInputRequired;
        const inputRequired = new Promise((r) => (sawInputRequired = r));
        onElicit = async () => {
          await Promise.race([inputRequired, deadline(5000)]);
          return { action: 'accept', content: { confirm: true } };
        };
        const messages = [];
        const started = Date.now();
        const from = wire.length;
        for await (const m of client.experimental.tasks.callToolStream(
          { name: 'toolbox_write_note', arguments: { name, text: body } },
          CallToolResultSchema,
          { task: { ttl: 30_000 }, timeout: 20_000 },
        )) {
          messages.push(m);
          if (m.type === 'taskStatus' && m.task.status === 'input_required') sawInputRequired();
        }
        const types = messages.map((m) => (m.type === 'taskStatus' ? `taskStatus:${m.task.status}` : m.type));
        assert.equal(messages[0].type, 'taskCreated', types.join(', '));
        const created = messages[0].task;
        assertWireTask(created, 'CreateTaskResult.task');
        assert.equal(created.status, 'working');
        assert.equal(created.ttl, 30_000, 'the requested ttl is granted');
        noteTaskId = created.taskId;
        assert.ok(types.includes('taskStatus:input_required'), `the stream shows input_required: ${types.join(', ')}`);
        assert.equal(messages.at(-1).type, 'result', `ends with the result: ${types.join(', ')}; ${messages.at(-1).error ?? ''}`);
        assert.ok(!types.includes('error'), types.join(', '));
        for (const m of messages.slice(1, -1)) {
          assertWireTask(m.task, 'tasks/get');
          assert.equal(m.task.taskId, created.taskId);
        }
        const res = messages.at(-1).result;
        assert.ok(!res.isError, text(res));
        assert.equal(text(res), `Created note ${name} (${Buffer.byteLength(body)} bytes).`);
        assert.deepEqual(res._meta?.[RELATED_TASK], { taskId: created.taskId }, 'tasks/result carries related-task _meta');
        assert.equal(await readFile(join(env.notesDir, name), 'utf8'), body);
        assert.ok(Date.now() - started < 10_000);

        // The question reached the client, tied to its task.
        assert.ok(elicitations.length >= 1, 'an elicitation/create reached the client');
        for (const e of elicitations) {
          assert.deepEqual(e.params._meta?.[RELATED_TASK], { taskId: created.taskId });
          assert.match(e.params.message, new RegExp(name.replace(/\./g, '\\.')));
          assert.equal(e.params.requestedSchema?.properties?.confirm?.type, 'boolean');
        }
        // Each delivery is its own JSON-RPC request (HTTP: the standalone stream, then the
        // waiting tasks/result stream).
        const ids = elicitations.map((e) => e.requestId);
        assert.equal(new Set(ids).size, ids.length, `distinct request ids: ${ids}`);
        if (kind === 'stdio') {
          assert.equal(elicitations.length, 1, 'over stdio the question is asked once, on the pipe');
        }
        // The client called tasks/result once, when its polling saw input_required.
        const sent = wire.slice(from).filter((w) => w.dir === '->' && w.msg.method === 'tasks/result');
        assert.equal(sent.length, 1, 'one tasks/result');
      }));

    test('notifications/tasks/status: sent over stdio for every status change (none over HTTP, by design)', () =>
      withWire(wire, async () => {
        assert.ok(noteTaskId, 'the write_note task ran');
        const mine = statusNotes.filter((n) => n.taskId === noteTaskId);
        if (kind === 'stdio') {
          // The completed notification may still be on its way when tasks/result returns.
          await waitFor(() => statusNotes.some((n) => n.taskId === noteTaskId && n.status === 'completed'), 2000);
          const statuses = statusNotes.filter((n) => n.taskId === noteTaskId).map((n) => n.status);
          assert.deepEqual(statuses, ['input_required', 'working', 'completed'], 'status notifications of the write_note task');
          for (const n of statusNotes) assertWireTask(n, 'notifications/tasks/status');
        } else {
          assert.deepEqual(mine, [], 'the server sends no task status notifications over Streamable HTTP');
        }
      }));

    test('getTask and listTasks see the finished task', () =>
      withWire(wire, async () => {
        assert.ok(noteTaskId, 'the write_note task ran');
        const t = await client.experimental.tasks.getTask(noteTaskId);
        assertWireTask(t, 'tasks/get');
        assert.equal(t.taskId, noteTaskId);
        assert.equal(t.status, 'completed');
        assert.equal(t.ttl, 30_000);
        assert.equal(t._meta?.[RELATED_TASK], undefined, 'tasks/get carries no related-task _meta');
        const { tasks } = await client.experimental.tasks.listTasks();
        const listed = tasks.find((x) => x.taskId === noteTaskId);
        assert.ok(listed, `tasks/list lists ${noteTaskId}: ${JSON.stringify(tasks)}`);
        assert.equal(listed.status, 'completed');
        for (const x of tasks) assertWireTask(x, 'tasks/list');
        // The same result again, as often as asked while the task is kept.
        const again = await client.experimental.tasks.getTaskResult(noteTaskId, CallToolResultSchema);
        assert.match(text(again), /^Created note /);
      }));

    test('a task-augmented toolbox_slow_count reports progress while it runs', () =>
      withWire(wire, async () => {
        const seen = [];
        const messages = [];
        for await (const m of client.experimental.tasks.callToolStream(
          { name: 'toolbox_slow_count', arguments: { to: 3, delay_ms: 150 } },
          CallToolResultSchema,
          { task: { ttl: 30_000 }, timeout: 20_000, onprogress: (p) => seen.push(p) },
        )) {
          messages.push(m);
        }
        assert.equal(messages[0].type, 'taskCreated');
        assert.equal(messages.at(-1).type, 'result', JSON.stringify(messages.at(-1)));
        assert.equal(messages.at(-1).result.structuredContent?.counted, 3);
        assert.deepEqual(seen.map((p) => p.progress), [1, 2, 3], 'progress notifications with the tools/call token');
      }));

    test('cancelTask stops a running toolbox_timer task at once; a waiting tasks/result ends; a second cancel is -32602', () =>
      withWire(wire, async () => {
        const messages = [];
        const stream = (async () => {
          for await (const m of client.experimental.tasks.callToolStream(
            { name: 'toolbox_timer', arguments: { seconds: 30, label: 'never' } },
            CallToolResultSchema,
            { task: { ttl: 30_000 }, timeout: 20_000 },
          )) {
            messages.push(m);
          }
        })();
        assert.ok(await waitFor(() => messages.length > 0, 5000), 'the task is created');
        assert.equal(messages[0].type, 'taskCreated', JSON.stringify(messages[0]));
        const id = messages[0].task.taskId;
        // A tasks/result that waits for the task: it must end when the task is cancelled.
        const waiting = client.experimental.tasks
          .getTaskResult(id, CallToolResultSchema, { timeout: 20_000 })
          .then((r) => ({ result: r }), (err) => ({ err }));
        await sleep(200);

        const t0 = Date.now();
        const cancelled = await client.experimental.tasks.cancelTask(id);
        assert.ok(Date.now() - t0 < 2000, `tasks/cancel answered in ${Date.now() - t0} ms`);
        assertWireTask(cancelled, 'tasks/cancel');
        assert.equal(cancelled.taskId, id);
        assert.equal(cancelled.status, 'cancelled');
        assert.equal((await client.experimental.tasks.getTask(id)).status, 'cancelled');

        const w = await Promise.race([waiting, deadline(3000).then(() => 'still waiting')]);
        assert.notEqual(w, 'still waiting', 'a waiting tasks/result ends when its task is cancelled');
        assert.ok(w.err instanceof McpError, `tasks/result of a cancelled task is an error, got ${JSON.stringify(w)}`);

        await Promise.race([stream, deadline(3000)]);
        assert.equal(messages.at(-1)?.type, 'error', `the stream ends in an error: ${JSON.stringify(messages.at(-1))}`);
        assert.match(messages.at(-1).error.message, /cancelled/);
        assert.ok(!messages.some((m) => m.type === 'result'));

        await expectCode(client.experimental.tasks.cancelTask(id), ErrorCode.InvalidParams, /terminal|cancel/);
        if (kind === 'stdio') {
          assert.ok(
            await waitFor(() => statusNotes.some((n) => n.taskId === id && n.status === 'cancelled'), 2000),
            'a cancelled status notification',
          );
        }
      }));

    test('cancelTask at input_required: cancelled, the waiting tasks/result ends, the pushed question is withdrawn, a late accept writes nothing', () =>
      withWire(wire, async () => {
        const name = `cancelled-at-input-${kind}.txt`;
        elicitations.length = 0;
        let release;
        const held = new Promise((r) => (release = r));
        const aborted = [];
        onElicit = async (seen, extra) => {
          extra.signal.addEventListener('abort', () => aborted.push(seen.requestId));
          await Promise.race([held, deadline(5000)]);
          return { action: 'accept', content: { confirm: true } };
        };
        const from = wire.length;
        const created = await client.request(
          { method: 'tools/call', params: { name: 'toolbox_write_note', arguments: { name, text: 'x' }, task: { ttl: 30_000 } } },
          CreateTaskResultSchema,
        );
        const id = created.task.taskId;
        assert.ok(await waitFor(() => elicitations.length > 0, 5000), 'the question is pushed');
        assert.equal((await client.experimental.tasks.getTask(id)).status, 'input_required');
        const waiting = client.experimental.tasks
          .getTaskResult(id, CallToolResultSchema, { timeout: 20_000 })
          .then((r) => ({ result: r }), (err) => ({ err }));
        await sleep(200);
        assert.equal((await client.experimental.tasks.cancelTask(id)).status, 'cancelled');
        const w = await Promise.race([waiting, deadline(3000).then(() => 'still waiting')]);
        assert.notEqual(w, 'still waiting', 'a waiting tasks/result ends when its task is cancelled');
        assert.ok(w.err instanceof McpError, JSON.stringify(w));
        // The first (pushed) request is withdrawn with notifications/cancelled.
        const first = elicitations[0].requestId;
        assert.ok(
          await waitFor(
            () => wire.slice(from).some((x) => x.dir === '<-' && x.msg.method === 'notifications/cancelled' && x.msg.params?.requestId === first),
            2000,
          ),
          `notifications/cancelled for elicitation request ${first}`,
        );
        assert.ok(aborted.includes(first), 'the client aborted its handler');
        release();
        await sleep(300);
        assert.equal(existsSync(join(env.notesDir, name)), false, 'nothing written after the cancel');
        const t = await client.experimental.tasks.getTask(id);
        assert.equal(t.status, 'cancelled', 'a late answer does not revive the task');
      }));

    test('a tool error makes the task failed; tasks/result returns the isError result', () =>
      withWire(wire, async () => {
        const created = await client.request(
          { method: 'tools/call', params: { name: 'toolbox_timer', arguments: { seconds: 99_999 }, task: {} } },
          CreateTaskResultSchema,
        );
        assertWireTask(created.task, 'CreateTaskResult.task');
        assert.ok(created.task.ttl > 0, 'a default ttl when none is asked for');
        const id = created.task.taskId;
        let t = created.task;
        for (const end = Date.now() + 5000; t.status === 'working' && Date.now() < end; ) {
          await sleep(50);
          t = await client.experimental.tasks.getTask(id);
        }
        assert.equal(t.status, 'failed');
        assert.match(t.statusMessage ?? '', /seconds must be between 0 and 3600/);
        const res = await client.experimental.tasks.getTaskResult(id, CallToolResultSchema);
        assert.equal(res.isError, true);
        assert.match(text(res), /seconds must be between 0 and 3600, got 99999/);
        assert.deepEqual(res._meta?.[RELATED_TASK], { taskId: id });
      }));

    test('an unknown task id is -32602 for tasks/get, tasks/result and tasks/cancel', () =>
      withWire(wire, async () => {
        const id = 'no-such-task-0123456789abcdef';
        await expectCode(client.experimental.tasks.getTask(id), -32602, /not found/);
        await expectCode(client.experimental.tasks.getTaskResult(id, CallToolResultSchema), -32602, /not found/);
        await expectCode(client.experimental.tasks.cancelTask(id), -32602, /not found/);
      }));

    test('a taskSupport-required tool: plain callTool is refused by the client (-32600), a raw call without params.task by the server (-32601)', () =>
      withWire(wire, async () => {
        await expectCode(client.callTool({ name: 'toolbox_timer', arguments: { seconds: 0 } }), ErrorCode.InvalidRequest, /task/);
        await expectCode(
          client.request({ method: 'tools/call', params: { name: 'toolbox_timer', arguments: { seconds: 0 } } }, CallToolResultSchema),
          ErrorCode.MethodNotFound,
          /toolbox_timer.*must be called as a task/,
        );
      }));

    test('a task on a forbidden tool is -32601 with a helpful message', () =>
      withWire(wire, async () => {
        // The client would not add params.task for a forbidden tool: send it raw.
        await expectCode(
          client.request(
            { method: 'tools/call', params: { name: 'textkit_sha256', arguments: { text: 'x' }, task: {} } },
            CreateTaskResultSchema,
          ),
          ErrorCode.MethodNotFound,
          /textkit_sha256.*does not support task execution/,
        );
        // And the same tool called plainly still works.
        const res = await client.callTool({ name: 'textkit_sha256', arguments: { text: 'x' } });
        assert.ok(!res.isError, text(res));
      }));

    if (kind === 'streamable-http') {
      test('HTTP: a tasks/result waiting at input_required carries the question again; the first answer wins', () =>
        withWire(wire, async () => {
          const name = 'redelivered.txt';
          elicitations.length = 0;
          // Hold the first delivery (the standalone GET stream) until the second one (the
          // tasks/result stream) has been answered, then decline it: too late to count.
          let releaseFirst;
          const firstHeld = new Promise((r) => (releaseFirst = r));
          onElicit = async (seen) => {
            if (elicitations.indexOf(seen) === 0) {
              await Promise.race([firstHeld, deadline(5000)]);
              return { action: 'decline' };
            }
            setTimeout(releaseFirst, 100);
            return { action: 'accept', content: { confirm: true } };
          };
          const messages = [];
          for await (const m of client.experimental.tasks.callToolStream(
            { name: 'toolbox_write_note', arguments: { name, text: 'again' } },
            CallToolResultSchema,
            { task: { ttl: 30_000 }, timeout: 20_000 },
          )) {
            messages.push(m);
          }
          assert.equal(messages.at(-1).type, 'result', JSON.stringify(messages.at(-1)));
          assert.equal(elicitations.length, 2, 'asked twice: the standalone stream, then the tasks/result stream');
          const taskId = messages[0].task.taskId;
          for (const e of elicitations) assert.deepEqual(e.params._meta?.[RELATED_TASK], { taskId });
          assert.equal(text(messages.at(-1).result), 'Created note redelivered.txt (5 bytes).', 'the accept (first answer) won');
          assert.equal(await readFile(join(env.notesDir, name), 'utf8'), 'again');
        }));

      test('HTTP: another session sees none of these tasks', () =>
        withWire(wire, async () => {
          assert.ok(noteTaskId);
          const other = new Client({ name: 'other-session', version: '0.0.0' });
          const transport = new StreamableHTTPClientTransport(conn.url);
          await other.connect(transport);
          try {
            const { tasks } = await other.experimental.tasks.listTasks();
            assert.deepEqual(tasks, [], 'a new session lists no tasks');
            await expectCode(other.experimental.tasks.getTask(noteTaskId), -32602, /not found/);
            await expectCode(other.experimental.tasks.getTaskResult(noteTaskId, CallToolResultSchema), -32602, /not found/);
            await expectCode(other.experimental.tasks.cancelTask(noteTaskId), -32602, /not found/);
          } finally {
            await transport.terminateSession();
            await other.close();
          }
          // Still there for its owner.
          assert.equal((await client.experimental.tasks.getTask(noteTaskId)).status, 'completed');
        }));
    }

    test('no client errors and no server ERROR log lines', () => {
      // A response crossing the client's own cancellation of that request is no error.
      assert.deepEqual(unexplainedClientErrors(clientErrors, wire), [], wire.dump(0, 400));
      assert.deepEqual(errorLines(conn.log()), [], conn.log());
    });
  });
}
