// Codex end to end, inside a network namespace: the user's config.toml with their own notify, `rein setup codex
// --yes` (its hook-trust step asks the real `codex app-server`), `codex exec` turns, `/rl bad`, Rein down and
// back (the spooled notify), `rein uninstall codex --yes`. Prints facts as JSON; codex.agents.ts asserts.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { modelRequests, startFake, startRecorder } from './fake-models.ts';
import { cleanup, freePort, rein, ratingsOf, run, sandbox, saveArtifact, startRein, turnsOf, until } from './harness.ts';

const s = sandbox('codex');
const fake = await startFake('responses');
const port = await freePort();
const codexHome = path.join(s.home, '.codex');
mkdirSync(codexHome, { recursive: true });
const prevLog = path.join(s.dir, 'previous-notify.jsonl');
// The user's own notify: appends the payload it is given (the last argv) to a file.
const userConfig = [
  '# my codex config',
  'model = "gpt-fake"',
  'model_provider = "fake"',
  `notify = ["bash", "-c", "printf '%s\\\\n' \\"$1\\" >> '${prevLog}'", "previous-notify"]`,
  '',
  '[model_providers.fake]',
  'name = "fake"',
  `base_url = "${fake.url}/v1"`,
  'wire_api = "responses"',
  'env_key = "FAKE_API_KEY"',
  '',
  '# no outside lookups (notes/REAL_CLIENTS.md)',
  '[analytics]',
  'enabled = false',
  '',
  '[features]',
  'plugins = false',
  '',
].join('\n');
const configPath = path.join(codexHome, 'config.toml');
writeFileSync(configPath, userConfig);
const env = { ...s.env, CODEX_HOME: codexHome, FAKE_API_KEY: 'dummy' };
s.env = env;
const codex = (prompt: string) => run('codex', ['exec', '--skip-git-repo-check', prompt], { env, cwd: s.work, timeoutS: 90 });
const prevLines = () => (existsSync(prevLog) ? readFileSync(prevLog, 'utf8').split('\n').filter((l) => l !== '') : []);

const out: Record<string, unknown> = {};
let server = await startRein(s, port);
try {
  const setup = await run(process.execPath, [path.join(import.meta.dirname, '../../bin/rein.mjs'), '--json', 'setup', 'codex', '--yes'], { env, cwd: s.work, timeoutS: 60 });
  out.setup = { code: setup.code, stderr: setup.stderr, json: JSON.parse(setup.stdout) as unknown };
  out.configAfterSetup = readFileSync(configPath, 'utf8');

  // b. One turn: notify and Stop both fire; Rein stores it once; the user's notify gets the same payload.
  const t1 = await codex('Say hi to the e2e suite');
  out.turn = { code: t1.code, ms: t1.ms, stdout: t1.stdout, stderr: t1.stderr.slice(-3000) };
  await until('the previous notify to fire', () => prevLines().length >= 1, 15_000);
  await new Promise((r) => setTimeout(r, 500));
  out.previousNotify = prevLines().map((l) => JSON.parse(l) as unknown);
  out.turnsAfterFirst = await turnsOf(server, 'codex');

  const before = modelRequests(fake).length;
  const bad = await codex('/rl bad');
  out.rlBad = { code: bad.code, stdout: bad.stdout, stderr: bad.stderr.slice(-3000), modelRequests: modelRequests(fake).length - before };
  out.ratings = await ratingsOf(server, 'codex');

  // d. Rein down: the turn completes and its notify is spooled; back up, the next notify delivers it once.
  const up = [await codex('A turn with Rein up, for timing'), await codex('A turn with Rein up, for timing')];
  await server.stop();
  const down = await codex('A turn while Rein is down');
  out.down = { code: down.code, ms: down.ms, upMs: Math.min(...up.map((u) => u.ms)), stdout: down.stdout };
  out.spoolAfterDown = existsSync(path.join(s.reinHome, 'spool', 'codex.jsonl')) ? readFileSync(path.join(s.reinHome, 'spool', 'codex.jsonl'), 'utf8').split('\n').filter((l) => l).length : 0;
  server = await startRein(s, port);
  const back = await codex('A turn after Rein is back');
  out.back = { code: back.code };
  await until('the spooled and the new turn to arrive', async () => (await turnsOf(server, 'codex')).length >= 5 || null, 15_000).catch(() => null);
  await new Promise((r) => setTimeout(r, 500));
  out.turnsAfterBack = await turnsOf(server, 'codex');
  out.spoolLeft = existsSync(path.join(s.reinHome, 'spool', 'codex.jsonl'));

  // e. Uninstall: config.toml comes back byte for byte, hooks.json goes, nothing reaches Rein's port, and the
  // user's notify still fires.
  const notifiesBefore = prevLines().length;
  out.uninstall = rein(s, ['uninstall', 'codex', '--yes']);
  const configNow = readFileSync(configPath, 'utf8');
  out.configRestored = configNow === userConfig;
  if (!out.configRestored) out.configNow = configNow;
  out.hooksJsonLeft = existsSync(path.join(codexHome, 'hooks.json'));
  await server.stop();
  const recorder = await startRecorder(port);
  const after = await codex('A turn after uninstall');
  await until('the previous notify after uninstall', () => prevLines().length > notifiesBefore, 10_000).catch(() => null);
  await new Promise((r) => setTimeout(r, 300));
  out.afterUninstall = { code: after.code, stdout: after.stdout, reinRequests: recorder.requests.length, previousNotifyFired: prevLines().length - notifiesBefore };
  await recorder.close();

  saveArtifact('codex-notify-payloads.json', prevLines().map((l) => JSON.parse(l) as unknown));
  saveArtifact('codex-model-requests.json', fake.requests.map((r) => ({ method: r.method, url: r.url, input: (r.body as { input?: unknown })?.input })));
  saveArtifact('codex-config-after-setup.toml', String(out.configAfterSetup));
} finally {
  await server.stop().catch(() => {});
  await fake.close();
  cleanup(s);
}
process.stdout.write(JSON.stringify(out) + '\n');
