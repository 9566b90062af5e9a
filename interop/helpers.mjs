// Shared setup of the interop tests: builds the mcp-wasmhost binary into a temporary
// folder, writes a config there (absolute plugin paths, the sha256 pins read from
// ../config.toml, a temporary /notes grant and compilation cache), starts servers over
// stdio or Streamable HTTP, and makes sure that no process a test started outlives it.
//
// Not a test file itself (node --test only picks up *.test.mjs here).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, '..');

// Every process the tests start, so that none outlives them whatever happens.
export const children = new Set();
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** Adds a child process to the set killed at the end (and drops it when it exits). */
export function track(child) {
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

export function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs cmd to its end and resolves with { code, signal, stdout, stderr }. It never
 * rejects for a non-zero exit (the caller asserts); after timeoutMs the process is
 * killed and the result says timedOut.
 */
export function runProcess(cmd, args, { timeoutMs = 30_000, ...opts } = {}) {
  return new Promise((resolvePromise, reject) => {
    const child = track(spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] }));
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const started = Date.now();
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr, timedOut, ms: Date.now() - started });
    });
  });
}

/** Runs cmd and resolves with its combined output, rejecting on a non-zero exit. */
export async function run(cmd, args, opts) {
  const r = await runProcess(cmd, args, { timeoutMs: 120_000, ...opts });
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.code ?? r.signal}:\n${r.stdout}${r.stderr}`);
  return r.stdout + r.stderr;
}

/** Reads name -> sha256 of every [[plugins]] table of a config.toml. */
export function readPins(toml) {
  const pins = {};
  for (const block of toml.split(/^\[\[plugins\]\]\s*$/m).slice(1)) {
    const name = block.match(/^name\s*=\s*"([^"]+)"/m)?.[1];
    const sha = block.match(/^sha256\s*=\s*"([0-9a-f]{64})"/m)?.[1];
    if (name && sha) pins[name] = sha;
  }
  return pins;
}

// TOML basic strings accept JSON's escapes for the characters a path can hold.
export const q = (s) => JSON.stringify(s);

/**
 * Copies config.toml with every relative path and host made absolute (against the repo
 * root, as the server resolves them against the config's folder), the writable /notes
 * grant moved to notes, cache_dir set to cache, and tasks kept in memory. Everything
 * else is kept as it is.
 */
export function rewriteConfig(toml, { notes, cache }) {
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
      // Tasks in memory: each test file starts several servers from this config, and
      // a task store file admits one server at a time.
      table = table.replace(/^store\s*=\s*"[^"]*"/m, 'store = "memory"');
      return table.replace(/^cache_dir\s*=\s*"[^"]*"/m, `cache_dir = ${q(cache)}`);
    })
    .join('');
}

/**
 * Builds the server and writes its config into a fresh temporary folder. Resolves with
 * { tmp, binary, configPath, notesDir }. Call it from a before() hook, and cleanup()
 * from after().
 */
export async function prepare(prefix = 'mcp-wasmhost-interop-') {
  const tmp = await mkdtemp(join(tmpdir(), prefix));
  const env = { tmp, binary: join(tmp, 'mcp-wasmhost'), notesDir: join(tmp, 'notes'), configPath: join(tmp, 'config.toml') };
  await mkdir(env.notesDir);
  const build = run('go', ['build', '-o', env.binary, './cmd/mcp-wasmhost'], { cwd: repo });
  build.catch(() => {}); // awaited below, after the config checks

  const original = await readFile(join(repo, 'config.toml'), 'utf8');
  const pins = readPins(original);
  for (const [name, file] of [['toolbox', 'plugins/toolbox/toolbox.wasm'], ['textkit', 'plugins/textkit/textkit.wasm']]) {
    assert.match(pins[name] ?? '', /^[0-9a-f]{64}$/, `the ${name} pin in config.toml`);
    const actual = createHash('sha256').update(await readFile(join(repo, file))).digest('hex');
    assert.equal(actual, pins[name], `${file} matches its pin in config.toml (rebuilt without \`make pins\`?)`);
  }
  const config = rewriteConfig(original, { notes: env.notesDir, cache: join(tmp, 'cache') });
  assert.deepEqual(readPins(config), pins, 'the copy keeps the pins');
  assert.ok(config.includes(`host = ${q(env.notesDir)}`), 'the /notes grant points into the temp dir');
  // An empty path ([server.audit] path = "": no audit trail) names no file.
  assert.ok(!/^(path|host)\s*=\s*"(?!\/|")/m.test(config), `every path is absolute:\n${config}`);
  await writeFile(env.configPath, `# Written by the interop tests (interop/helpers.mjs) from ../config.toml.\n${config}`);
  await build;
  return env;
}

/** Kills every process still running and removes the temporary folder. */
export async function cleanup(env) {
  const left = [...children];
  for (const c of left) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(left.map((c) => waitExit(c, 2000)));
  if (env?.tmp) await rm(env.tmp, { recursive: true, force: true });
}

/**
 * Starts `mcp-wasmhost --http 127.0.0.1:0` and resolves with the process, its /mcp URL,
 * its log so far, and stop() (SIGTERM, then SIGKILL after 6 s, which fails).
 */
