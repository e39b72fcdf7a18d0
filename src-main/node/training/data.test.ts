// Data selection and the reward baseline against a real store: a seeded random share of the pending ratings is held
// out for the gate, replay comes from the active lineage, and each rating meets the EMA of rewards as it stood before it.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { emaFold } from '../../common/rewards.ts';
import { createCore, DEFAULT_MODEL_ID, type ReinCore } from '../core/core.ts';
import { loadTokenizer, type ReinTokenizer } from '../engine/tokenizer.ts';
import { writeTinyModel } from '../engine/tiny.ts';
import { resolveHome } from '../home.ts';
import { CLAUDE_SOURCE } from '../../common/sources.ts';
import { createClaudeHooks } from '../integrations/claude/handler.ts';
import { readTranscriptLines } from '../integrations/claude/transcript.ts';
import { memoryLog } from '../integrations/shared/log.ts';
import { heldoutCount } from '../../common/training/estimate.ts';
import { encodeRound, lineageRuns, ratingBaselines, selectRound } from './data.ts';

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
      const one = await selectRound(core.store, model, opts);
      const by = (ts: typeof one, role: string): number[] => ts.filter((t) => t.role === role).map((t) => t.ratingId);
      expect(by(one, 'heldout')).toHaveLength(6); // round(0.2 × 32)
      expect(by(one, 'pending')).toHaveLength(26);
      expect([...by(one, 'pending'), ...by(one, 'heldout')].sort((x, y) => x - y)).toEqual(ids);
      // At random, not the newest six; the same seed gives the same split, another seed another one.
      expect(by(one, 'heldout').sort((x, y) => x - y)).not.toEqual(ids.slice(-6));
      expect(by(await selectRound(core.store, model, opts), 'heldout')).toEqual(by(one, 'heldout'));
      expect(by(await selectRound(core.store, model, { ...opts, seed: 2 }), 'heldout')).not.toEqual(by(one, 'heldout'));
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
        const run = store.runs.insert({ modelId: model, status: 'succeeded', trigger: 'manual', fromVersion: parent }, 'system');
        store.write(() => {
          for (const id of rs) store.stmt('UPDATE ratings SET run_id = ? WHERE id = ?').run(run.id, id);
          store.adapters.insert({ modelId: model, version, status, path: `/nowhere/v${version}`, runId: run.id, parentVersion: parent }, 'system');
        });
      }
      const runOf = (ids: number[]): number => store.stmt<{ run_id: number }>('SELECT run_id FROM ratings WHERE id = ?').get(ids[0])!.run_id;
      expect(lineageRuns(store, model, 3)).toEqual(new Set([runOf(a), runOf(c)]));
      expect(lineageRuns(store, model, null)).toEqual(new Set());
      // Pruning deletes v1's row (an old inactive version); v1's round still counts for v3, the rolled-back v2's not.
      const pruned = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'lineage-pruned') }) });
      try {
        const ids = [1, 2, 3].map(() => pruned.store.runs.insert({ modelId: model, status: 'succeeded', trigger: 'manual', fromVersion: null }, 'system').id);
        pruned.store.write(() => {
          ids.forEach((id, i) => pruned.store.stmt('UPDATE runs SET adapter_version = ? WHERE id = ?').run(i + 1, id));
          pruned.store.adapters.insert({ modelId: model, version: 2, status: 'rolled_back', path: '/nowhere/v2', runId: ids[1], parentVersion: 1 }, 'system');
          pruned.store.adapters.insert({ modelId: model, version: 3, status: 'active', path: '/nowhere/v3', runId: ids[2], parentVersion: 1 }, 'system');
        });
        expect(lineageRuns(pruned.store, model, 3)).toEqual(new Set([ids[0], ids[2]]));
      } finally {
        pruned.close();
      }
      const d = await rated(core, Array.from({ length: 40 }, () => 'good'), 'd');
      const turns = await selectRound(store, model, { replayRatio: 0.25, heldoutFraction: 0.2, gateTurns: 16, seed: 3, lineageRuns: lineageRuns(store, model, 3) });
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

});

