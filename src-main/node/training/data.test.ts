// Data selection and the reward baseline against a real store: every pending rating trains, the gate's turns are
// older ratings that were not replayed, and each rating meets the EMA of rewards as it stood before it.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { emaFold } from '../../common/rewards.ts';
import { createCore, DEFAULT_MODEL_ID, type ReinCore } from '../core/core.ts';
import { loadTokenizer, type ReinTokenizer } from '../engine/tokenizer.ts';
import { writeTinyModel } from '../engine/tiny.ts';
import { resolveHome } from '../home.ts';
import { CLAUDE_SOURCE, createClaudeHooks } from '../integrations/claude/handler.ts';
import { readTranscriptLines } from '../integrations/claude/transcript.ts';
import { memoryLog } from '../integrations/shared/log.ts';
import { encodeRound, ratingBaselines, selectRound } from './data.ts';

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
  it('every pending rating for training, and older ratings not replayed for the gate (newest first, up to gateTurns)', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'sel') }) });
    try {
      const model = DEFAULT_MODEL_ID;
      const first = await rated(core, Array.from({ length: 32 }, (_, i) => (i % 4 === 0 ? 'good' : 'bad')), 'a');
      const one = selectRound(core.store, model, { replayRatio: 0.25, gateTurns: 64, seed: 1 });
      // A first round: all 32 pending train, nothing is replayed or held out.
      expect(one.map((t) => t.ratingId)).toEqual(first);
      expect(new Set(one.map((t) => t.role))).toEqual(new Set(['pending']));
      // Mark them trained, as a finished round does, then rate 8 more.
      const run = core.store.insertRun({ modelId: model, status: 'succeeded', trigger: 'manual', fromVersion: null }, 'system');
      core.store.write(() => {
        for (const id of first) core.store.stmt('UPDATE ratings SET run_id = ? WHERE id = ?').run(run.id, id);
      });
      const second = await rated(core, Array.from({ length: 8 }, () => 'good'), 'b');
      const two = selectRound(core.store, model, { replayRatio: 0.25, gateTurns: 10, seed: 1 });
      const by = (role: string): number[] => two.filter((t) => t.role === role).map((t) => t.ratingId);
      expect(by('pending')).toEqual(second);
      expect(by('replay')).toHaveLength(2);
      expect(by('heldout')).toHaveLength(10);
      // No rating has two roles, the held-out ones are older ratings, and they are the newest of those left.
      expect(new Set(two.map((t) => t.ratingId)).size).toBe(two.length);
      const left = first.filter((id) => !by('replay').includes(id));
      expect(by('heldout')).toEqual(left.slice(-10));
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
      expect(ratingBaselines(core.store, model)).toEqual({ before: new Map(), after: 0 });
      // An all-Good first round: every rating must meet a baseline below +1, so every advantage is positive (the
      // bias-corrected EMA over the round's own ratings met +1 and gave each of them A = 0).
      const values = Array.from({ length: 16 }, () => 'good') as ('good' | 'bad')[];
      const ids = await rated(core, values, 'c');
      const b = ratingBaselines(core.store, model);
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
        core.store.insertAdapter({ modelId: model, version, status, path: path.join(root, `v${version}`), emaValue }, 'test');
      };
      add(1, 'inactive', stored);
      add(2, 'active', null);
      await rated(core, ['bad', 'bad', 'bad', 'bad'], 'r2');
      expect(core.store.emaValue(model)).not.toBe(stored);
      await core.call('rollback', { version: 1 }, 'test');
      expect(core.store.emaValue(model)).toBe(stored);
      expect((await core.call('status', {}, 'test')).ema!.value).toBe(stored);
      const [next] = await rated(core, ['good'], 'r3');
      const b = ratingBaselines(core.store, model);
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
      const b = ratingBaselines(core.store, model);
      expect([...b.before.values()]).toEqual([0, emaFold(null, [0.5]), emaFold(null, [0.5, 0.5])]);
      expect(b.after).toBe(emaFold(null, [0.5, 0.5, -0.5]));
      const turns = selectRound(core.store, model, { replayRatio: 0, gateTurns: 0, seed: 1 });
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
  const opts = { modelId: DEFAULT_MODEL_ID, advantageClip: 2, maxTokens: 256 };
  const baselines = (core: ReinCore): { baselines: Map<number, number> } => ({ baselines: ratingBaselines(core.store, DEFAULT_MODEL_ID).before });

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
      const turns = selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, gateTurns: 0, seed: 1 });
      const { sequences, skipped } = encodeRound(turns, tok, { ...opts, ...baselines(core) });
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
      const { sequences, skipped } = encodeRound(selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, gateTurns: 0, seed: 1 }), tok, { ...opts, ...baselines(core) });
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
      const turns = selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, gateTurns: 0, seed: 1 });
      const { sequences, skipped } = encodeRound(turns, tok, { ...opts, ...baselines(core) });
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
      const short = encodeRound(turns, tok, { ...opts, ...baselines(core), maxTokens: 24 }).sequences[0]!;
      expect(short.tokens).toEqual(q.tokens.slice(-24));
      expect(short.mask).toEqual(q.mask.slice(-(24 - short.start)));
      expect(tok.decode(short.tokens.slice(short.start))).toContain(`${answer}<|im_end|>`);
      // An ordinary turn's mask is all ones.
      const plain = encodeRound([{ ...turns[0]!, source: 'api', context: [] }], tok, { ...opts, ...baselines(core) }).sequences[0]!;
      expect(plain.mask).toEqual(plain.tokens.slice(plain.start).map(() => 1));
    } finally {
      core.close();
    }
  });
});
