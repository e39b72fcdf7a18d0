// `rein demo --json` through the real launcher: one round of 32 answers sampled through the serve-model stack from
// the small LM, rated by the "ends with a question" rule, trained with the balanced preset as a user gets it. Issue
// #12's CI bar: the held-out rate rises after one round, with a 95% interval of the paired change above 0.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runRein } from '../test-utils/rein.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-demo-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface DemoJson {
  rule: string;
  seed: number;
  held: number;
  before: { rate: number; ci: [number, number] };
  after: { rate: number; ci: [number, number] };
  rounds: { round: number; rate: number; ci: [number, number]; change: { mean: number; ci: [number, number] }; rated: number; onPolicy: number; run: string; status: string; kl: number | null; budget: number | null; others: { name: string; rate: number; change: { mean: number; ci: [number, number] } }[] }[];
}

describe('rein demo', () => {
  it('one balanced round of 32 on-policy ratings raises the held-out question rate, 95% CI of the change above 0', { timeout: 600_000 }, async () => {
    const r = await runRein(['demo', '--json', '--rule', 'question', '--rounds', '1', '--seed', '1'], { home: path.join(root, 'home'), timeoutMs: 590_000 });
    expect(r.code, r.stderr).toBe(0);
    const j = JSON.parse(r.stdout) as DemoJson;
    console.log(`rein demo: before ${j.before.rate} ${JSON.stringify(j.before.ci)}; ${j.rounds.map((p) => `round ${p.round}: ${p.rate} ${JSON.stringify(p.ci)} change ${JSON.stringify(p.change)} ${p.status} KL ${p.kl} of ${p.budget}; others ${p.others.map((e) => `${e.name} ${e.rate} (${e.change.mean})`).join(', ')}`).join('; ')}`);
    expect(j).toMatchObject({ rule: 'question', seed: 1, held: 128 });
    // The corpus's base rate is 12%; the pretrained model's held-out rate starts at or below the issue's 20%.
    expect(j.before.rate).toBeLessThanOrEqual(0.2);
    expect(j.rounds).toHaveLength(1);
    const [p] = j.rounds;
    // Every answer went through the proxy's capture on-policy (tokens and the sampled distribution's μ).
    expect(p!).toMatchObject({ rated: 32, onPolicy: 32, run: 'succeeded', status: 'active' });
    expect(p!.kl).not.toBeNull();
    expect(p!.kl!).toBeLessThanOrEqual(p!.budget!);
    expect(j.after.rate).toBe(p!.rate);
    expect(p!.change.mean).toBeGreaterThan(0);
    expect(p!.change.ci[0]).toBeGreaterThan(0);
    // The side effects: the five styles the rule does not judge, each with its rate and paired change on the same
    // 128 held-out answers; none of them may be lifted or sunk as far as the rule moved its own style.
    expect(p!.others.map((e) => e.name)).toEqual(['code', 'apology', 'hedge', 'tests', 'steps']);
    for (const e of p!.others) {
      expect(e.rate).toBeGreaterThanOrEqual(0);
      expect(Math.abs(e.change.mean), e.name).toBeLessThan(p!.change.mean);
    }
  });

  it('names a rule it does not know', async () => {
    const r = await runRein(['demo', '--rule', 'poetry'], { home: path.join(root, 'home2') });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--rule must be one of code, apology, hedge, question, tests, steps/);
  });
});
