// An agent turn trains on-policy under the exact context it was sampled in. Claude Code's requests go through the
// real proxy (`POST /v1/messages`, with a system prompt, tools and a tool-call history) to Rein's own model server
// serving the small LM (its f32 GGUF in llama.cpp, exact KV cache); the proxy stores the turn with the ids the server
// consumed. The round (data.ts encodeRound) encodes exactly those ids and the reply after them, MIS-PO with the
// server's μ: the engine's π of the reply under them is μ to fp32 rounding, which the context re-rendered from the
// turn's text (no system prompt, no tools) is not. A context + reply longer than the training limit, and an agent turn
// without stored ids, are KTO with their reason, in the round's metrics too.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { turnMessages } from '../../common/sources.ts';
import { createCore } from '../core/core.ts';
import type { ReinCore } from '../core/core.ts';
import { SMALL_LM_DIR } from '../demo/small-lm.ts';
import { Engine } from '../engine/engine.ts';
import { hfToGguf } from '../engine/gguf/convert.ts';
import { loadTokenizer } from '../engine/tokenizer.ts';
import type { ReinTokenizer } from '../engine/tokenizer.ts';
import { resolveHome } from '../home.ts';
import { weightsId } from '../model-files/weights-id.ts';
import { encodeRound, selectRound } from '../training/data.ts';
import { startModelServer } from './embedded.ts';
import type { ModelServer } from './embedded.ts';
import { sseData, SseSplitter } from './openai.ts';
import { producerResolver } from './producer.ts';
import { startProxyServer } from './proxy.ts';
import type { ProxyServer } from './proxy.ts';

const TOKEN = 'f'.repeat(64);
/** The training limit of this test's rounds: the short turns fit it, the long one (a ~280-token system prompt) does not. */
const MAX_TOKENS = 200;
let root: string;
let core: ReinCore;
let tok: ReinTokenizer;
let engine: Engine;
let ms: ModelServer;
let proxy: ProxyServer;

const BASH = { name: 'Bash', description: 'Run a shell command in the sandbox', input_schema: { type: 'object', properties: { command: { type: 'string' } } } };
const SYSTEM = 'You are a careful coding agent. Read before you write, run the tests, and answer briefly.';

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'rein-agent-context-'));
  const gguf = path.join(root, 'small-lm-f32.gguf');
  hfToGguf(SMALL_LM_DIR, gguf);
  core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'home') }) });
  await core.call('setSettings', { values: { 'model.active': SMALL_LM_DIR, 'training.auto': false, 'training.preset': 'custom', 'training.custom': { steps: 2, batchSize: 2, maxTokens: MAX_TOKENS, heldoutFraction: 0 } } }, 'test');
  tok = loadTokenizer(SMALL_LM_DIR);
  engine = Engine.load(SMALL_LM_DIR, { threads: 1 });
  ms = await startModelServer({ core, token: TOKEN, port: 0, gguf, contextSize: 512, threads: 1, exactKv: true, log: () => {} });
  proxy = await startProxyServer({ core, token: TOKEN, port: 0, upstream: () => ({ baseUrl: ms.url, apiKey: TOKEN, kind: 'rein' }), vocab: () => tok, producer: producerResolver(core), log: () => {} });
}, 180_000);

afterAll(async () => {
  await proxy?.close();
  await ms?.close();
  await engine?.close();
  core?.close();
  rmSync(root, { recursive: true, force: true });
});

