// OpenClaw end to end, inside a network namespace, with one gateway for all steps (it takes 6-19 s to start):
// `rein setup openclaw --yes` loads resources/openclaw-plugin; `chat.send` a message and the reply is captured
// whole; `/rl good` through chat.send rates it with no model call; `/rl reset` from a sender who is not on the
// admins list is refused; Rein down and back; then `rein uninstall openclaw --yes` restores the config bytes, and a gateway restarted on them
// answers with nothing reaching Rein.
// Prints facts as JSON; openclaw.agents.ts asserts.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { answerFor, modelRequests, startFake } from './fake-models.ts';
import { OPENCLAW_NODE_DIR, cleanup, freePort, rein, ratingsOf, run, sandbox, saveArtifact, startRein, turnsOf, until } from './harness.ts';

const s = sandbox('openclaw');
const fake = await startFake('chat');
const port = await freePort();
const gwPort = await freePort();
const gwToken = 'rein-e2e-gateway-token-0123456789';
const stateDir = path.join(s.dir, 'openclaw');
mkdirSync(stateDir, { recursive: true });
const configPath = path.join(stateDir, 'openclaw.json');
const userConfig =
  JSON.stringify(
    {
      gateway: { mode: 'local' },
      models: {
        catalogRefresh: { enabled: false },
        providers: { fake: { baseUrl: `${fake.url}/v1`, apiKey: 'dummy', api: 'openai-completions', models: [{ id: 'fake-model', name: 'Fake' }] } },
      },
      agents: { defaults: { model: { primary: 'fake/fake-model' } } },
      update: { checkOnStart: false },
      discovery: { mdns: { mode: 'off' } },
    },
    null,
    2,
  ) + '\n';
writeFileSync(configPath, userConfig, { mode: 0o644 });
const env: NodeJS.ProcessEnv = {
  ...s.env,
  PATH: `${OPENCLAW_NODE_DIR}:${s.env.PATH}`,
  OPENCLAW_STATE_DIR: stateDir,
  OPENCLAW_CONFIG_PATH: configPath,
  OPENCLAW_OFFLINE: '1',
  OPENCLAW_NO_AUTO_UPDATE: '1',
  OPENCLAW_DISABLE_BONJOUR: '1',
  OPENCLAW_SKIP_CHANNELS: '1',
};
s.env = env;
const SESSION = 'agent:main:main';
let seq = 0;

async function call(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await run('openclaw', ['gateway', 'call', method, '--url', `ws://127.0.0.1:${gwPort}`, '--token', gwToken, '--json', '--timeout', '60000', '--params', JSON.stringify(params)], { env, cwd: s.work, timeoutS: 90 });
  try {
    return JSON.parse(r.stdout) as Record<string, unknown>;
  } catch {
    throw new Error(`openclaw gateway call ${method} exited ${r.code}: ${r.stdout.slice(-1000)} ${r.stderr.slice(-1000)}`);
  }
}
type Msg = { role?: string; content?: unknown };
const textOf = (m: Msg) => (typeof m.content === 'string' ? m.content : Array.isArray(m.content) ? (m.content as { text?: string }[]).map((b) => b.text ?? '').join('') : '');
async function history(): Promise<Msg[]> {
  const h = await call('chat.history', { sessionKey: SESSION });
  return (h.messages as Msg[] | undefined) ?? [];
}
/** Send a message and wait until the session holds an assistant message after it. */
async function send(message: string): Promise<{ reply: string; ms: number }> {
  const t = performance.now();
  const before = (await history()).length;
  await call('chat.send', { sessionKey: SESSION, message, idempotencyKey: `e2e-${++seq}` });
  const reply = await until(
    `a reply to ${JSON.stringify(message)}`,
    async () => {
      const msgs = (await history()).slice(before);
      const a = msgs.findLast((m) => m.role === 'assistant');
      return a ? textOf(a) : null;
    },
    90_000,
    500,
  );
  return { reply, ms: performance.now() - t };
}

