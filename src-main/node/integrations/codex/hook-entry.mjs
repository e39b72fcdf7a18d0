// The processes Codex starts, per turn: `notify` (`node hook-entry.mjs codex-notify '<json>'`; Codex appends the
// JSON as the last argv, with stdio nulled, fire-and-forget: openai/codex docs/config.md "notify") and the
// hooks.json command hooks (`node hook-entry.mjs codex-hook`, JSON on stdin; codex-rs/hooks). Codex waits for the
// hooks, and a notify runs on every turn, so this file is plain JavaScript that imports only cheap Node builtins:
// no TypeScript type stripping and no fetch, whose start-up made the old entry cost ~500 ms a turn (bench/hooks.ts).
// Not even node:http: importing it alone took 50-250 ms on Node 24.21 here (node:net: 15-30 ms), so the one
// loopback POST is written as HTTP/1.1 over node:net (RFC 9112: request line, headers, Content-Length body;
// the answer is read to the end of a `Connection: close` stream, chunked or not).
// `rein hook …` (src-main/cli/commands/hook.ts) runs the same code.
// - notify: the user's previous notify (saved by the installer) is started first with the same argument, then the
//   payload is posted to the capture server with a short timeout; when Rein is down it goes to a small spool file,
//   delivered once by the next notify that gets through (the server dedupes on source + event id).
// - hooks: the server's answer is printed when it is a block decision (`/rl`); with Rein down an `/rl` is still
//   blocked (it must not reach the model as a prompt) and a Stop is spooled.
//
// The builtins come from process.getBuiltinModule, not `import`: an ESM import of a builtin builds its module
// namespace from every export, and node:fs's `promises` getter then loads fs/promises, readline and the stream
// stack (about 45 more internal modules on Node 24.21, most of the entry's cost over a bare `node -e 0`).
const { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } = process.getBuiltinModule('node:fs');
const net = process.getBuiltinModule('node:net');
const { homedir } = process.getBuiltinModule('node:os');
const path = process.getBuiltinModule('node:path');

export const SPOOL_MAX_BYTES = 2 * 1024 * 1024;
export const POST_TIMEOUT_MS = 800;
const HOOK_TIMEOUT_MS = 5_000;
const STDIN_MAX = 8 * 1024 * 1024;
// The same test as common/rl-command.ts parseRl: a prompt that starts with `/rl` and a space or the end.
const RL = /^\s*\/rl(?=\s|$)/;

/** The Rein home directory: $REIN_HOME, else ~/.rein (as node/home.ts resolveHome). */
export function homeDir(env = process.env) {
  return path.resolve(env.REIN_HOME && env.REIN_HOME.length > 0 ? env.REIN_HOME : path.join(homedir(), '.rein'));
}
export function chainPath(dir) {
  return path.join(dir, 'codex-notify-chain.json');
}
export function spoolPath(dir) {
  return path.join(dir, 'spool', 'codex.jsonl');
}

function log(dir, message) {
  try {
    mkdirSync(path.join(dir, 'logs'), { recursive: true, mode: 0o700 });
    appendFileSync(path.join(dir, 'logs', 'hooks.log'), `${new Date().toISOString()} ${message}\n`, { mode: 0o600 });
  } catch {
    // logging must never fail a hook
  }
}

/** The user's notify command from before Rein, or null. */
export function readChain(dir) {
  try {
    const v = JSON.parse(readFileSync(chainPath(dir), 'utf8'));
    if (v && Array.isArray(v.previous) && v.previous.length > 0 && v.previous.every((x) => typeof x === 'string')) return v.previous;
  } catch {
    // none saved
  }
  return null;
}

/** Start the previous notify with the same argument, detached; we do not wait for it. */
export function chainPrevious(previous, arg) {
  if (previous === null) return false;
  const [cmd, ...args] = previous;
  // Loaded only when there is a previous notify to start (most turns have none): its import is start-up cost.
  const { spawn } = process.getBuiltinModule('node:child_process');
  const child = spawn(cmd, [...args, arg], { detached: true, stdio: 'ignore' });
  child.on('error', () => {});
  child.unref();
  return true;
}

