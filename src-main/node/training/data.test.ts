// Data selection and the round's baseline against a real store: a seeded random share of the pending ratings is held
// out for the gate, replay comes from the active lineage, and the baseline is the bias-corrected EMA of the rewards.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { emaFold } from '../../common/rewards.ts';
import { createCore, DEFAULT_MODEL_ID, type ReinCore } from '../core/core.ts';
import { loadTokenizer, type ReinTokenizer } from '../engine/tokenizer.ts';
import { writeTinyModel } from '../engine/tiny.ts';
import { resolveHome } from '../home.ts';
import { createClaudeHooks } from '../integrations/claude/handler.ts';
import { readTranscriptLines } from '../integrations/claude/transcript.ts';
import { memoryLog } from '../integrations/shared/log.ts';
import { encodeRound, heldoutCount, lineageRuns, roundBaseline, selectRound } from './data.ts';

const root = mkdtempSync(path.join(os.tmpdir(), 'rein-data-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function rated(core: ReinCore, values: ('good' | 'bad')[], tag: string): Promise<number[]> {
  const ids: number[] = [];
  for (const [i, value] of values.entries()) {
    const { turn } = await core.call('captureTurn', { source: 'api', eventId: `${tag}-${i}`, prompt: `p${i}`, response: `r${i}` }, 'test');
    ids.push((await core.call('rate', { turnId: turn!.id, value }, 'test')).rating.id);
  }
  return ids;
}

describe('a round selects', () => {
  it('a seeded random 20% of the pending ratings to hold out (still pending), the rest to train, and ≥ 1 of each', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'sel') }) });
    try {
      const model = DEFAULT_MODEL_ID;
      const ids = await rated(core, Array.from({ length: 32 }, (_, i) => (i % 4 === 0 ? 'good' : 'bad')), 'a');
      const opts = { replayRatio: 0.25, heldoutFraction: 0.2, gateTurns: 64, seed: 1, lineageRuns: new Set<number>() };
      const one = selectRound(core.store, model, opts);
      const by = (ts: typeof one, role: string): number[] => ts.filter((t) => t.role === role).map((t) => t.ratingId);
      expect(by(one, 'heldout')).toHaveLength(6); // round(0.2 × 32)
      expect(by(one, 'pending')).toHaveLength(26);
      expect([...by(one, 'pending'), ...by(one, 'heldout')].sort((x, y) => x - y)).toEqual(ids);
      // At random, not the newest six; the same seed gives the same split, another seed another one.
      expect(by(one, 'heldout').sort((x, y) => x - y)).not.toEqual(ids.slice(-6));
      expect(by(selectRound(core.store, model, opts), 'heldout')).toEqual(by(one, 'heldout'));
      expect(by(selectRound(core.store, model, { ...opts, seed: 2 }), 'heldout')).not.toEqual(by(one, 'heldout'));
      // Selecting marks nothing: every rating is still pending.
      expect(core.store.counts(model).pending).toBe(32);
      expect([0, 1, 2, 3, 5, 200].map((n) => heldoutCount(n, 0.2))).toEqual([0, 0, 1, 1, 1, 40]);
    } finally {
      core.close();
    }
  });

  it('replay only from the runs of the active lineage; ratings no version of it trained on join the held-out set', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'lineage') }) });
    try {
      const model = DEFAULT_MODEL_ID;
      const store = core.store;
      // v1 (run 1) trained a; v2 (run 2, parent v1) trained b and was rolled back; v3 (run 3, parent v1) trained c.
      const a = await rated(core, Array.from({ length: 8 }, () => 'good'), 'a');
      const b = await rated(core, Array.from({ length: 8 }, () => 'bad'), 'b');
      const c = await rated(core, Array.from({ length: 8 }, () => 'good'), 'c');
      const versions: [number[], number, number | null, 'inactive' | 'rolled_back' | 'active'][] = [
        [a, 1, null, 'inactive'],
        [b, 2, 1, 'rolled_back'],
        [c, 3, 1, 'active'],
      ];
      for (const [rs, version, parent, status] of versions) {
        const run = store.insertRun({ modelId: model, status: 'succeeded', trigger: 'manual', fromVersion: parent }, 'system');
        store.write(() => {
          for (const id of rs) store.stmt('UPDATE ratings SET run_id = ? WHERE id = ?').run(run.id, id);
          store.insertAdapter({ modelId: model, version, status, path: `/nowhere/v${version}`, runId: run.id, parentVersion: parent }, 'system');
        });
      }
      const runOf = (ids: number[]): number => store.stmt<{ run_id: number }>('SELECT run_id FROM ratings WHERE id = ?').get(ids[0])!.run_id;
      expect(lineageRuns(store, model, 3)).toEqual(new Set([runOf(a), runOf(c)]));
      expect(lineageRuns(store, model, null)).toEqual(new Set());
      // Pruning deletes v1's row (an old inactive version); v1's round still counts for v3, the rolled-back v2's not.
      const pruned = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'lineage-pruned') }) });
      try {
        const ids = [1, 2, 3].map(() => pruned.store.insertRun({ modelId: model, status: 'succeeded', trigger: 'manual', fromVersion: null }, 'system').id);
        pruned.store.write(() => {
          ids.forEach((id, i) => pruned.store.stmt('UPDATE runs SET adapter_version = ? WHERE id = ?').run(i + 1, id));
          pruned.store.insertAdapter({ modelId: model, version: 2, status: 'rolled_back', path: '/nowhere/v2', runId: ids[1], parentVersion: 1 }, 'system');
          pruned.store.insertAdapter({ modelId: model, version: 3, status: 'active', path: '/nowhere/v3', runId: ids[2], parentVersion: 1 }, 'system');
        });
        expect(lineageRuns(pruned.store, model, 3)).toEqual(new Set([ids[0], ids[2]]));
      } finally {
        pruned.close();
      }
      const d = await rated(core, Array.from({ length: 40 }, () => 'good'), 'd');
      const turns = selectRound(store, model, { replayRatio: 0.25, heldoutFraction: 0.2, gateTurns: 16, seed: 3, lineageRuns: lineageRuns(store, model, 3) });
      const by = (role: string): number[] => turns.filter((t) => t.role === role).map((t) => t.ratingId);
      expect(by('pending')).toHaveLength(32);
      expect(by('replay')).toHaveLength(8);
      expect(by('replay').every((id) => a.includes(id) || c.includes(id))).toBe(true);
      // Held out: 8 of the 40 pending, and all 8 of the rolled-back v2's ratings (unseen by v3 and its parent).
      expect(by('heldout').filter((id) => d.includes(id))).toHaveLength(8);
      expect(by('heldout').filter((id) => !d.includes(id)).sort((x, y) => x - y)).toEqual(b);
      expect(new Set(turns.map((t) => t.ratingId)).size).toBe(turns.length);
    } finally {
      core.close();
    }
  });

  it('a baseline that weighs all ratings, where the stored EMA is mostly the first one', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'base') }) });
    try {
      const model = DEFAULT_MODEL_ID;
      expect(roundBaseline(core.store, model)).toBeNull();
      // A good first rating, then 31 bad ones: the stored EMA is seeded at +1 and is still 0.46; the mean is -0.94.
      const values = ['good', ...Array.from({ length: 31 }, () => 'bad')] as ('good' | 'bad')[];
      await rated(core, values, 'c');
      const rewards = values.map((v) => (v === 'good' ? 1 : -1));
      expect(core.store.emaValue(model)).toBeCloseTo(emaFold(null, rewards)!, 12);
      expect(core.store.emaValue(model)).toBeGreaterThan(0.4);
      const b = roundBaseline(core.store, model)!;
      // Σ 0.01·0.99^(32−i)·r_i / (1 − 0.99^32), by hand.
      let num = 0;
      rewards.forEach((r, i) => (num += 0.01 * 0.99 ** (rewards.length - 1 - i) * r));
      expect(b).toBeCloseTo(num / (1 - 0.99 ** 32), 12);
      expect(b).toBeLessThan(-0.85);
      // One rating: the baseline is that reward, as the stored EMA's seed is.
      const solo = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'solo') }) });
      try {
        await rated(solo, ['bad'], 'd');
        expect(roundBaseline(solo.store, model)).toBeCloseTo(-1, 12);
      } finally {
        solo.close();
      }
    } finally {
      core.close();
    }
  });
});

