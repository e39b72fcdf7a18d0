// The agents-on-your-model setup as a user types it, end to end on the real CLI (child processes of bin/rein.mjs) and
// the demo model served by llama.cpp, from a fresh home:
//   rein model use demo
//   rein serve                                   (or the app)
//   rein setup claude --local-model --yes        (and codex)
//   rein serve-model
// The real Claude Code and Codex are not installed here (e2e/agents runs them, after `npm ci --prefix e2e`), so the
// clients' parts are played from the files setup wrote: Claude's hook URL and proxy env from ~/.claude/settings.json,
// Codex's provider from config.toml and its hook command from hooks.json, each request shaped like the client's own
// (a system prompt longer than the default 4096-token context, tools declared, streamed, the session header), then a
// one-shot `/rl` from a new session in the same directory, as `claude -p "/rl good"` and `codex exec "/rl bad"` send it.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { afterAll, describe, expect, it } from 'vitest';
import { REIN_BIN, runRein, startServeChild } from './test-utils/rein.ts';
import type { ServeChild } from './test-utils/rein.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-local-setup-'));
const home = path.join(root, 'home');
const reinHome = path.join(root, 'rein');
const work = path.join(root, 'work');
mkdirSync(home);
mkdirSync(work);
// The user's HOME (where ~/.claude and ~/.codex are) and Rein's home, both fresh.
const env = { HOME: home, CODEX_HOME: path.join(home, '.codex'), CLAUDE_CONFIG_DIR: '' };
const children: ChildProcess[] = [];
let serve: ServeChild | null = null;

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  await serve?.stop();
  await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : null)));
  rmSync(root, { recursive: true, force: true });
});

