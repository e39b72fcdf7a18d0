// `rein gym` through the real launcher. The learning bar at CI size (issue #16): the small LM, with the balanced
// preset and the gym's defaults as a user gets them (each round gated on 400 held-out hands of the env, played by
// the candidate and its parent), trained on 64 blackjack episodes (four rounds of 16), must beat
// the untrained agent on 400 held-out hands: the paired 95% interval of the change in mean return lies above 0.
// bench/gym.ts runs the full bar (2,000 hands, against basic strategy).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createCore } from '../../node/core/core.ts';
import { resolveHome } from '../../node/home.ts';
import { runRein } from '../test-utils/rein.ts';
import { eta, progressBar } from './gym.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-gym-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Est {
  winRate: number;
  winCi: [number, number];
  meanReturn: number;
  meanReturnCi: [number, number];
  episodes: number;
}
interface GymJson {
  env: string;
  episodes: number;
  heldOut: number;
  before: Est & { unreadable: number; steps: number };
  after: Est & { unreadable: number; steps: number };
  change: { winRate: number; winRateCi: [number, number]; meanReturn: number; meanReturnCi: [number, number] };
  baselines: Record<string, Est>;
  rounds: { runId: number; run: string; status: string; version: number | null; gate: string; envGate: { episodes: number } | null }[];
  stats: { episodes: number; steps: number; invalid: number; envErrors: number };
  kept: string;
}

describe('rein gym', () => {
  it('64 blackjack episodes train the small LM past its untrained self on 400 held-out hands, every step on-policy', { timeout: 1_500_000 }, async () => {
    const r = await runRein(['gym', 'blackjack', '--json', '--episodes', '64', '--held', '400', '--seed', '1', '--keep'], { home: path.join(root, 'home'), timeoutMs: 1_480_000 });
    expect(r.code, r.stderr).toBe(0);
    const j = JSON.parse(r.stdout) as GymJson;
    try {
      console.log(
        `rein gym: before win ${j.before.winRate} return ${j.before.meanReturn}; after win ${j.after.winRate} return ${j.after.meanReturn}; change ${JSON.stringify(j.change)}; ` +
          `basic ${j.baselines.basic!.winRate}, random ${j.baselines.random!.winRate}; rounds ${j.rounds.map((x) => `v${x.version ?? '-'} ${x.status}`).join(', ')}`,
      );
      expect(r.stderr).toMatch(/training \[#{20}\] 64\/64 episodes/);
      // The agent's episode count includes the two evaluations' 400 each.
      expect(j).toMatchObject({ env: 'blackjack', episodes: 64, heldOut: 400, stats: { episodes: 64 + 2 * 400, envErrors: 0 } });
      expect(j.rounds).toHaveLength(4);
      expect(j.rounds.every((x) => x.run === 'succeeded')).toBe(true);
      // Each round was gated on the env: the candidate and its parent played 400 fresh held-out hands each.
      expect(j.rounds.every((x) => x.gate === 'env' && x.envGate?.episodes === 400)).toBe(true);
      expect(j.rounds.some((x) => x.status === 'active')).toBe(true);
      // The bar: trained beats untrained on the same hands.
      expect(j.change.meanReturnCi[0]).toBeGreaterThan(0);
      expect(j.after.winRate).toBeGreaterThan(j.before.winRate);
      // Basic strategy and random play the same 400 hands.
      expect(j.baselines.basic!.episodes).toBe(400);
      expect(j.baselines.basic!.winRate).toBeGreaterThan(j.baselines.random!.winRate);
      // Every training step was stored as a gym turn with its tokens and μ (on-policy), rated with its return.
      const core = createCore({ home: resolveHome({ REIN_HOME: path.join(j.kept, 'home') }) });
      try {
        const turns = (await core.call('listTurns', { source: 'gym', limit: 1000 }, 'cli')).items;
        expect(turns.length).toBe(j.stats.steps - (j.before.steps + j.after.steps));
        expect(turns.every((t) => t.onPolicy)).toBe(true);
        const values = core.store.stmt<{ value: number }>(`SELECT value FROM ratings WHERE rater = 'gym'`).all().map((x) => x.value);
        expect(values).toHaveLength(turns.length);
        // Blackjack's returns (γ = 1) are −1, 0 or +1, and an unreadable reply adds the penalty of −1.
        expect(values.every((v) => [-2, -1, 0, 1].includes(v))).toBe(true);
        expect((await core.call('listRuns', {}, 'cli')).length).toBe(4);
      } finally {
        core.close();
      }
    } finally {
      rmSync(j.kept, { recursive: true, force: true });
    }
  });

  it('names an env it does not know, and blackjack rules given to another env', async () => {
    const a = await runRein(['gym', 'poker'], { home: path.join(root, 'h2') });
    expect(a.code).not.toBe(0);
    expect(a.stderr).toMatch(/the env must be one of blackjack, frozen-lake, not "poker"/);
    const b = await runRein(['gym', 'frozen-lake', '--sab'], { home: path.join(root, 'h3') });
    expect(b.code).not.toBe(0);
    expect(b.stderr).toMatch(/--natural and --sab are blackjack rules/);
  });

  it('draws the progress bar and the ETA at the pace so far', () => {
    expect(progressBar(0, 10, 10)).toBe('[----------] 0/10');
    expect(progressBar(5, 10, 10)).toBe('[#####-----] 5/10');
    expect(progressBar(10, 10, 10)).toBe('[##########] 10/10');
    expect(eta(30, 3, 10)).toBe(70);
    expect(eta(0, 0, 10)).toBeNull();
  });
});