describe('a round encodes', () => {
  const modelDir = path.join(root, 'tiny');
  writeTinyModel(modelDir, { arch: 'qwen2', layers: 1, hidden: 16, heads: 2, kvHeads: 1, intermediate: 32 });
  const tok: ReinTokenizer = loadTokenizer(modelDir);
  const opts = { modelId: DEFAULT_MODEL_ID, baseline: 0, advantageClip: 2, maxTokens: 256 };

  it('on-policy (MIS-PO) only a turn whose μ names the trained model and its sampling, with its whole prompt; the rest is text (KTO)', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'honest') }) });
    try {
      const response = tok.encode('Sure, here it is.');
      const mu = response.map(() => -0.5);
      const policy = { modelId: DEFAULT_MODEL_ID, temperature: 0.7, topP: 0.9 };
      const cases: [string, Record<string, unknown>, string][] = [
        ['honest', { tokens: response, logprobs: mu, policy }, 'mispo'],
        ['no policy (a row from before migration 0002)', { tokens: response, logprobs: mu }, 'kto'],
        ['another model', { tokens: response, logprobs: mu, policy: { ...policy, modelId: '/models/other' } }, 'kto'],
        ['a prompt that must be cut', { prompt: 'word '.repeat(400), tokens: response, logprobs: mu, policy }, 'kto'],
      ];
      for (const [name, extra] of cases) {
        const { turn } = await core.call('captureTurn', { source: 'proxy', eventId: name, prompt: 'Write it.', response: 'Sure, here it is.', ...extra }, 'test');
        await core.call('rate', { turnId: turn!.id, value: 'good' }, 'test');
      }
      const turns = selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, heldoutFraction: 0, gateTurns: 0, seed: 1, lineageRuns: new Set() });
      const { sequences, skipped } = encodeRound(turns, tok, opts);
      expect(skipped).toEqual([]);
      expect(sequences.map((q) => q.kind)).toEqual(cases.map((c) => c[2]));
      // The cut prompt still trains, as text within the budget.
      expect(sequences[3]!.tokens.length).toBeLessThanOrEqual(opts.maxTokens);
      expect(Array.from(sequences[0]!.mu!)).toEqual(mu);
    } finally {
      core.close();
    }
  });

  it('skips a turn with a token id outside the vocabulary, with its reason, and encodes the others', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'oov') }) });
    try {
      const policy = { modelId: DEFAULT_MODEL_ID, temperature: 1, topP: 1 };
      const good = tok.encode('fine');
      const a = await core.call('captureTurn', { source: 'proxy', eventId: 'oov', prompt: 'p', response: 'x', tokens: [tok.size + 7], logprobs: [-1], policy }, 'test');
      const b = await core.call('captureTurn', { source: 'proxy', eventId: 'ok', prompt: 'p', response: 'fine', tokens: good, logprobs: good.map(() => -1), policy }, 'test');
      const ra = await core.call('rate', { turnId: a.turn!.id, value: 'bad' }, 'test');
      const rb = await core.call('rate', { turnId: b.turn!.id, value: 'good' }, 'test');
      const { sequences, skipped } = encodeRound(selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, heldoutFraction: 0, gateTurns: 0, seed: 1, lineageRuns: new Set() }), tok, opts);
      expect(skipped).toEqual([{ ratingId: ra.rating.id, turnId: a.turn!.id, why: expect.stringMatching(new RegExp(`id ${tok.size + 7}, outside the vocabulary \\(size ${tok.size}\\)`)) as unknown }]);
      expect(sequences.map((q) => [q.ratingId, q.kind])).toEqual([[rb.rating.id, 'mispo']]);
    } finally {
      core.close();
    }
  });

  it('a Claude tool turn in the order it happened: prompt, its tool call, the tool result, then the answer, which alone trains', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'claude') }) });
    try {
      // The real Claude Code 2.1.330 run (integrations/fixtures/claude: its hook payloads and transcript), captured
      // through the real hooks.
      const fix = path.join(import.meta.dirname, '../integrations/fixtures/claude');
      const payloads = JSON.parse(readFileSync(path.join(fix, 'payloads.json'), 'utf8')) as Record<string, Record<string, unknown>>;
      const hooks = createClaudeHooks(core, { log: memoryLog(), readTranscript: () => readTranscriptLines(path.join(fix, 'tool-turn.jsonl')) });
      await hooks.handle(payloads['user-prompt-submit']);
      await hooks.handle(payloads.stop);
      const page = await core.call('listTurns', {}, 'test');
      expect(page.total).toBe(1);
      await core.call('rate', { turnId: page.items[0]!.id, value: 'good' }, 'test');
      const turns = selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, heldoutFraction: 0, gateTurns: 0, seed: 1, lineageRuns: new Set() });
      const { sequences, skipped } = encodeRound(turns, tok, opts);
      expect(skipped).toEqual([]);
      expect(sequences).toHaveLength(1);
      const q = sequences[0]!;
      expect(q.kind).toBe('kto');
      const before = tok.decode(q.tokens.slice(0, q.start));
      const prompt = payloads['user-prompt-submit']!.prompt as string;
      const at = [prompt, 'echo rein-e2e-tool-output', '\nrein-e2e-tool-output'].map((x) => before.indexOf(x));
      expect(at.every((i) => i >= 0), before).toBe(true);
      expect(at).toEqual([...at].sort((x, y) => x - y));
      // The trained part is the final answer (after the template's empty think block), and it is not in the context.
      const answer = (payloads.stop!.last_assistant_message as string).trim();
      expect(tok.decode(q.tokens.slice(q.start), { skipSpecialTokens: true }).trim().endsWith(answer)).toBe(true);
      expect(before).not.toContain(answer);
    } finally {
      core.close();
    }
  });
});