export function startHTTPServer(env) {
  return new Promise((resolvePromise, reject) => {
    const child = track(
      spawn(env.binary, ['--config', env.configPath, '--http', '127.0.0.1:0'], { stdio: ['ignore', 'ignore', 'pipe'] }),
    );
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
        resolvePromise({
          child,
          url: new URL(m[1]),
          log: () => log,
          stop: async () => {
            child.kill('SIGTERM');
            if (!(await waitExit(child, 6000))) {
              child.kill('SIGKILL');
              await waitExit(child, 2000);
              assert.fail('the HTTP server did not exit within 6 s of SIGTERM');
            }
          },
        });
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

export function waitExit(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolvePromise) => {
    const timer = setTimeout(() => resolvePromise(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolvePromise(true);
    });
  });
}

export const TRANSPORTS = ['stdio', 'streamable-http'];

/**
 * Opens a client transport to a fresh server: over stdio the transport spawns the
 * binary; over Streamable HTTP a server is started first. classes are the SDK's
 * transport classes ({ Stdio, HTTP }), so that either SDK generation can use it.
 * Resolves with { transport, log(), pid(), url, stop() }.
 */
export async function openTransport(kind, env, { Stdio, HTTP }) {
  if (kind === 'stdio') {
    const transport = new Stdio({ command: env.binary, args: ['--config', env.configPath], stderr: 'pipe' });
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
  }
  assert.equal(kind, 'streamable-http');
  const server = await startHTTPServer(env);
  return {
    transport: new HTTP(server.url),
    url: server.url,
    log: server.log,
    pid: () => server.child.pid,
    stop: server.stop,
  };
}

/** Waits until cond() is true, polling every 20 ms; false after ms. */
/**
 * Closes a client and its server after a suite: `first` (if any) runs before the
 * client closes; on Streamable HTTP the session is ended with DELETE /mcp (the server
 * answers 204); the server process must be gone afterwards, or it is killed and the
 * suite fails.
 */
export async function shutDown({ kind, conn, client, pid, first }) {
  try {
    await first?.();
    if (kind === 'streamable-http' && conn) await conn.transport.terminateSession();
    await client?.close();
    await conn?.stop();
  } finally {
    if (pid && alive(pid)) {
      process.kill(pid, 'SIGKILL');
      assert.fail(`server process ${pid} still ran after close`);
    }
  }
}

export async function waitFor(cond, ms) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Resolves after ms without keeping the process alive: the losing side of a
 * Promise.race must not hold the test file open after its last test.
 */
export const deadline = (ms) => new Promise((r) => setTimeout(r, ms).unref());

/** The concatenated text content of a tool result. */
export const text = (res) => res.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

/** The ERROR lines of a server log. */
export const errorLines = (log) => log.split('\n').filter((l) => /\blevel=ERROR\b/.test(l));

/**
 * Records every JSON-RPC message a client transport sends and receives, with the time
 * since the tap, into wire (an array of { t, dir: '->' | '<-', msg }). It works with any
 * transport that has send() and an onmessage property, so with both SDK generations.
 * Install it before connecting. wire.dump(from) renders the exchange from index from on,
 * one message a line.
 */
export function tapTransport(transport, wire = []) {
  const t0 = Date.now();
  const send = transport.send.bind(transport);
  transport.send = (msg, opts) => {
    wire.push({ t: Date.now() - t0, dir: '->', msg: structuredClone(msg) });
    return send(msg, opts);
  };
  let handler;
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => (handler ? deliver : undefined),
    set: (h) => (handler = h),
  });
  function deliver(msg, extra) {
    wire.push({ t: Date.now() - t0, dir: '<-', msg: structuredClone(msg) });
    return handler?.(msg, extra);
  }
  wire.dump = (from = 0, max = 800) =>
    wire
      .slice(from)
      .map((w) => {
        const line = `${String(w.t).padStart(6)}ms ${w.dir} ${JSON.stringify(w.msg)}`;
        return line.length > max ? `${line.slice(0, max)}…` : line;
      })
      .join('\n');
  return wire;
}

/**
 * The client errors (client.onerror) that are not explained by the client itself: a
 * client that gives up on a request sends notifications/cancelled and forgets the id,
 * and when the server's answer was already on its way the client reports "a response
 * for an unknown message ID". The spec allows that race (the response may cross the
 * cancellation), so such errors are dropped when the recorded wire shows that the client
 * cancelled that very request id. Everything else is returned, as strings.
 */
export function unexplainedClientErrors(errors, wire) {
  const cancelledByClient = new Set(
    wire
      .filter((w) => w.dir === '->' && w.msg.method === 'notifications/cancelled')
      .map((w) => String(w.msg.params?.requestId)),
  );
  return errors.map(String).filter((e) => {
    const m = e.match(/Received a response for an unknown message ID: (\{.*\})$/s);
    if (!m) return true;
    try {
      return !cancelledByClient.has(String(JSON.parse(m[1]).id));
    } catch {
      return true;
    }
  });
}

/**
 * Runs a test body and, when it fails, appends the JSON-RPC exchange recorded so far
 * (from index from on) to the failure message: the evidence a server bug report needs.
 */
export async function withWire(wire, fn) {
  const from = wire.length;
  try {
    return await fn();
  } catch (err) {
    const dump = wire.dump(from);
    if (err && typeof err === 'object') {
      err.message = `${err.message}\n--- JSON-RPC exchange of this test (client's view) ---\n${dump}`;
    }
    throw err;
  }
}