async function startGateway(): Promise<ChildProcess> {
  const g = spawn('openclaw', ['gateway', 'run', '--bind', 'loopback', '--port', String(gwPort), '--auth', 'token', '--token', gwToken], { env, cwd: s.work, stdio: ['ignore', 'pipe', 'pipe'] });
  const mark = gwLog.length;
  g.stdout!.on('data', (d: Buffer) => (gwLog += d.toString('utf8')));
  g.stderr!.on('data', (d: Buffer) => (gwLog += d.toString('utf8')));
  await until('the gateway to listen', () => /http server listening/.test(gwLog.slice(mark)) || g.exitCode !== null, 120_000, 250);
  if (g.exitCode !== null) throw new Error(`the gateway exited ${g.exitCode}: ${gwLog.slice(-3000)}`);
  return g;
}
async function stopGateway(g: ChildProcess | null): Promise<void> {
  if (!g || g.exitCode !== null) return;
  const exited = new Promise((r) => g.once('exit', r));
  g.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
  if (g.exitCode === null && g.signalCode === null) {
    g.kill('SIGKILL');
    await exited;
  }
}

const out: Record<string, unknown> = {};
let server = await startRein(s, port);
let gwLog = '';
let gateway: ChildProcess | null = null;
try {
  out.setup = rein(s, ['setup', 'openclaw', '--yes']);
  const started = performance.now();
  // Started after setup: a gateway loads its plugins at start.
  gateway = await startGateway();
  out.gatewayStartMs = performance.now() - started;
  out.pluginLoaded = /plugins?:[^\n]*\brein\b/.test(gwLog);

  // c. A chat turn, captured whole.
  const t1 = await send('Say hi to the e2e suite');
  out.turn = { reply: t1.reply, expected: answerFor('Say hi to the e2e suite'), ms: t1.ms };
  out.turnsAfterFirst = await until('the turn in Rein', async () => {
    const ts = await turnsOf(server, 'openclaw');
    return ts.length > 0 ? ts : null;
  }, 20_000).catch(() => []);

  const before = modelRequests(fake).length;
  const good = await send('/rl good');
  out.rlGood = { reply: good.reply, modelRequests: modelRequests(fake).length - before };
  out.ratingsAfterGood = await ratingsOf(server, 'openclaw');

  const before2 = modelRequests(fake).length;
  const reset = await send('/rl reset confirm');
  out.rlReset = { reply: reset.reply, modelRequests: modelRequests(fake).length - before2 };
  out.ratingsAfterReset = await ratingsOf(server, 'openclaw');

  // d. Rein down: the agent still answers; back up, the next turn is captured.
  await server.stop();
  const down = await send('A turn while Rein is down');
  out.down = { reply: down.reply, ms: down.ms, upMs: t1.ms };
  server = await startRein(s, port);
  const back = await send('A turn after Rein is back');
  out.back = { reply: back.reply };
  await until('the new turn in Rein', async () => ((await turnsOf(server, 'openclaw')).some((t) => t.prompt === 'A turn after Rein is back') ? true : null), 20_000).catch(() => null);
  out.turnsAfterBack = await turnsOf(server, 'openclaw');

  // e. Uninstall: the config bytes come back (the gateway keeps running with the plugin it loaded).
  out.uninstall = rein(s, ['uninstall', 'openclaw', '--yes']);
  const now = readFileSync(configPath, 'utf8');
  out.configRestored = now === userConfig;
  if (!out.configRestored) out.configNow = now;
  // A gateway started on the restored config loads no Rein plugin: its turn reaches the model and nothing reaches Rein.
  await stopGateway(gateway);
  const mark = gwLog.length;
  gateway = await startGateway();
  out.pluginLoadedAfterUninstall = /plugins?:[^\n]*\brein\b/.test(gwLog.slice(mark));
  const turnsBefore = (await turnsOf(server, 'openclaw')).length;
  const requestsBefore = modelRequests(fake).length;
  const after = await send('A turn after uninstall');
  await new Promise((r) => setTimeout(r, 1500));
  out.afterUninstall = {
    reply: after.reply,
    modelRequests: modelRequests(fake).length - requestsBefore,
    newTurns: (await turnsOf(server, 'openclaw')).length - turnsBefore,
  };
  saveArtifact('openclaw-model-requests.json', fake.requests.map((r) => ({ method: r.method, url: r.url, messages: (r.body as { messages?: unknown })?.messages })));
  saveArtifact('openclaw-history.json', await history());
} finally {
  await stopGateway(gateway);
  saveArtifact('openclaw-gateway.log', gwLog);
  await server.stop().catch(() => {});
  await fake.close();
  cleanup(s);
}
process.stdout.write(JSON.stringify(out) + '\n');