/** The running core's address (server.json) and the token, or null when Rein is not running. */
export function readTarget(dir) {
  try {
    const info = JSON.parse(readFileSync(path.join(dir, 'server.json'), 'utf8'));
    const token = readFileSync(path.join(dir, 'token'), 'utf8').trim();
    const port = typeof info?.port === 'number' ? info.port : Number(/:(\d+)/.exec(String(info?.url ?? ''))?.[1]);
    if (!Number.isInteger(port) || port <= 0 || token === '') return null;
    return { port, token };
  } catch {
    return null;
  }
}

/** Parse a whole HTTP/1.1 response (RFC 9112 §4, §6, §7.1 chunked). */
export function parseResponse(raw) {
  const head = raw.indexOf('\r\n\r\n');
  if (head < 0) throw new Error('the capture server closed the connection before answering');
  const lines = raw.subarray(0, head).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1]);
  if (!Number.isInteger(status)) throw new Error(`not an HTTP answer: ${JSON.stringify((lines[0] ?? '').slice(0, 80))}`);
  const headers = new Map(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).trim().toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  let body = raw.subarray(head + 4);
  if (/\bchunked\b/i.test(headers.get('transfer-encoding') ?? '')) {
    const parts = [];
    let at = 0;
    for (;;) {
      const eol = body.indexOf('\r\n', at);
      if (eol < 0) throw new Error('truncated chunked answer');
      const size = parseInt(body.subarray(at, eol).toString('latin1'), 16);
      if (!Number.isFinite(size)) throw new Error('bad chunk size in the answer');
      if (size === 0) break;
      parts.push(body.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
    body = Buffer.concat(parts);
  } else if (headers.has('content-length')) {
    body = body.subarray(0, Number(headers.get('content-length')));
  }
  return { status, body: body.toString('utf8') };
}

/** POST a JSON body to the capture server on loopback; resolves with the parsed answer, rejects on non-2xx or timeout. */
export function postHook(target, route, body, timeoutMs = POST_TIMEOUT_MS) {
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(body, 'utf8');
    const chunks = [];
    const socket = net.connect({ host: '127.0.0.1', port: target.port });
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    socket.on('error', reject);
    socket.on('data', (c) => chunks.push(c));
    socket.on('end', () => {
      try {
        const { status, body: text } = parseResponse(Buffer.concat(chunks));
        if (status < 200 || status >= 300) return reject(new Error(`capture server answered ${status}: ${text.slice(0, 200)}`));
        resolve(text === '' ? {} : JSON.parse(text));
      } catch (e) {
        reject(e);
      }
    });
    socket.on('connect', () => {
      const head = [
        `POST ${route} HTTP/1.1`,
        `Host: 127.0.0.1:${target.port}`,
        'Content-Type: application/json',
        `Content-Length: ${payload.length}`,
        `Authorization: Bearer ${target.token}`,
        'Connection: close',
        '',
        '',
      ].join('\r\n');
      socket.end(Buffer.concat([Buffer.from(head, 'latin1'), payload]));
    });
  });
}

