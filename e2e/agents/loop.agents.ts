// The whole learning loop with Claude Code 2.1 and Codex 0.169 on Rein's own model server and the small pretrained
// LM (loop.scenario.ts drives each, offline in a network namespace): six one-shot turns made with the client's own
// options that shrink its prompt (so the exact context fits the training limit), each rated with a one-shot `/rl
// good` or `/rl bad` from the same directory, a `rein train` round that trains them on-policy (MIS-PO), the version
// the gate accepts served by the running `rein serve-model`, and the next turn stored under it with its μ.
import { beforeAll, describe, expect, it } from 'vitest';
import { LOOP_PLAN } from './loop-plan.ts';
import { inNetns, skipReason } from './netns.ts';

interface StoredTurn {
  id: number;
  source: string;
  prompt: string;
  response: string;
  onPolicy: boolean;
  rating: { kind: string; rater: string | null } | null;
  tokens: number | null;
  logprobs: number | null;
  adapterVersion: number | null;
}
type Run = { code: number | null; result?: string; stderr?: string };
interface Samples {
  pending: number;
  heldout: number;
  mispo: number;
  kto: number;
  skipped: { why: string }[];
  offPolicy: { why: string }[];
}
interface Facts {
  asked: Run[];
  rated: (Run & { asked: string })[];
  turns: StoredTurn[];
  runs: { id: number; status: string; adapterVersion: number | null; error: string | null; metrics: { samples: Samples } }[];
  adapters: { version: number; runId: number; status: string; reason: string | null }[];
  status: { activeAdapter: { version: number } | null };
  after: Run;
  turnsAfter: StoredTurn[];
  proxyLog: string;
  serverLog: string;
}

const PLAN = LOOP_PLAN;

const CLIENTS = [
  { agent: 'claude', name: 'Claude Code', source: 'claude-code', rater: 'claude-code /rl' },
  { agent: 'codex', name: 'Codex', source: 'codex', rater: 'codex /rl' },
] as const;

const skip = skipReason();
for (const c of CLIENTS) {
  describe.skipIf(skip !== null)(`The learning loop with ${c.name} on Rein's own model server${skip ? ` (skipped: ${skip})` : ''}`, () => {
    let f: Facts;
    beforeAll(async () => {
      const r = await inNetns<Facts>('loop.scenario.ts', 420_000, [c.agent]);
      f = r.result;
      // The round's summary line (MIS-PO/KTO counts, reasons, time) into the test's output.
      console.log(r.stderr.split('\n').filter((l) => l.startsWith('loop ')).join('\n'));
    });

    it('each turn completes on the small LM and is stored on-policy, with the tokens the model server sampled and their μ', () => {
      for (const a of f.asked) expect(a.code, `${a.stderr}\n${f.proxyLog}`).toBe(0);
      // A reply the small LM ends at once is asked again by Claude Code itself: a turn of its own, left unrated.
      for (const [prompt] of PLAN) expect(f.turns.some((t) => t.prompt === prompt), prompt).toBe(true);
      for (const t of f.turns) {
        expect(t).toMatchObject({ source: c.source, onPolicy: true, adapterVersion: 0 });
        expect(t.tokens).toBeGreaterThan(0);
        expect(t.logprobs).toBe(t.tokens);
      }
    });

    it('a one-shot `/rl good|bad` rates the newest turn of the same directory, and reaches no model', () => {
      for (const r of f.rated) {
        expect(r.code).toBe(0);
        if (c.agent === 'claude') expect(r.result).toContain(r.asked === 'good' ? 'Rated 👍' : 'Rated 👎');
        else expect(r.stderr).toContain('hook: UserPromptSubmit Blocked');
      }
      const rated = f.turns.filter((t) => t.rating !== null);
      expect(rated.map((t) => [t.prompt.split('\n')[0], t.rating!.kind])).toEqual(PLAN);
      for (const t of rated) expect(t.rating!.rater).toBe(c.rater);
      // No request reached the model server but the turns': the /rl runs were answered by the hook.
      expect(f.proxyLog.match(/rein model server: v\d+,/g)?.length).toBe(f.turns.length + f.turnsAfter.length);
    });

    it('`rein train` trains every rating on-policy (MIS-PO), none as text, with one held out for the gate', () => {
      for (const run of f.runs) {
        expect(run.status, run.error ?? f.serverLog).toBe('succeeded');
        // A second round (after the gate rejected the first) trains the same six ratings: they stay pending.
        expect(run.metrics.samples).toMatchObject({ pending: 5, heldout: 1, mispo: 5, kto: 0, skipped: [], offPolicy: [] });
      }
    });

    it('the gate activates the new version (a rejected first round is trained again), and the running `rein serve-model` serves it without a restart', () => {
      const last = f.runs.at(-1)!;
      const active = f.adapters.filter((a) => a.status === 'active');
      expect(active.map((a) => a.runId), f.adapters.map((a) => `v${a.version} ${a.status}: ${a.reason}`).join('\n')).toEqual([last.id]);
      // Only a round the gate rejected is followed by another.
      for (const run of f.runs.slice(0, -1)) expect(f.adapters.find((a) => a.runId === run.id)?.status).toBe('rejected');
      expect(last.adapterVersion).toBe(active[0]!.version);
      expect(f.status.activeAdapter?.version).toBe(active[0]!.version);
      expect(f.proxyLog).toContain(`rein model server: v${active[0]!.version},`);
    });

    it('the next turn is stored under that version, with its tokens and their μ from it', () => {
      const version = f.status.activeAdapter?.version;
      expect(version).toBeGreaterThan(0);
      expect(f.after.code, `${f.after.stderr}\n${f.proxyLog}`).toBe(0);
      expect(f.turnsAfter.length).toBeGreaterThanOrEqual(1);
      for (const t of f.turnsAfter) {
        expect(t).toMatchObject({ source: c.source, onPolicy: true, adapterVersion: version });
        expect(t.tokens).toBeGreaterThan(0);
        expect(t.logprobs).toBe(t.tokens);
      }
      expect(f.turnsAfter[0]!.prompt).toBe('Say hello again.');
      if (c.agent === 'claude') expect(f.after.result?.trim()).toBe(f.turnsAfter.at(-1)!.response.trim());
    });
  });
}