const rein = async (...args: string[]) => {
  const r = await runRein(args, { home: reinHome, env, timeoutMs: 60_000 });
  expect(r.code, `rein ${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r;
};

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function until<T>(what: string, probe: () => Promise<T | null>, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== null) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** An agent's system prompt of about 4.4k tokens on the demo tokenizer: longer than the default context of 4096. */
const SYSTEM = Array.from({ length: 120 }, (_, i) => `Rule ${i}: when you edit a file, read it first and keep the style of the code around it.`).join('\n');

interface TurnRow {
  id: number;
  source: string;
  session: string;
  state: string;
  onPolicy: boolean;
}
const turnsOf = async (source: string): Promise<TurnRow[]> => (JSON.parse((await rein('turns', '--json', '--source', source)).stdout) as { items: TurnRow[] }).items;

describe("the README's agents-on-your-model commands, from a fresh home", () => {
  it('set up Claude Code and Codex on the demo model: the first turns fit, are stored on-policy, and a one-shot /rl rates them', { timeout: 420_000 }, async () => {
    // Not a README step: a free port for the proxy, so tests never share the default one.
    const proxyPort = await freePort();
    await rein('settings', 'set', `proxy.port=${proxyPort}`, 'training.auto=false');

    const use = await rein('model', 'use', 'demo');
    expect(use.stdout).toMatch(/^training the demo model/);
    serve = await startServeChild(reinHome, [], env);

    const claude = await rein('setup', 'claude', '--local-model', '--yes');
    expect(claude.stdout).toContain('serving.contextSize 4096 → 32768');
    expect(claude.stdout).toMatch(/trained on contexts of 512 tokens, shorter than Claude Code's prompt/);
    const codex = await rein('setup', 'codex', '--local-model', '--yes', '--json');
    expect((JSON.parse(codex.stdout) as { notes: string[] }).notes).toContain("serving.contextSize is 32768, enough for Codex (Codex's first request (system prompt and tools) is about 11.8k tokens).");

    const sm = spawn(process.execPath, [REIN_BIN, 'serve-model'], { env: { ...process.env, ...env, REIN_HOME: reinHome }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(sm);
    let smOut = '';
    let smErr = '';
    sm.stdout!.setEncoding('utf8').on('data', (c: string) => (smOut += c));
    sm.stderr!.setEncoding('utf8').on('data', (c: string) => (smErr += c));
    const proxyUrl = await until('rein serve-model to print its URL', async () => (/^(http:\/\/127\.0\.0\.1:\d+\/v1)$/m.exec(smOut)?.[1] ?? (sm.exitCode !== null ? `exited: ${smErr}` : null)), 120_000);
    expect(proxyUrl).toBe(`http://127.0.0.1:${proxyPort}/v1`);

    // Claude Code: its hook and its model, as settings.json names them.
    const settings = JSON.parse(readFileSync(path.join(home, '.claude', 'settings.json'), 'utf8')) as {
      env: Record<string, string>;
      hooks: { UserPromptSubmit: { hooks: { url: string; headers: Record<string, string> }[] }[] };
    };
    const hook = settings.hooks.UserPromptSubmit.at(-1)!.hooks[0]!;
    const claudeHook = async (payload: Record<string, unknown>) =>
      (await (await fetch(hook.url, { method: 'POST', headers: { ...hook.headers, 'content-type': 'application/json' }, body: JSON.stringify({ cwd: work, ...payload }) })).json()) as Record<string, unknown>;
    expect(await claudeHook({ hook_event_name: 'UserPromptSubmit', session_id: 'claude-s1', prompt_id: 'p1', prompt: 'Say hello in one line.' })).toEqual({});
    const msg = await fetch(`${settings.env.ANTHROPIC_BASE_URL}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${settings.env.ANTHROPIC_AUTH_TOKEN}`, 'anthropic-version': '2023-06-01', 'x-claude-code-session-id': 'claude-s1' },
      body: JSON.stringify({
        model: settings.env.ANTHROPIC_MODEL,
        max_tokens: 32,
        stream: true,
        system: [{ type: 'text', text: SYSTEM }],
        tools: [{ name: 'Bash', description: 'Run a shell command', input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } }],
        messages: [{ role: 'user', content: 'Say hello in one line.' }],
      }),
    });
    const sse = await msg.text();
    expect(msg.status, sse).toBe(200);
    const inputTokens = Number(/"input_tokens":(\d+)/.exec(sse)?.[1]);
    expect(inputTokens).toBeGreaterThan(4096);
    expect(sse).toContain('event: message_stop');
    const [claudeTurn] = await until('the proxy to store the Claude turn', async () => ((await turnsOf('claude-code')).length > 0 ? turnsOf('claude-code') : null), 30_000);
    expect(claudeTurn).toMatchObject({ session: 'claude-s1', state: 'unrated', onPolicy: true });
    // `claude -p "/rl good"`: a new session, the same directory.
    expect(await claudeHook({ hook_event_name: 'UserPromptSubmit', session_id: 'claude-s2', prompt_id: 'p2', prompt: '/rl good' })).toEqual({ decision: 'block', reason: expect.stringMatching(/^Rated 👍/) });
    expect((await turnsOf('claude-code'))[0]).toMatchObject({ id: claudeTurn!.id, state: 'rated' });

    // Codex: its provider from config.toml, its hook command from hooks.json.
    const config = parseToml(readFileSync(path.join(home, '.codex', 'config.toml'), 'utf8')) as { model: string; model_providers: { rein: { base_url: string; experimental_bearer_token: string } } };
    const hooks = JSON.parse(readFileSync(path.join(home, '.codex', 'hooks.json'), 'utf8')) as { hooks: { UserPromptSubmit: { hooks: { command: string }[] }[] } };
    const codexHook = (payload: Record<string, unknown>): string => {
      const r = spawnSync('sh', ['-c', hooks.hooks.UserPromptSubmit.at(-1)!.hooks[0]!.command], { input: JSON.stringify({ cwd: work, hook_event_name: 'UserPromptSubmit', model: config.model, permission_mode: 'default', transcript_path: null, ...payload }), env: { ...process.env, ...env, REIN_HOME: reinHome }, encoding: 'utf8', timeout: 30_000 });
      expect(r.status, r.stderr).toBe(0);
      return r.stdout;
    };
    expect(codexHook({ session_id: 'codex-s1', turn_id: 't1', prompt: 'Say hi.' })).toBe('');
    const { base_url: baseUrl, experimental_bearer_token: bearer } = config.model_providers.rein;
    const res = await fetch(`${baseUrl}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}`, session_id: 'codex-s1' },
      body: JSON.stringify({
        model: config.model,
        instructions: SYSTEM,
        input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Say hi.' }] }],
        tools: [{ type: 'function', name: 'exec_command', description: 'Run a command', parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] } }],
        stream: true,
        max_output_tokens: 32,
      }),
    });
    const events = await res.text();
    expect(res.status, events).toBe(200);
    // Cut at max_output_tokens: the stream ends with response.incomplete, as OpenAI's does.
    expect(events).toMatch(/event: response\.(completed|incomplete)\n/);
    const [codexTurn] = await until('the proxy to store the Codex turn', async () => ((await turnsOf('codex')).length > 0 ? turnsOf('codex') : null), 30_000);
    expect(codexTurn).toMatchObject({ session: 'codex-s1', state: 'unrated', onPolicy: true });
    // `codex exec "/rl bad"`: a new thread, the same directory.
    expect(JSON.parse(codexHook({ session_id: 'codex-s2', turn_id: 't2', prompt: '/rl bad' }))).toEqual({ decision: 'block', reason: expect.stringMatching(/^Rated 👎/) });
    expect((await turnsOf('codex'))[0]).toMatchObject({ id: codexTurn!.id, state: 'rated' });

    // A setting the running model server read at start: the CLI says it needs a restart.
    const set = await rein('settings', 'set', 'serving.contextSize=8192');
    expect(set.stderr).toContain(`note: rein serve-model (pid ${sm.pid}, ${proxyUrl}) read its settings when it started: restart it`);
    expect(set.stderr).toContain('serving.contextSize 32768 → 8192');
  });
});
