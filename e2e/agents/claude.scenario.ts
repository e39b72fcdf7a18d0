// Claude Code end to end, inside a network namespace: `rein setup claude --yes`, a tool turn, `/rl good`,
// `/rl fix`, Rein down and back, `rein uninstall claude --yes`. Prints facts as JSON; claude.agents.ts asserts.
import { readFileSync, statSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { TOOL_MARKER, modelRequests, startFake, startRecorder } from './fake-models.ts';
import { cleanup, freePort, OFFLINE_CLIENT_ENV, ratingsOf, rein, run, sandbox, saveArtifact, startRein, turnsOf } from './harness.ts';
import type { Sandbox } from './harness.ts';

const s = sandbox('claude');
const fake = await startFake('anthropic');
const port = await freePort();
const settingsPath = path.join(s.home, '.claude', 'settings.json');
// A user who already has settings: uninstall must give these exact bytes back.
mkdirSync(path.dirname(settingsPath), { recursive: true });
// Its own command hooks log every payload Claude sends (the artifacts), beside Rein's http hooks.
const payloadLog = path.join(s.dir, 'claude-payloads.jsonl');
const logHook = { hooks: [{ type: 'command', command: `cat >> '${payloadLog}'; echo >> '${payloadLog}'` }] };
const userSettings =
  JSON.stringify({ theme: 'dark', permissions: { allow: ['Bash(ls:*)'] }, hooks: { UserPromptSubmit: [logHook], UserPromptExpansion: [logHook], Stop: [logHook] } }, null, 2) + '\n';
writeFileSync(settingsPath, userSettings, { mode: 0o644 });

const claudeEnv = (x: Sandbox) => ({
  ...x.env,
  ANTHROPIC_BASE_URL: fake.url,
  ANTHROPIC_API_KEY: 'dummy',
  ...OFFLINE_CLIENT_ENV,
});
const claude = (prompt: string, extra: string[] = []) =>
  run('claude', ['-p', prompt, '--model', 'claude-sonnet-4-5', '--output-format', 'json', ...extra], { env: claudeEnv(s), cwd: s.work, timeoutS: 90 });
const result = (r: { stdout: string }) => {
  try {
    return JSON.parse(r.stdout) as { result?: string; session_id?: string; is_error?: boolean };
  } catch {
    return { result: r.stdout };
  }
};

const out: Record<string, unknown> = {};
let server = await startRein(s, port);
try {
  out.setup = rein(s, ['setup', 'claude', '--yes']);
  out.settingsMode = statSync(settingsPath).mode & 0o777;
  out.settingsHasToken = readFileSync(settingsPath, 'utf8').includes(server.token);
  out.settingsHasEnvRef = readFileSync(settingsPath, 'utf8').includes('$REIN_TOKEN');

  // a. A tool turn: the model calls Bash(echo), then answers.
  const toolPrompt = `${TOOL_MARKER} and tell me what it printed`;
  const t1 = await claude(toolPrompt, ['--allowedTools', 'Bash(echo:*)']);
  out.toolTurn = { code: t1.code, ms: t1.ms, result: result(t1).result, stderr: t1.stderr.slice(-2000) };
  out.turnsAfterTool = await turnsOf(server, 'claude-code');

  const before = modelRequests(fake).length;
  const good = await claude('/rl good');
  out.rlGood = { code: good.code, result: result(good).result, modelRequests: modelRequests(fake).length - before };

  const t2 = await claude('What is a second question?');
  out.plainTurn = { code: t2.code, ms: t2.ms, result: result(t2).result };
  const before2 = modelRequests(fake).length;
  const fix = await claude('/rl fix "The better answer is forty-two."');
  out.rlFix = { code: fix.code, result: result(fix).result, modelRequests: modelRequests(fake).length - before2 };
  out.ratings = await ratingsOf(server, 'claude-code');

  // d. Rein down: the turn still completes; then Rein back up captures again.
  // The best of two each way, so one slow start on a loaded machine does not pass for Rein's cost.
  const up = [await claude('A turn with Rein up, for timing?'), await claude('A turn with Rein up, for timing?')];
  await server.stop();
  const downs = [await claude('A turn while Rein is down?'), await claude('A turn while Rein is down?')];
  const down = downs.reduce((a, b) => (b.ms < a.ms ? b : a));
  out.down = { code: Math.max(...downs.map((d) => d.code ?? 1)), ms: down.ms, upMs: Math.min(...up.map((u) => u.ms)), result: result(down).result };
  server = await startRein(s, port);
  const back = await claude('A turn after Rein is back?');
  out.back = { code: back.code, result: result(back).result };
  out.turnsAfterBack = await turnsOf(server, 'claude-code');

  // e. Uninstall: the settings bytes come back, and nothing reaches Rein's port.
  out.uninstall = rein(s, ['uninstall', 'claude', '--yes']);
  out.settingsRestored = readFileSync(settingsPath, 'utf8') === userSettings;
  out.settingsModeAfter = statSync(settingsPath).mode & 0o777;
  out.rlFileLeft = existsSync(path.join(s.home, '.claude', 'commands', 'rl.md'));
  await server.stop();
  const recorder = await startRecorder(port);
  const after = await claude('A turn after uninstall?');
  await new Promise((r) => setTimeout(r, 300));
  out.afterUninstall = { code: after.code, result: result(after).result, reinRequests: recorder.requests.length };
  await recorder.close();

  // Artifacts: the model requests and the hook payloads, from this real run.
  const transcripts = path.join(s.home, '.claude', 'projects');
  out.transcriptDirExists = existsSync(transcripts);
  const payloads = existsSync(payloadLog) ? readFileSync(payloadLog, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Record<string, unknown>) : [];
  out.payloadEvents = payloads.map((p) => p.hook_event_name);
  saveArtifact('claude-hook-payloads.json', payloads);
  // The tool turn's transcript as Claude wrote it (the unit-test fixture fixtures/claude/real-tool-turn.jsonl is
  // this file, trimmed and with paths normalised).
  const toolSession = payloads.find((p) => p.hook_event_name === 'Stop' && typeof p.transcript_path === 'string');
  if (toolSession && existsSync(toolSession.transcript_path as string)) {
    saveArtifact('claude-transcript-tool-turn.jsonl', readFileSync(toolSession.transcript_path as string, 'utf8'));
  }
  saveArtifact('claude-model-requests.json', fake.requests.map((r) => ({ method: r.method, url: r.url, messages: (r.body as { messages?: unknown })?.messages })));
} finally {
  await server.stop().catch(() => {});
  await fake.close();
  cleanup(s);
}
process.stdout.write(JSON.stringify(out) + '\n');
