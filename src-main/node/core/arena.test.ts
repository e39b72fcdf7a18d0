// The chat and the arena through the core on the small LM (the real demo model, Rein's own model server behind the
// capture proxy, the balanced preset as every model gets it):
//   - a chat answer streams as chatToken events and is stored on-policy with its tokens, μ and version;
//   - a version the style rule prefers wins the arena against its parent: one real round of 32 chat answers rated by
//     the "ends with a question" rule (as bench/learning.ts and `rein demo` do), then 64 blind arena matches on the
//     held-out prompts with the rule as the judge (it sees only the two texts, in the coin-flip order); the win rate
//     of the new version against its parent must have its Wilson 95% lower bound above 0.5.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ArenaVote } from '../../common/chat/arena.ts';
import { resolveHome } from '../home.ts';
import { styleRule } from '../demo/corpus.ts';
import { HELD_OUT_PROMPTS, TRAINING_PROMPTS } from '../demo/learning.ts';
import { SMALL_LM_DIR } from '../demo/small-lm.ts';
import { composeCore } from '../compose.ts';
import type { ReinCore } from './core.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'rein-arena-test-'));
let core: ReinCore;
const rule = styleRule('question');
const MAX_TOKENS = 96;

beforeAll(async () => {
  core = composeCore({ home: resolveHome({ REIN_HOME: dir }) });
  await core.call('setSettings', { values: { 'model.active': SMALL_LM_DIR, 'training.auto': false, 'training.preset': 'balanced', 'proxy.upstream': null } }, 'test');
});
afterAll(async () => {
  await core.stopChat();
  core.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('chat and arena on the small LM', () => {
  it('streams a chat answer as chatToken events and stores it on-policy with its tokens, μ and version', { timeout: 120_000 }, async () => {
    // The small LM now and then samples its end-of-turn first: an empty answer, streamed as no piece, is stored like
    // any other. Asked again until an answer runs to more than one piece; every answer is checked.
    let pieces: string[] = [];
    for (let attempt = 1; attempt <= 5 && pieces.length <= 1; attempt++) {
      const streamId = `s${attempt}`;
      pieces = [];
      const off = core.on('chatToken', (e) => {
        if (e.streamId === streamId) pieces.push(e.text);
      });
      const a = await core.call('chat', { messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: TRAINING_PROMPTS[0]! }], streamId, maxTokens: 48 }, 'test');
      off();
      expect(pieces.join('')).toBe(a.text);
      expect(a).toMatchObject({ version: 0, onPolicy: true, note: null });
      const t = await core.call('getTurn', { turnId: a.turnId! }, 'test');
      expect(t.source).toBe('chat');
      expect(t.response).toBe(a.text);
      expect(t.adapterVersion).toBe(0);
      expect(t.tokens!.length).toBe(t.logprobs!.length);
      expect(t.tokens!.length).toBeGreaterThan(0);
      expect(t.context).toEqual([{ role: 'system', content: 'You are terse.' }]);
    }
    expect(pieces.length).toBeGreaterThan(1);
    // No trained version yet: the arena says so instead of comparing the base with itself.
    await expect(core.call('arenaStart', { prompt: 'hi' }, 'test')).rejects.toThrow(/no trained version is active/);
  });

  it('a version the rule prefers wins the blind arena against its parent, Wilson 95% lower bound above 0.5', { timeout: 900_000 }, async () => {
    const t0 = performance.now();
    let good = 0;
    for (let i = 0; i < 32; i++) {
      const a = await core.call('chat', { messages: [{ role: 'user', content: TRAINING_PROMPTS[(i * 7) % TRAINING_PROMPTS.length]! }], maxTokens: MAX_TOKENS }, 'test');
      const ok = rule(a.text);
      good += Number(ok);
      await core.call('rate', { turnId: a.turnId!, value: ok ? 'good' : 'bad', rater: 'rule' }, 'test');
    }
    const { runId } = await core.call('startTraining', {}, 'test');
    await core.scheduler.idle();
    const run = (await core.call('listRuns', {}, 'test')).find((r) => r.id === runId)!;
    const v1 = (await core.call('listAdapters', {}, 'test')).find((a) => a.version === run.adapterVersion);
    expect(v1?.status, `run ${run.status}: ${JSON.stringify(run.error)} ${v1?.reason ?? ''}`).toBe('active');
    const trained = performance.now();

    const tally: Record<ArenaVote, number> = { a: 0, b: 0, tie: 0, bad: 0 };
    let v1First = 0;
    for (const prompt of HELD_OUT_PROMPTS.slice(0, 64)) {
      const m = await core.call('arenaStart', { prompt, maxTokens: MAX_TOKENS }, 'test');
      expect(m.a.version).toBeNull();
      const [ra, rb] = [rule(m.a.text), rule(m.b.text)];
      const vote: ArenaVote = ra && !rb ? 'a' : rb && !ra ? 'b' : ra ? 'tie' : 'bad';
      tally[vote]++;
      const voted = await core.call('arenaVote', { matchId: m.id, vote, rater: 'rule' }, 'test');
      expect(new Set([voted.match.a.version, voted.match.b.version])).toEqual(new Set([1, 0]));
      v1First += Number(voted.match.a.version === 1);
    }
    const stats = await core.call('versionStats', {}, 'test');
    const s1 = stats.find((s) => s.version === 1)!;
    const w = s1.vsParent!;
    console.log(
      `arena v1 vs parent v${w.opponent}: ${w.wins} wins, ${w.losses} losses, ${w.ties} ties, ${w.bothBad} both bad; win rate ${w.winRate.rate.toFixed(2)} [${w.winRate.ci[0].toFixed(2)}, ${w.winRate.ci[1].toFixed(2)}]; ` +
        `training answers ${good}/32 good; votes a ${tally.a} b ${tally.b}; v1 shown as A in ${v1First} of 64; round ${((trained - t0) / 1000).toFixed(0)} s, arena ${((performance.now() - trained) / 1000).toFixed(0)} s`,
    );
    expect(w.votes).toBe(64);
    expect(w.winRate.ci[0]).toBeGreaterThan(0.5);
    // v1's parent is the base: the same record shows against the base.
    expect(s1.vsBase!.wins).toBe(w.wins);
    // Each decisive or both-bad vote rated both sides; a tie rated neither.
    const arenaRatings = (await core.call('listRatings', { limit: 1000 }, 'test')).items.filter((r) => r.rater === 'arena');
    expect(arenaRatings).toHaveLength(2 * (64 - w.ties));
  });
});