// The reward baseline (ReinforceClaw): an EMA of rewards from 0, no bias correction; each rating meets the EMA as it
// stood before it. These go through the core's rate/undo/delete/rollback verbs and the store's own replay.
describe('the reward baseline', () => {
  const model = DEFAULT_MODEL_ID;

  it('each rating meets the EMA before it, in time order; the first rating ever meets 0; after is the stored EMA', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'base') }) });
    try {
      expect(await ratingBaselines(core.store, model)).toEqual({ before: new Map(), after: 0 });
      // An all-Good first round: every rating must meet a baseline below +1, so every advantage is positive (the
      // bias-corrected EMA over the round's own ratings met +1 and gave each of them A = 0).
      const values = Array.from({ length: 16 }, () => 'good') as ('good' | 'bad')[];
      const ids = await rated(core, values, 'c');
      const b = await ratingBaselines(core.store, model);
      expect(b.before.get(ids[0]!)).toBe(0);
      ids.forEach((id, i) => expect(b.before.get(id)).toBeCloseTo(1 - 0.99 ** i, 12)); // Σ 0.01·0.99^k over i ratings
      expect(b.after).toBeCloseTo(1 - 0.99 ** 16, 12);
      expect(b.after).toBe(core.store.emaValue(model));
      expect((await core.call('status', {}, 'test')).ema!.value).toBe(b.after);
      // So every advantage r − before is well above 0 (the smallest, the 16th rating's, is 0.99^15 = 0.86).
      for (const id of ids) expect(1 - b.before.get(id)!).toBeGreaterThan(0.85);
    } finally {
      core.close();
    }
  });

  it('emaTrace leaves out undone, replaced and deleted ratings, and the stored EMA is that replay', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'undo') }) });
    try {
      const [g1, bad, g2] = await rated(core, ['good', 'bad', 'good'], 'u');
      const t = core.store.emaTrace(model);
      expect([t.before.get(g1!), t.before.get(bad!), t.before.get(g2!)]).toEqual([0, emaFold(null, [1]), emaFold(null, [1, -1])]);
      const badTurn = core.store.ratingsById([bad!])[0]!.turnId;
      await core.call('undo', { turnId: badTurn }, 'test');
      const u = core.store.emaTrace(model);
      expect(u.before.has(bad!)).toBe(false);
      expect(u.before.get(g2!)).toBe(emaFold(null, [1]));
      expect(u.value).toBe(emaFold(null, [1, 1]));
      expect(core.store.emaValue(model)).toBe(u.value);
      // skip: the replay as if a rating had never been made, without changing anything.
      expect(core.store.emaTrace(model, { skip: [g1!] }).before.get(g2!)).toBe(0);
      expect(core.store.emaValue(model)).toBe(u.value);
      await core.call('deleteRating', { ratingId: g1! }, 'test');
      const d = core.store.emaTrace(model);
      expect([...d.before]).toEqual([[g2!, 0]]);
      expect(core.store.emaValue(model)).toBe(emaFold(null, [1]));
    } finally {
      core.close();
    }
  });

  it('a rollback restores the stored baseline of the version it makes active, and later ratings meet the EMA from there', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'rollback') }) });
    try {
      await rated(core, ['good', 'good', 'bad'], 'r1');
      const stored = core.store.emaValue(model)!;
      const add = (version: number, status: 'active' | 'inactive', emaValue: number | null): void => {
        core.store.adapters.insert({ modelId: model, version, status, path: path.join(root, `v${version}`), emaValue }, 'test');
      };
      add(1, 'inactive', stored);
      add(2, 'active', null);
      await rated(core, ['bad', 'bad', 'bad', 'bad'], 'r2');
      expect(core.store.emaValue(model)).not.toBe(stored);
      await core.call('rollback', { version: 1 }, 'test');
      expect(core.store.emaValue(model)).toBe(stored);
      expect((await core.call('status', {}, 'test')).ema!.value).toBe(stored);
      const [next] = await rated(core, ['good'], 'r3');
      const b = await ratingBaselines(core.store, model);
      expect(b.before.get(next!)).toBe(stored);
      expect(b.after).toBe(emaFold(stored, [1]));
      expect(core.store.emaValue(model)).toBe(b.after);
    } finally {
      core.close();
    }
  });

  it('follows the reward mapper when one is set, so the baseline uses the rewards the round trains on', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'mapper') }) });
    try {
      const ids = await rated(core, ['good', 'good', 'bad'], 'm');
      await core.call('setSettings', { values: { 'training.rewardMapper': '(rating) => rating.reward / 2' } }, 'test');
      const b = await ratingBaselines(core.store, model);
      expect([...b.before.values()]).toEqual([0, emaFold(null, [0.5]), emaFold(null, [0.5, 0.5])]);
      expect(b.after).toBe(emaFold(null, [0.5, 0.5, -0.5]));
      const turns = await selectRound(core.store, model, { replayRatio: 0, heldoutFraction: 0, gateTurns: 0, seed: 1, lineageRuns: new Set() });
      expect(turns.map((t) => [t.ratingId, t.reward])).toEqual([[ids[0], 0.5], [ids[1], 0.5], [ids[2], -0.5]]);
    } finally {
      core.close();
    }
  });
});

