// Data selection and the round's baseline against a real store: every pending rating trains, the gate's turns are
// older ratings that were not replayed, and the baseline is the bias-corrected EMA of the live rewards.
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
import { encodeRound, roundBaseline, selectRound } from './data.ts';

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
      const { sequences, skipped } = encodeRound(selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, gateTurns: 0, seed: 1 }), tok, opts);
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
      const { sequences, skipped } = encodeRound(turns, tok, opts);
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
      const short = encodeRound(turns, tok, { ...opts, maxTokens: 24 }).sequences[0]!;
      expect(short.tokens).toEqual(q.tokens.slice(-24));
      expect(short.mask).toEqual(q.mask.slice(-(24 - short.start)));
      expect(tok.decode(short.tokens.slice(short.start))).toContain(`${answer}<|im_end|>`);
      // An ordinary turn's mask is all ones.
      const plain = encodeRound([{ ...turns[0]!, source: 'api', context: [] }], tok, opts).sequences[0]!;
      expect(plain.mask).toEqual(plain.tokens.slice(plain.start).map(() => 1));
    } finally {
      core.close();
    }
  });
});
