// Data selection and the reward baseline against a real store: a seeded random share of the pending ratings is held
// out for the gate, replay comes from the active lineage, and each on-policy rating meets the mean reward of the
// round's other on-policy ratings. The EMA of rewards (the running average the UI shows) is the store's replay.
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
import { encodeRound, lineageRuns, selectRound } from './data.ts';

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

  it('a rating held out by an earlier round is never held out again: it trains in the next round', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'once') }) });
    try {
      const ids = await rated(core, Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? 'good' : 'bad')), 'o');
      const opts = { replayRatio: 0, heldoutFraction: 0.5, gateTurns: 0, lineageRuns: new Set<number>() };
      // An earlier round (rejected or not: the ratings are still pending) held out the first four.
      const run = core.store.runs.insert({ modelId: DEFAULT_MODEL_ID, status: 'succeeded', trigger: 'manual', fromVersion: null }, 'system');
      for (const id of ids.slice(0, 4)) core.store.runs.recordSample(run.id, id, 'heldout', null);
      for (let seed = 1; seed <= 20; seed++) {
        const turns = await selectRound(core.store, DEFAULT_MODEL_ID, { ...opts, seed });
        const held = turns.filter((t) => t.role === 'heldout').map((t) => t.ratingId);
        expect(held.filter((id) => ids.slice(0, 4).includes(id))).toEqual([]);
        // round(0.5 × 10) = 5 would be held out; 6 have never been, and each sign keeps one to train: 4.
        expect(held).toHaveLength(4);
      }
    } finally {
      core.close();
    }
  });

  it('stratified by the sign of the reward: each sign holds out its share, and never all of its ratings', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'strata') }) });
    try {
      // 8 Good of 32: the held-out 6 are 2 Good and 4 Bad (6 × 8/32 = 1.5 and 4.5, the remainder to the larger
      // fraction, ties to Good) whatever the seed. A lone Good rating among 9 Bad always trains: a random split held
      // it out in 1 run of 10, leaving a round with no contrast to learn from.
      const eight = await rated(core, Array.from({ length: 32 }, (_, i) => (i % 4 === 0 ? 'good' : 'bad')), 's');
      const good = new Set(eight.filter((_, i) => i % 4 === 0));
      for (let seed = 1; seed <= 50; seed++) {
        const held = (await selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, heldoutFraction: 0.2, gateTurns: 0, seed, lineageRuns: new Set() })).filter((t) => t.role === 'heldout');
        expect(held.filter((t) => good.has(t.ratingId)).length).toBe(2);
        expect(held.length).toBe(6);
      }
    } finally {
      core.close();
    }
    const lone = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'lone') }) });
    try {
      const ids = await rated(lone, ['good', ...Array.from({ length: 9 }, () => 'bad' as const)], 'l');
      for (let seed = 1; seed <= 50; seed++) {
        const turns = await selectRound(lone.store, DEFAULT_MODEL_ID, { replayRatio: 0, heldoutFraction: 0.2, gateTurns: 0, seed, lineageRuns: new Set() });
        expect(turns.find((t) => t.ratingId === ids[0])!.role).toBe('pending');
        expect(turns.filter((t) => t.role === 'heldout')).toHaveLength(2);
      }
    } finally {
      lone.close();
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

// The EMA of rewards (ReinforceClaw's: from 0, no bias correction), the running average the UI charts and a rollback
// restores. These go through the core's rate/undo/delete/rollback verbs and the store's own replay.
describe('the EMA of rewards', () => {
  const model = DEFAULT_MODEL_ID;

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
      const b = core.store.emaTrace(model);
      expect(b.before.get(next!)).toBe(stored);
      expect(b.value).toBe(emaFold(stored, [1]));
      expect(core.store.emaValue(model)).toBe(b.value);
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

  it('on-policy (MIS-PO) only a turn whose μ names the trained model and its sampling, with its whole prompt; the rest is text (KTO)', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'honest') }) });
    try {
      const response = tok.encode('Sure, here it is.');
      const mu = response.map(() => -0.5);
      const policy = { modelId: DEFAULT_MODEL_ID, temperature: 1, topP: 1 };
      const cases: [string, Record<string, unknown>, string][] = [
        ['honest', { tokens: response, logprobs: mu, policy }, 'mispo'],
        // The model's answers, but not draws from π (the model at temperature 1, untruncated): see samplingReason.
        ['another temperature', { tokens: response, logprobs: mu, policy: { ...policy, temperature: 0.7 } }, 'kto'],
        ['a top-p cut', { tokens: response, logprobs: mu, policy: { ...policy, topP: 0.9 } }, 'kto'],
        ['greedy', { tokens: response, logprobs: response.map(() => 0), policy: { ...policy, temperature: 0 } }, 'kto'],
        ['no policy (a row from before migration 0002)', { tokens: response, logprobs: mu }, 'kto'],
        ['another model', { tokens: response, logprobs: mu, policy: { ...policy, modelId: '/models/other' } }, 'kto'],
        ['a prompt that must be cut', { prompt: 'word '.repeat(400), tokens: response, logprobs: mu, policy }, 'kto'],
        // An agent turn without the ids the server consumed: the context its answer was sampled in is not known.
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
      const { sequences, skipped } = encodeRound(turns, tok, opts);
      expect(skipped).toEqual([]);
      expect(sequences.map((q) => q.kind)).toEqual(cases.map((c) => c[2]));
      expect(sequences[1]!.why).toMatch(/temperature 0\.7, not 1/);
      expect(sequences[2]!.why).toMatch(/top_p 0\.9: μ is 0 outside the nucleus/);
      expect(sequences[3]!.why).toMatch(/decoded greedily/);
      // The cut prompt still trains, as text within the budget.
      expect(sequences[6]!.tokens.length).toBeLessThanOrEqual(opts.maxTokens);
      expect(Array.from(sequences[0]!.mu!)).toEqual(mu);
    } finally {
      core.close();
    }
  });

  it("an agent turn with the server's prompt ids: MIS-PO under exactly them; KTO with its reason when they do not fit, are missing, or came from other weights", async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'exact') }) });
    try {
      const reply = tok.encode('Done: both files listed.');
      const mu = reply.map(() => -0.25);
      const weights = 'a'.repeat(64);
      const policy = { modelId: DEFAULT_MODEL_ID, temperature: 1, topP: 1, weights };
      // A system prompt, tools and history the turn's text does not keep: 300 ids the server consumed.
      const context = tok.encode('<|im_start|>system\n' + 'Use the tools. '.repeat(120)).slice(0, 300);
      const steps = [{ role: 'assistant', type: 'tool_use', name: 'Bash', content: '{"command":"ls"}' }, { role: 'tool', type: 'tool_result', content: 'a.txt' }];
      const cases: [string, Record<string, unknown>][] = [
        ['with ids', { promptIds: context, policy }],
        ['without ids', { policy }],
        ['other weights', { promptIds: context, policy: { ...policy, weights: 'b'.repeat(64) } }],
      ];
      for (const [name, extra] of cases) {
        const { turn } = await core.call('captureTurn', { source: CLAUDE_SOURCE, eventId: name, prompt: 'list the files', context: steps, response: 'Done: both files listed.', tokens: reply, logprobs: mu, ...extra }, 'test');
        await core.call('rate', { turnId: turn!.id, value: 'good' }, 'test');
      }
      const turns = await selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, heldoutFraction: 0, gateTurns: 0, seed: 1, lineageRuns: new Set() });
      const fits = encodeRound(turns, tok, { ...opts, baseWeights: weights, maxTokens: 512 });
      expect(fits.skipped).toEqual([]);
      expect(fits.sequences.map((q) => [q.kind, q.why ?? null])).toEqual([
        ['mispo', null],
        ['kto', "the model server's prompt ids (the agent's system prompt, tools and history) are not stored with the turn"],
        ['kto', expect.stringMatching(/^sampled from other weights than the training base's/)],
      ]);
      const q = fits.sequences[0]!;
      expect(q.tokens).toEqual([...context, ...reply]);
      expect(q.start).toBe(context.length);
      expect(Array.from(q.mu!)).toEqual(mu);
      // 300 context ids and the reply over a 256-token limit: KTO, its reply after the last ids of the context.
      const long = encodeRound(turns.slice(0, 1), tok, { ...opts, baseWeights: weights, maxTokens: 256 }).sequences[0]!;
      expect(long.kind).toBe('kto');
      expect(long.why).toBe(`its exact context (300 tokens) and reply (${reply.length}) are longer than the training sequence limit of 256 tokens (training maxTokens)`);
      expect(long.tokens).toEqual([...context, ...reply].slice(-256));
      expect(long.start).toBe(256 - reply.length);
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
      const { sequences, skipped } = encodeRound(await selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, heldoutFraction: 0, gateTurns: 0, seed: 1, lineageRuns: new Set() }), tok, opts);
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