/** One Claude-shaped turn through the proxy: the system prompt, the tools, a call and its result, then the answer. */
async function agentTurn(prompt: string, system: string, result = 'a.txt\nb.txt'): Promise<{ inputTokens: number }> {
  const body = {
    model: 'small-lm',
    max_tokens: 12,
    stream: true,
    system,
    tools: [BASH],
    messages: [
      { role: 'user', content: prompt },
      { role: 'assistant', content: [{ type: 'tool_use', id: `toolu_${prompt.length}`, name: 'Bash', input: { command: 'ls' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${prompt.length}`, content: result }] },
    ],
  };
  const res = await fetch(`http://127.0.0.1:${proxy.port}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': TOKEN }, body: JSON.stringify(body) });
  expect(res.status, res.status === 200 ? '' : await res.text()).toBe(200);
  const split = new SseSplitter();
  const evs = [...split.push(new Uint8Array(await res.arrayBuffer())), split.rest()].filter((e) => e.trim() !== '').map((e) => JSON.parse(sseData(e)!) as { type: string; message?: { usage: { input_tokens: number } } });
  expect(evs.at(-1)!.type).toBe('message_stop');
  await proxy.idle();
  return { inputTokens: evs[0]!.message!.usage.input_tokens };
}

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>): number => Math.max(...Array.from(a, (x, i) => Math.abs(x - b[i]!)));

describe('an agent turn through the proxy and the model server', () => {
  it('is stored with the ids the server consumed, and trains MIS-PO on its reply under exactly them', async () => {
    const served = [await agentTurn('list files', SYSTEM), await agentTurn('show me the tests', SYSTEM), await agentTurn('list files again', `${SYSTEM} ${'Follow the house style. '.repeat(12)}`)];
    const page = await core.call('listTurns', { source: 'claude-code' }, 'test');
    expect(page.total).toBe(3);
    const turns = await Promise.all([...page.items].reverse().map((s) => core.call('getTurn', { turnId: s.id }, 'test')));
    for (const [i, t] of turns.entries()) {
      expect(t.onPolicy).toBe(true);
      const ids = core.store.promptIds.get(t.id)!;
      // As many ids as the server said it consumed, holding the system prompt, the history and the tool result the
      // turn's text does not keep.
      expect(ids).toHaveLength(served[i]!.inputTokens);
      const text = tok.decode(ids);
      expect(text).toContain(SYSTEM);
      expect(text).toContain('a.txt\nb.txt');
      expect(text.endsWith('<|im_start|>assistant\n')).toBe(true);
    }
    // π under the stored ids is μ (the base, temperature 1, no truncation: the server's own distribution); under the
    // chat re-rendered from the turn's text it is not.
    const first = turns[0]!;
    const exact = await engine.logprobs([...core.store.promptIds.get(first.id)!, ...first.tokens!], { start: core.store.promptIds.get(first.id)!.length });
    const rerendered = tok.encodeChat(turnMessages(first), { addGenerationPrompt: true });
    const fromText = await engine.logprobs([...rerendered, ...first.tokens!], { start: rerendered.length });
    process.stderr.write(`agent turn: ${core.store.promptIds.get(first.id)!.length} context ids (re-rendered text: ${rerendered.length}); max |π − μ| ${maxDiff(exact, first.logprobs!).toExponential(2)} under the stored ids, ${maxDiff(fromText, first.logprobs!).toExponential(2)} under the re-rendered text\n`);
    expect(maxDiff(exact, first.logprobs!)).toBeLessThan(1e-3);
    expect(maxDiff(fromText, first.logprobs!)).toBeGreaterThan(1e-2);

    // Rated, and one agent turn stored without ids (captured before they were), with the same tokens and μ. (Without
    // steps: the small LM's template cannot write a tool call, so a turn with steps cannot be rendered as text.)
    const values = ['good', 'bad', 'good'] as const;
    for (const [i, t] of turns.entries()) await core.call('rate', { turnId: t.id, value: values[i]! }, 'test');
    const opts = { replayRatio: 0, heldoutFraction: 0, gateTurns: 0, seed: 1, lineageRuns: new Set<number>() };
    const { policy } = (await selectRound(core.store, (await core.call('getTurn', { turnId: first.id }, 'test')).rating!.modelId, opts))[0]!;
    const old = await core.call('captureTurn', { source: 'claude-code', eventId: 'before-ids', prompt: first.prompt, response: first.response, tokens: first.tokens!, logprobs: first.logprobs!, policy: policy!, adapterVersion: 0 }, 'test');
    await core.call('rate', { turnId: old.turn!.id, value: 'bad' }, 'test');

    const modelId = policy!.modelId;
    const selected = await selectRound(core.store, modelId, opts);
    const { sequences, skipped } = encodeRound(selected, tok, { modelId, baseWeights: weightsId(SMALL_LM_DIR), advantageClip: 2, maxTokens: MAX_TOKENS });
    expect(skipped).toEqual([]);
    const byTurn = new Map(selected.map((t, i) => [t.turnId, sequences[i]!]));
    for (const t of turns.slice(0, 2)) {
      const q = byTurn.get(t.id)!;
      const ids = core.store.promptIds.get(t.id)!;
      expect(q.kind).toBe('mispo');
      // The trained span is the reply the server sampled, after exactly the ids it consumed.
      expect(q.tokens.slice(0, q.start)).toEqual(ids);
      expect(q.tokens.slice(q.start)).toEqual(t.tokens);
      expect(q.mask).toEqual(t.tokens!.map(() => 1));
      expect(Array.from(q.mu!)).toEqual(t.logprobs);
    }
    const long = byTurn.get(turns[2]!.id)!;
    expect(long.kind).toBe('kto');
    // As text, after as much of the server's own context as fits, cut from the left.
    expect(long.tokens).toEqual([...core.store.promptIds.get(turns[2]!.id)!, ...turns[2]!.tokens!].slice(-MAX_TOKENS));
    expect(long.why).toMatch(new RegExp(`exact context \\(${served[2]!.inputTokens} tokens\\) and reply \\(\\d+\\) are longer than the training sequence limit of ${MAX_TOKENS} tokens`));
    const before = byTurn.get(old.turn!.id)!;
    expect(before.kind).toBe('kto');
    expect(before.why).toMatch(/prompt ids .* are not stored with the turn/);

    // A real round: its metrics count them and give each KTO rating its reason.
    await core.call('startTraining', {}, 'test');
    await core.scheduler.idle();
    const run = (await core.call('listRuns', {}, 'test'))[0]!;
    const samples = (run.metrics as { samples: { mispo: number; kto: number; heldout: number; skipped: unknown[]; offPolicy: { ratingId: number; why: string }[] } }).samples;
    process.stderr.write(`round on agent turns: ${run.status}; MIS-PO ${samples.mispo}, KTO ${samples.kto}; held out ${samples.heldout}; off-policy: ${JSON.stringify(samples.offPolicy)}\n`);
    // The gate holds out one of the four (at least one is, whatever the share); the others train as encoded above.
    expect(samples.mispo + samples.kto + samples.heldout).toBe(4);
    expect(samples.offPolicy).toHaveLength(samples.kto);
    for (const o of samples.offPolicy) expect(o.why).toBe(o.ratingId === byTurn.get(old.turn!.id)!.ratingId ? before.why : long.why);
  }, 300_000);

  it('is stored without its prompt ids when its request holds a secret the capture redacts from the text', async () => {
    const key = `sk-ant-api03-${'a1B2'.repeat(12)}`;
    await agentTurn('print the env file', SYSTEM, `ANTHROPIC_API_KEY=${key}`);
    const page = await core.call('listTurns', { source: 'claude-code' }, 'test');
    const t = await core.call('getTurn', { turnId: page.items[0]!.id }, 'test');
    expect(t.prompt).toBe('print the env file');
    expect(t.onPolicy).toBe(true);
    expect(JSON.stringify(t.context)).not.toContain(key);
    expect(core.store.promptIds.get(t.id)).toBeNull();
  }, 60_000);
});
