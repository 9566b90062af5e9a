// The TypeScript SDK peer of the benchmarks: the trivial tool "ping" (answers the text
// "pong", taskSupport optional, like textkit_ping) and "ask" (asks the user to confirm
// through elicitation and returns the action, like the C test guest asker) served natively by
// @modelcontextprotocol/sdk's task machinery (a TaskStore on the low-level Server, which
// then answers tasks/get, tasks/result, tasks/list and tasks/cancel itself), over stdio
// or Streamable HTTP at /mcp (one Server per session, one task store for all).
//
//   node server.mjs [--http 127.0.0.1:PORT]
//
// The low-level Server is used rather than McpServer because McpServer runs a plain call
// of a task-optional tool as a task and polls it in pollInterval steps; a plain call here
// answers directly, as mcp-wasmhost and mcp-go do.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import { CallToolRequestSchema, ElicitResultSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const taskStore = new InMemoryTaskStore();
const pong = () => ({ content: [{ type: 'text', text: 'pong' }] });
const text = (t) => ({ content: [{ type: 'text', text: t }] });
const confirm = {
  method: 'elicitation/create',
  params: { message: 'Proceed?', requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } } } },
};

function newServer() {
  const server = new Server({ name: 'ts-peer', version: '1' }, {
    capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
    taskStore,
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [{
      name: 'ping', description: 'Answers with the text pong.',
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      execution: { taskSupport: 'optional' },
    }, {
      name: 'ask', description: 'Asks the user to confirm and returns the action.',
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      execution: { taskSupport: 'optional' },
    }],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const name = request.params.name;
    if (name !== 'ping' && name !== 'ask') throw new Error(`unknown tool ${name}`);
    const taskParams = request.params.task;
    if (!taskParams) {
      if (name === 'ping') return pong();
      const answer = await extra.sendRequest(confirm, ElicitResultSchema, { timeout: 3600000 });
      return text(answer.action);
    }
    const task = await extra.taskStore.createTask({ ttl: taskParams.ttl, pollInterval: 1000 });
    setImmediate(async () => {
      try {
        let result = pong();
        if (name === 'ask') {
          // Sent with the task as related task, which moves it to input_required.
          const answer = await extra.sendRequest(confirm, ElicitResultSchema, { relatedTask: { taskId: task.taskId }, timeout: 3600000 });
          result = text(answer.action);
        }
        await extra.taskStore.storeTaskResult(task.taskId, 'completed', result);
      } catch {
        // cancelled, or the session ended
      }
    });
    return { task };
  });
  return server;
}

const at = process.argv.indexOf('--http');
if (at < 0) {
  await newServer().connect(new StdioServerTransport());
} else {
  const [host, port] = process.argv[at + 1].split(':');
  const sessions = new Map();
  http.createServer(async (req, res) => {
    if (!req.url.startsWith('/mcp')) { res.writeHead(404).end(); return; }
    const id = req.headers['mcp-session-id'];
    let transport = id && sessions.get(id);
    if (!transport) {
      if (id) { res.writeHead(404).end(); return; }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, transport),
      });
      transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res);
  }).listen(Number(port), host);
}
