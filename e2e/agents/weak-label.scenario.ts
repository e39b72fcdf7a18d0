// Ratings without clicks with the real Claude Code, inside a network namespace: `rein setup claude --yes`, a first
// prompt, then a second one in the same session (--resume) that says the first answer was wrong. The hooks store both
// turns; the second prompt becomes a signal on the first answer, read as a Bad weak label with its evidence. Prints
// facts as JSON; weak-label.agents.ts asserts.
import { startFake } from './fake-models.ts';
import { cleanup, freePort, OFFLINE_CLIENT_ENV, rein, run, sandbox, startRein, turnsOf } from './harness.ts';

const s = sandbox('weak');
const fake = await startFake('anthropic');
const port = await freePort();
const env = {
  ...s.env,
  ANTHROPIC_BASE_URL: fake.url,
  ANTHROPIC_API_KEY: 'dummy',
  ...OFFLINE_CLIENT_ENV,
};
const claude = (prompt: string, extra: string[] = []) => run('claude', ['-p', prompt, '--model', 'claude-sonnet-4-5', '--output-format', 'json', ...extra], { env, cwd: s.work, timeoutS: 90 });
const parse = (stdout: string): { result?: string; session_id?: string } => {
  try {
    return JSON.parse(stdout) as { result?: string; session_id?: string };
  } catch {
    return { result: stdout };
  }
};

const FIRST = 'make the parser accept trailing commas';
const SECOND = "no, that's wrong, the test still fails";

const out: Record<string, unknown> = {};
const server = await startRein(s, port);
try {
  out.setup = rein(s, ['setup', 'claude', '--yes']);
  const one = await claude(FIRST);
  const first = parse(one.stdout);
  const two = await claude(SECOND, ['--resume', first.session_id ?? '']);
  const second = parse(two.stdout);
  out.runs = [
    { code: one.code, session: first.session_id, result: first.result, stderr: one.stderr.slice(-2000) },
    { code: two.code, session: second.session_id, result: second.result, stderr: two.stderr.slice(-2000) },
  ];
  const turns = await turnsOf(server, 'claude-code');
  out.turns = turns.map((t) => ({ id: t.id, prompt: t.prompt, session: (t as { session?: string | null }).session ?? null, rating: (t as { rating?: unknown }).rating ?? null }));
  const firstTurn = turns.find((t) => t.prompt === FIRST);
  out.signals = firstTurn === undefined ? null : await server.api('turnSignals', { turnId: firstTurn.id });
  out.weakLabels = await server.api('weakLabels', {});
} finally {
  await server.stop().catch(() => {});
  await fake.close();
  cleanup(s);
}
process.stdout.write(JSON.stringify(out) + '\n');
