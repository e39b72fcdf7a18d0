// The whole learning loop with Claude Code 2.1 on Rein's own model server and the small pretrained LM
// (loop.scenario.ts drives it offline in a network namespace): six one-shot turns made with Claude Code's own
// `--system-prompt` and `--tools ""` so the exact context fits the training limit, each rated with a one-shot
// `claude -p "/rl good"` or `"/rl bad"`, a `rein train` round that trains them on-policy (MIS-PO), the version the
// gate accepts served by the running `rein serve-model`, and the next turn stored under it with its μ.
import { beforeAll, describe, expect, it } from 'vitest';
import { inNetns, skipReason } from './netns.ts';

interface StoredTurn {
  id: number;
  source: string;
  prompt: string;
  response: string;
  onPolicy: boolean;
  state: string;
  rating: { kind: string; rater: string | null } | null;
  tokens: number | null;
  logprobs: number | null;
  adapterVersion: number | null;
}
type Run = { code: number | null; result?: string; isError?: boolean; stderr?: string };
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
  run: { status: string; adapterVersion: number | null; error: string | null; metrics: { samples: Samples } };
  trainS: number;
  adapters: { version: number; status: string; reason: string | null }[];
  status: { activeAdapter: { version: number } | null };
  after: Run;
  turnsAfter: StoredTurn[];
  proxyLog: string;
  serverLog: string;
}

const PLAN: [string, 'good' | 'bad'][] = [
  ['Say hello.', 'good'],
  ['Name a fruit.', 'bad'],
  ['What is two plus two?', 'bad'],
  ['Name a colour.', 'good'],
  ['Say goodbye.', 'bad'],
  ['Name an animal.', 'bad'],
];

const skip = skipReason();
describe.skipIf(skip !== null)(`The learning loop with Claude Code on Rein's own model server${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let f: Facts;
  beforeAll(async () => {
    const r = await inNetns<Facts>('loop.scenario.ts', 420_000);
    f = r.result;
    // The round's summary line (MIS-PO/KTO counts, reasons, time) into the test's output.
    console.log(r.stderr.split('\n').filter((l) => l.startsWith('loop:')).join('\n'));
  });

  it('each turn completes on the small LM and is stored on-policy, with the tokens the model server sampled and their μ', () => {
    for (const a of f.asked) expect(a.code, `${a.stderr}\n${f.proxyLog}`).toBe(0);
    // A reply the small LM ends at once is asked again by Claude Code itself: a turn of its own, left unrated.
    for (const [prompt] of PLAN) expect(f.turns.some((t) => t.prompt === prompt), prompt).toBe(true);
    for (const t of f.turns) {
      expect(t).toMatchObject({ source: 'claude-code', onPolicy: true, adapterVersion: 0 });
      expect(t.tokens).toBeGreaterThan(0);
      expect(t.logprobs).toBe(t.tokens);
    }
  });

  it('a one-shot `claude -p "/rl good|bad"` rates the newest turn of the same directory, and reaches no model', () => {
    for (const r of f.rated) {
      expect(r.code).toBe(0);
      expect(r.result).toContain(r.asked === 'good' ? 'Rated 👍' : 'Rated 👎');
    }
    const rated = f.turns.filter((t) => t.rating !== null);
    expect(rated.map((t) => [t.prompt.split('\n')[0], t.rating!.kind])).toEqual(PLAN);
    for (const t of rated) expect(t.rating!.rater).toBe('claude-code /rl');
    // Six turns sampled, no more: the /rl runs were answered by the hook.
    expect(f.proxyLog.match(/rein model server: v0,/g)?.length).toBe(f.turns.length);
  });

  it('`rein train` trains every rating on-policy (MIS-PO), none as text, with one held out for the gate', () => {
    expect(f.run.status, f.run.error ?? f.serverLog).toBe('succeeded');
    const s = f.run.metrics.samples;
    expect(s).toMatchObject({ pending: 5, heldout: 1, mispo: 5, kto: 0, skipped: [], offPolicy: [] });
  });

  it('the gate activates the new version, and the running `rein serve-model` serves it without a restart', () => {
    expect(f.adapters.map((a) => [a.version, a.status]), f.adapters[0]?.reason ?? '').toEqual([[1, 'active']]);
    expect(f.run.adapterVersion).toBe(1);
    expect(f.status.activeAdapter?.version).toBe(1);
    expect(f.proxyLog).toMatch(/rein model server: v1,/);
  });

  it('the next Claude turn is stored under that version, with its tokens and their μ from it', () => {
    expect(f.after.code, `${f.after.stderr}\n${f.proxyLog}`).toBe(0);
    expect(f.turnsAfter.length).toBeGreaterThanOrEqual(1);
    for (const t of f.turnsAfter) {
      expect(t).toMatchObject({ source: 'claude-code', onPolicy: true, adapterVersion: 1 });
      expect(t.tokens).toBeGreaterThan(0);
      expect(t.logprobs).toBe(t.tokens);
    }
    expect(f.turnsAfter[0]!.prompt).toBe('Say hello again.');
    expect(f.after.result?.trim()).toBe(f.turnsAfter.at(-1)!.response.trim());
  });
});