/** Append one payload to the spool (0600); refuses to grow past SPOOL_MAX_BYTES. Returns false when full. */
export function spool(dir, body) {
  const file = spoolPath(dir);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  let size = 0;
  try {
    size = statSync(file).size;
  } catch {
    // new spool
  }
  const line = JSON.stringify({ route: '/hooks/codex', body }) + '\n';
  if (size + Buffer.byteLength(line) > SPOOL_MAX_BYTES) return false;
  const fd = openSync(file, 'a', 0o600);
  try {
    writeSync(fd, line);
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * Deliver the spool. It is first renamed, so two notify processes never send the same lines; lines that fail
 * again go back to the spool. The server dedupes on (source, eventId), so a retry after a lost answer is harmless.
 */
export async function drainSpool(dir, target) {
  const file = spoolPath(dir);
  const taken = `${file}.${process.pid}.sending`;
  try {
    renameSync(file, taken);
  } catch {
    return { sent: 0, kept: 0 };
  }
  let sent = 0;
  let kept = 0;
  const lines = readFileSync(taken, 'utf8').split('\n').filter((l) => l !== '');
  for (const l of lines) {
    let entry;
    try {
      entry = JSON.parse(l);
    } catch {
      continue; // a torn line from a crash: drop it rather than loop on it
    }
    try {
      await postHook(target, entry.route, entry.body);
      sent++;
    } catch {
      if (spool(dir, entry.body)) kept++;
    }
  }
  rmSync(taken, { force: true });
  return { sent, kept };
}

export async function codexNotify(argv, dir) {
  const arg = argv.at(-1);
  if (arg === undefined) {
    log(dir, 'codex-notify: no payload argument');
    return 0;
  }
  // The user's own notify runs whatever happens to Rein.
  try {
    chainPrevious(readChain(dir), arg);
  } catch (e) {
    log(dir, `codex-notify: could not start the previous notify: ${e.message}`);
  }
  try {
    JSON.parse(arg);
  } catch {
    log(dir, 'codex-notify: the payload is not JSON; dropped');
    return 0;
  }
  const target = readTarget(dir);
  if (target === null) {
    if (!spool(dir, arg)) log(dir, 'codex-notify: Rein is not running and the spool is full; dropped');
    return 0;
  }
  try {
    await postHook(target, '/hooks/codex', arg);
  } catch (e) {
    log(dir, `codex-notify: ${e.message}; spooled`);
    if (!spool(dir, arg)) log(dir, 'codex-notify: the spool is full; dropped');
    return 0;
  }
  if (existsSync(spoolPath(dir))) await drainSpool(dir, target).catch(() => {});
  return 0;
}

async function readStdin(stdin) {
  const chunks = [];
  let size = 0;
  for await (const c of stdin) {
    const b = typeof c === 'string' ? Buffer.from(c) : c;
    size += b.length;
    if (size > STDIN_MAX) throw new Error(`hook input larger than ${STDIN_MAX} bytes`);
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}

// Codex 0.169's `codex exec` prints a blocked prompt as "hook: UserPromptSubmit Blocked" without the reason
// (verified in e2e/agents, with and without `systemMessage`); the rating is recorded all the same.
function blockDecision(reason) {
  return JSON.stringify({ decision: 'block', reason }) + '\n';
}

/** A hooks.json command hook: prints the server's decision (a block for `/rl`), else nothing; always exits 0. */
export async function codexHook(stdin, out, dir) {
  let text;
  let payload;
  try {
    text = await readStdin(stdin);
    payload = JSON.parse(text);
    if (payload === null || typeof payload !== 'object') throw new Error('not a JSON object');
  } catch (e) {
    log(dir, `codex-hook: bad input: ${e.message}`);
    return 0;
  }
  const target = readTarget(dir);
  try {
    if (target === null) throw new Error('Rein is not running');
    const answer = await postHook(target, '/hooks/codex', text, HOOK_TIMEOUT_MS);
    if (answer?.decision === 'block') out(blockDecision(answer.reason));
    return 0;
  } catch (e) {
    log(dir, `codex-hook: ${e.message}`);
    if (payload.hook_event_name === 'UserPromptSubmit' && typeof payload.prompt === 'string' && RL.test(payload.prompt)) {
      out(blockDecision('Rein is not running, so /rl was not recorded. Start Rein and try again.'));
    } else if (payload.hook_event_name === 'Stop') {
      spool(dir, text);
    }
    return 0;
  }
}

export async function runHook(argv, io) {
  const dir = homeDir(io.env);
  const [kind, ...rest] = argv;
  if (kind === 'codex-notify') return codexNotify(rest, dir);
  if (kind === 'codex-hook') return codexHook(io.stdin, io.stdout, dir);
  process.stderr.write(`rein hook: unknown hook "${kind ?? ''}" (codex-notify | codex-hook)\n`);
  return 2;
}

// Run as a program only when started as this file. Not `import.meta.main`: in the app's bundle this code sits in a
// chunk shared by the app (which imports it, where it must not run) and out/main/hook-entry.mjs (which Codex starts).
if (process.argv[1] !== undefined && /[\\/]hook-entry\.mjs$/.test(process.argv[1])) {
  // process.stdin is a getter that builds the stdin stream (tty/net/stream internals); only codex-hook reads it, so
  // a notify run, which Codex starts with stdio nulled on every turn, never pays for it.
  const io = {
    get stdin() {
      return process.stdin;
    },
    stdout: (s) => process.stdout.write(s),
    env: process.env,
  };
  process.exitCode = await runHook(process.argv.slice(2), io);
}