describe('a round encodes', () => {
  const modelDir = path.join(root, 'tiny');
  writeTinyModel(modelDir, { arch: 'qwen2', layers: 1, hidden: 16, heads: 2, kvHeads: 1, intermediate: 32 });
  const tok: ReinTokenizer = loadTokenizer(modelDir);
  const opts = { modelId: DEFAULT_MODEL_ID, baseWeights: null, advantageClip: 2, maxTokens: 256 };
  const baselines = async (core: ReinCore): Promise<{ baselines: Map<number, number> }> => ({ baselines: (await ratingBaselines(core.store, DEFAULT_MODEL_ID)).before });

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
        // An agent's steps were sampled by the agent, whatever tokens the turn stores for its answer.
        [
          'an agent turn with steps',
          { source: CLAUDE_SOURCE, context: [{ role: 'assistant', type: 'tool_use', name: 'Read', content: '{}' }, { role: 'tool', content: 'x' }], tokens: response, logprobs: mu, policy },
          'kto',
        ],
      ];
      for (const [name, extra] of cases) {
        const { turn } = await core.call('captureTurn', { source: 'proxy', eventId: name, prompt: 'Write it.', response: 'Sure, here it is.', ...extra }, 'test');
        await core.call('rate', { turnId: turn!.id, value: 'good' }, 'test');
      }
      const turns = await selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, heldoutFraction: 0, gateTurns: 0, seed: 1, lineageRuns: new Set() });
      const { sequences, skipped } = encodeRound(turns, tok, { ...opts, ...(await baselines(core)) });
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
      const { sequences, skipped } = encodeRound(await selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, heldoutFraction: 0, gateTurns: 0, seed: 1, lineageRuns: new Set() }), tok, { ...opts, ...(await baselines(core)) });
      expect(skipped).toEqual([{ ratingId: ra.rating.id, turnId: a.turn!.id, why: expect.stringMatching(new RegExp(`id ${tok.size + 7}, outside the vocabulary \\(size ${tok.size}\\)`)) as unknown }]);
      expect(sequences.map((q) => [q.ratingId, q.kind])).toEqual([[rb.rating.id, 'mispo']]);
    } finally {
      core.close();
    }
  });

  it('a Claude tool turn in the order it happened: prompt, then its tool call, the tool result and the answer, with only the result masked', async () => {
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
      const turns = await selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, heldoutFraction: 0, gateTurns: 0, seed: 1, lineageRuns: new Set() });
      const { sequences, skipped } = encodeRound(turns, tok, { ...opts, ...(await baselines(core)) });
      expect(skipped).toEqual([]);
      expect(sequences).toHaveLength(1);
      const q = sequences[0]!;
      // Claude's steps were not sampled by our model: text, with KTO.
      expect(q.kind).toBe('kto');
      const prompt = payloads['user-prompt-submit']!.prompt as string;
      // The prompt is the human prompt alone, rendered up to the assistant header.
      expect(tok.decode(q.tokens.slice(0, q.start))).toBe(`<|im_start|>user\n${prompt}<|im_end|>\n<|im_start|>assistant\n`);
      const resp = q.tokens.slice(q.start);
      expect(q.mask).toHaveLength(resp.length);
      const text = tok.decode(resp);
      const answer = (payloads.stop!.last_assistant_message as string).trim();
      // Then the tool call, its result, then the answer, in that order.
      const at = ['<tool_call>', 'echo rein-e2e-tool-output', '<tool_response>\nrein-e2e-tool-output', answer].map((x) => text.indexOf(x));
      expect(at.every((i) => i >= 0), text).toBe(true);
      expect(at).toEqual([...at].sort((x, y) => x - y));
      // Mask: 1 on the call through its end-of-turn token, 0 on the tool result in its wrapper (and the next
      // assistant header), 1 on the answer through its end-of-turn token.
      const runs: { m: number; text: string }[] = [];
      resp.forEach((id, i) => {
        if (runs.at(-1)?.m !== q.mask[i]) runs.push({ m: q.mask[i]!, text: '' });
        runs.at(-1)!.text += tok.decode([id]);
      });
      expect(runs.map((r) => r.m)).toEqual([1, 0, 1]);
      expect(runs[0]!.text).toBe('<tool_call>\n{"name": "Bash", "arguments": {"command": "echo rein-e2e-tool-output", "description": "Echo a marker"}}\n</tool_call><|im_end|>');
      expect(runs[1]!.text).toBe('\n<|im_start|>user\n<tool_response>\nrein-e2e-tool-output\n</tool_response><|im_end|>\n<|im_start|>assistant\n');
      expect(runs[2]!.text).toBe(`<think>\n\n</think>\n\n${answer}<|im_end|>`);
      // Over the length budget, the turn keeps its end: the answer, and as much of the steps before it as fits.
      const short = encodeRound(turns, tok, { ...opts, ...(await baselines(core)), maxTokens: 24 }).sequences[0]!;
      expect(short.tokens).toEqual(q.tokens.slice(-24));
      expect(short.mask).toEqual(q.mask.slice(-(24 - short.start)));
      expect(tok.decode(short.tokens.slice(short.start))).toContain(`${answer}<|im_end|>`);
      // An ordinary turn's mask is all ones.
      const plain = encodeRound([{ ...turns[0]!, source: 'api', context: [] }], tok, { ...opts, ...(await baselines(core)) }).sequences[0]!;
      expect(plain.mask).toEqual(plain.tokens.slice(plain.start).map(() => 1));
    } finally {
      core.close();
    }
  });
});