// The reward baseline the round subtracts (common/rewards.ts roundBaselines), through selectRound and encodeRound on
// turns captured with their tokens and μ: each trained on-policy rating meets the mean reward of the others.
describe('the reward baseline', () => {
  const modelDir = path.join(root, 'tiny-baseline');
  writeTinyModel(modelDir, { arch: 'qwen2', layers: 1, hidden: 16, heads: 2, kvHeads: 1, intermediate: 32 });
  const tok: ReinTokenizer = loadTokenizer(modelDir);
  const opts = { modelId: DEFAULT_MODEL_ID, baseWeights: null, advantageClip: 2, maxTokens: 256 };
  const policy = { modelId: DEFAULT_MODEL_ID, temperature: 1, topP: 1 };

  /** Captures on-policy turns (tokens, μ and the policy they were sampled with) and rates them; returns the rating ids. */
  async function onPolicy(core: ReinCore, values: ('good' | 'bad')[], tag: string): Promise<number[]> {
    const ids: number[] = [];
    for (const [i, value] of values.entries()) {
      const tokens = tok.encode(`answer ${i}`);
      const { turn } = await core.call('captureTurn', { source: 'proxy', eventId: `${tag}-${i}`, prompt: `p${i}`, response: `answer ${i}`, tokens, logprobs: tokens.map(() => -1), policy }, 'test');
      ids.push((await core.call('rate', { turnId: turn!.id, value }, 'test')).rating.id);
    }
    return ids;
  }
  const select = (core: ReinCore, heldoutFraction: number): ReturnType<typeof selectRound> =>
    selectRound(core.store, DEFAULT_MODEL_ID, { replayRatio: 0, heldoutFraction, gateTurns: 0, seed: 1, lineageRuns: new Set() });

  it('leave-one-out: a trained rating meets the mean of the other trained on-policy rewards, a held-out one the mean of them all; KTO text is not in it', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'loo') }) });
    try {
      const values: ('good' | 'bad')[] = ['good', 'bad', 'good', 'good', 'bad', 'good', 'bad', 'good', 'good', 'good'];
      await onPolicy(core, values, 'l');
      // Off-policy text rated Bad: KTO, and not a sample of the policy, so not in its baseline.
      const { turn } = await core.call('captureTurn', { source: 'api', eventId: 'text', prompt: 'q', response: 'text from elsewhere' }, 'test');
      await core.call('rate', { turnId: turn!.id, value: 'bad' }, 'test');
      const turns = await select(core, 0.2);
      const { sequences, baseline } = encodeRound(turns, tok, opts);
      const reward = new Map(turns.map((t) => [t.ratingId, t.reward]));
      const trained = sequences.filter((q) => q.kind === 'mispo' && q.role !== 'heldout');
      const held = sequences.filter((q) => q.kind === 'mispo' && q.role === 'heldout');
      expect(held.length).toBeGreaterThan(0);
      const r = trained.map((q) => reward.get(q.ratingId)!);
      const sum = r.reduce((a, b) => a + b, 0);
      expect(baseline).toEqual({ ratings: trained.length, meanReward: sum / trained.length });
      trained.forEach((q, i) => expect(q.advantage).toBeCloseTo(r[i]! - (sum - r[i]!) / (trained.length - 1), 12));
      held.forEach((q) => expect(q.advantage).toBeCloseTo(reward.get(q.ratingId)! - sum / trained.length, 12));
      // The advantages of the trained ratings sum to zero: the round moves probability from the answers rated below
      // its mean to those above it, and raises or lowers nothing as a whole.
      expect(trained.reduce((a, q) => a + q.advantage, 0)).toBeCloseTo(0, 12);
      expect(trained.filter((q) => q.advantage > 0).every((q) => reward.get(q.ratingId) === 1)).toBe(true);
      const kto = sequences.filter((q) => q.kind === 'kto');
      expect(kto.map((q) => [q.desirable, q.advantage])).toEqual([[false, 0]]);
    } finally {
      core.close();
    }
  });

  it('no contrast, no direction: an all-Good or all-Bad round, or a single rating, has every advantage 0', async () => {
    for (const [name, values] of [
      ['good', Array.from({ length: 8 }, () => 'good')],
      ['bad', Array.from({ length: 8 }, () => 'bad')],
      ['one', ['good']],
    ] as [string, ('good' | 'bad')[]][]) {
      const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, `one-class-${name}`) }) });
      try {
        await onPolicy(core, values, name);
        const { sequences, baseline } = encodeRound(await select(core, 0.2), tok, opts);
        expect(sequences).toHaveLength(values.length);
        expect(sequences.map((q) => [q.kind, q.advantage])).toEqual(values.map(() => ['mispo', 0]));
        expect(baseline.meanReward).toBe(values[0] === 'good' ? 1 : -1);
      } finally {
        core.close();
      }
    }
  });

  it('replayed ratings join the pool: an all-Good set of pending ratings meets the Bad ones the live version trained on', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'replay-pool') }) });
    try {
      const store = core.store;
      const old = await onPolicy(core, ['good', 'bad', 'bad', 'good', 'bad', 'bad'], 'old');
      const run = store.runs.insert({ modelId: DEFAULT_MODEL_ID, status: 'succeeded', trigger: 'manual', fromVersion: null }, 'system');
      store.write(() => {
        for (const id of old) store.markTrained(id, run.id);
        store.adapters.insert({ modelId: DEFAULT_MODEL_ID, version: 1, status: 'active', path: '/nowhere/v1', runId: run.id, parentVersion: null }, 'system');
      });
      await onPolicy(core, Array.from({ length: 6 }, () => 'good'), 'new');
      const turns = await selectRound(store, DEFAULT_MODEL_ID, { replayRatio: 1, heldoutFraction: 0, gateTurns: 0, seed: 1, lineageRuns: lineageRuns(store, DEFAULT_MODEL_ID, 1) });
      const { sequences, baseline } = encodeRound(turns, tok, opts);
      const role = new Map(turns.map((t) => [t.ratingId, [t.role, t.reward] as const]));
      expect(baseline).toEqual({ ratings: 12, meanReward: (6 + 2 - 4) / 12 });
      for (const q of sequences) {
        const [r, reward] = role.get(q.ratingId)!;
        // 12 rewards summing to 4: each meets (4 − r)/11.
        expect(q.advantage, `${r} ${reward}`).toBeCloseTo(reward - (4 - reward) / 11, 12);
      }
      expect(sequences.filter((q) => role.get(q.ratingId)![0] === 'pending').every((q) => q.advantage > 0)).toBe(true);
      expect(sequences.reduce((a, q) => a + q.advantage, 0)).toBeCloseTo(0, 12);
    } finally {
      core.close();
    }
  });

  it('follows the reward mapper when one is set: the baseline is over the rewards the round trains on', async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'mapper') }) });
    try {
      const ids = await onPolicy(core, ['good', 'good', 'bad'], 'm');
      await core.call('setSettings', { values: { 'training.rewardMapper': '(rating) => rating.reward / 2' } }, 'test');
      const turns = await select(core, 0);
      expect(turns.map((t) => [t.ratingId, t.reward])).toEqual([[ids[0], 0.5], [ids[1], 0.5], [ids[2], -0.5]]);
      // 0.5 − mean(0.5, −0.5) = 0.5 for each Good; −0.5 − mean(0.5, 0.5) = −1 for the Bad.
      expect(encodeRound(turns, tok, opts).sequences.map((q) => q.advantage)).toEqual([0.5, 0.5, -1]);
    } finally {
      core.close();
    }
  });
});
