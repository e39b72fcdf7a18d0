// `rein hook codex-notify '<json>'` and `rein hook codex-hook` (JSON on stdin): the processes Codex starts.
// The installers point Codex straight at this file (`node …/hook.ts codex-notify`), not at the full CLI, so a
// notify costs one small Node start: it imports no zod, no store, no dispatcher.
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { parseRl } from '../../common/rl-command.ts';
import { resolveHome } from '../../node/home.ts';
import type { ReinHome } from '../../node/home.ts';
import { chainPrevious, drainSpool, postHook, readChain, readTarget, spool, spoolPath } from '../../node/integrations/codex/notify.ts';
import { existsSync } from 'node:fs';

const STDIN_MAX = 8 * 1024 * 1024;

function logLine(home: ReinHome, message: string): void {
  try {
    mkdirSync(home.logsDir, { recursive: true, mode: 0o700 });
    appendFileSync(path.join(home.logsDir, 'hooks.log'), `${new Date().toISOString()} ${message}\n`, { mode: 0o600 });
  } catch {
    // logging must never fail a hook
  }
}

export async function codexNotify(argv: string[], home: ReinHome): Promise<number> {
  const arg = argv.at(-1);
  if (arg === undefined) {
    logLine(home, 'codex-notify: no payload argument');
    return 0;
  }
  // The user's own notify runs whatever happens to Rein.
  try {
    chainPrevious(readChain(home), arg);
  } catch (e) {
    logLine(home, `codex-notify: could not start the previous notify: ${(e as Error).message}`);
  }
  try {
    JSON.parse(arg);
  } catch {
    logLine(home, 'codex-notify: the payload is not JSON; dropped');
    return 0;
  }
  const target = readTarget(home);
  if (target === null) {
    if (!spool(home, arg)) logLine(home, 'codex-notify: Rein is not running and the spool is full; dropped');
    return 0;
  }
  try {
    await postHook(target, '/hooks/codex', arg);
  } catch (e) {
    logLine(home, `codex-notify: ${(e as Error).message}; spooled`);
    if (!spool(home, arg)) logLine(home, 'codex-notify: the spool is full; dropped');
    return 0;
  }
  if (existsSync(spoolPath(home))) await drainSpool(home, target).catch(() => {});
  return 0;
}

async function readStdin(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of stdin) {
    const b = typeof c === 'string' ? Buffer.from(c) : (c as Buffer);
    size += b.length;
    if (size > STDIN_MAX) throw new Error(`hook input larger than ${STDIN_MAX} bytes`);
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A hooks.json command hook: prints the server's decision (a block for `/rl`), else nothing; always exits 0. */
export async function codexHook(stdin: NodeJS.ReadableStream, out: (s: string) => void, home: ReinHome): Promise<number> {
  let text: string;
  let payload: Record<string, unknown>;
  try {
    text = await readStdin(stdin);
    payload = JSON.parse(text) as Record<string, unknown>;
  } catch (e) {
    logLine(home, `codex-hook: bad input: ${(e as Error).message}`);
    return 0;
  }
  const target = readTarget(home);
  try {
    if (target === null) throw new Error('Rein is not running');
    const answer = (await postHook(target, '/hooks/codex', text, 5_000)) as Record<string, unknown>;
    if (answer.decision === 'block') out(JSON.stringify({ decision: 'block', reason: answer.reason }) + '\n');
    return 0;
  } catch (e) {
    logLine(home, `codex-hook: ${(e as Error).message}`);
    if (payload.hook_event_name === 'UserPromptSubmit' && typeof payload.prompt === 'string' && parseRl(payload.prompt) !== null) {
      // An /rl must not go to the model as a prompt, even when it cannot be recorded.
      out(JSON.stringify({ decision: 'block', reason: 'Rein is not running, so /rl was not recorded. Start Rein and try again.' }) + '\n');
    } else if (payload.hook_event_name === 'Stop') {
      spool(home, text);
    }
    return 0;
  }
}

export async function runHook(argv: string[], io: { stdin: NodeJS.ReadableStream; stdout: (s: string) => void; env: NodeJS.ProcessEnv }): Promise<number> {
  const home = resolveHome(io.env);
  const [kind, ...rest] = argv;
  if (kind === 'codex-notify') return codexNotify(rest, home);
  if (kind === 'codex-hook') return codexHook(io.stdin, io.stdout, home);
  process.stderr.write(`rein hook: unknown hook "${kind ?? ''}" (codex-notify | codex-hook)\n`);
  return 2;
}

if (import.meta.main) {
  const code = await runHook(process.argv.slice(2), { stdin: process.stdin, stdout: (s) => process.stdout.write(s), env: process.env });
  process.exit(code);
}
