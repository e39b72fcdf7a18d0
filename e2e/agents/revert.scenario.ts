// The revert and contradiction signals with the real Claude Code, inside a network namespace: `rein setup claude
// --yes`, then one session (--resume) of four prompts. The first has the fake model Read and Edit src/notes.txt; the
// user then puts the file back as it was (an editor's undo) and sends the second prompt, which edits other.txt; that
// file the user edits further instead. The third prompt gets "All tests pass." with no run; the fourth has the model
// run `npm test`, which fails, and answer the same. Prints facts as JSON; revert.agents.ts asserts.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CLAIM_MARKER, EDIT_MARKER, EDIT_OLD, startFake, TEST_MARKER } from './fake-models.ts';
import { cleanup, freePort, OFFLINE_CLIENT_ENV, rein, run, sandbox, startRein, turnsOf } from './harness.ts';

const s = sandbox('revert');
const fake = await startFake('anthropic');
const port = await freePort();
const env = {
  ...s.env,
  ANTHROPIC_BASE_URL: fake.url,
  ANTHROPIC_API_KEY: 'dummy',
  ...OFFLINE_CLIENT_ENV,
  // The Bash tool's `npm test` inherits this: no registry lookup for an update notice.
  npm_config_update_notifier: 'false',
};
// Read and Edit run without a prompt only when allowed in -p mode; the Bash rule allows `npm test` and nothing else.
const allowed = ['--allowedTools', 'Read', 'Edit', 'Bash(npm test:*)'];
const claude = (prompt: string, extra: string[] = []) => run('claude', ['-p', prompt, '--model', 'claude-sonnet-4-5', '--output-format', 'json', ...allowed, ...extra], { env, cwd: s.work, timeoutS: 90 });
const parse = (stdout: string): { result?: string; session_id?: string } => {
  try {
    return JSON.parse(stdout) as { result?: string; session_id?: string };
  } catch {
    return { result: stdout };
  }
};

mkdirSync(path.join(s.work, 'src'));
const notes = path.join(s.work, 'src/notes.txt');
const other = path.join(s.work, 'other.txt');
const ORIGINAL = `name = "rein"\n${EDIT_OLD}\nsize = 3\n`;
writeFileSync(notes, ORIGINAL);
writeFileSync(other, ORIGINAL);
// A test script that fails the way vitest reports a failing test file.
writeFileSync(path.join(s.work, 'package.json'), JSON.stringify({ name: 'work', private: true, scripts: { test: `node -e "console.log('FAIL src/x.test.ts > adds'); process.exit(1)"` } }));
const PROMPTS = [`${EDIT_MARKER} ${notes}`, `${EDIT_MARKER} ${other}`, `${CLAIM_MARKER} without running them`, `${TEST_MARKER} in this project`];

const out: Record<string, unknown> = { prompts: PROMPTS, original: ORIGINAL };
const server = await startRein(s, port);
try {
  out.setup = rein(s, ['setup', 'claude', '--yes']);
  const runs: Record<string, unknown>[] = [];
  const one = await claude(PROMPTS[0]!);
  const session = parse(one.stdout).session_id ?? '';
  runs.push({ code: one.code, ...parse(one.stdout), stderr: one.stderr.slice(-2000) });
  out.notesAfterEdit = readFileSync(notes, 'utf8');
  // The user puts notes.txt back as it was before the agent's edit.
  writeFileSync(notes, ORIGINAL);
  const two = await claude(PROMPTS[1]!, ['--resume', session]);
  runs.push({ code: two.code, ...parse(two.stdout), stderr: two.stderr.slice(-2000) });
  out.otherAfterEdit = readFileSync(other, 'utf8');
  // The user keeps the agent's edit of other.txt and edits the file further.
  writeFileSync(other, `${readFileSync(other, 'utf8')}weight = 7\n`);
  for (const prompt of PROMPTS.slice(2)) {
    const r = await claude(prompt, ['--resume', session]);
    runs.push({ code: r.code, ...parse(r.stdout), stderr: r.stderr.slice(-2000) });
  }
  out.runs = runs;
  const turns = await turnsOf(server, 'claude-code');
  out.turns = turns.map((t) => ({ id: t.id, prompt: t.prompt, response: t.response, session: t.session, createdAt: (t as { createdAt?: number }).createdAt ?? null, context: t.context }));
  out.signals = await Promise.all(turns.map((t) => server.api('turnSignals', { turnId: t.id })));
  const posts = fake.requests.filter((r) => r.method === 'POST');
  const tools = (posts[0]?.body as { tools?: { name: string; input_schema?: unknown }[] } | undefined)?.tools ?? [];
  out.editSchema = tools.find((t) => t.name === 'Edit')?.input_schema ?? null;
  // What Claude Code sent back for each tool call: the model sees the same text the transcript keeps.
  out.toolResults = posts.flatMap((r) => {
    const msgs = (r.body as { messages?: { content?: unknown }[] }).messages ?? [];
    const c = msgs.at(-1)?.content;
    return Array.isArray(c) ? c.filter((b: { type?: string }) => b.type === 'tool_result') : [];
  });
  out.log = server.log().slice(-4000);
} finally {
  await server.stop().catch(() => {});
  await fake.close();
  cleanup(s);
}
process.stdout.write(JSON.stringify(out) + '\n');
