// Which weights sampled a turn, through the real path: a tiny HF model is the training base; Rein's model server
// serves its f16 GGUF and then a Q4_0 GGUF of the same model under the same model id, a client chats through the
// capture proxy, each stored turn names the served file's weights identity (x-rein-weights), and the round's encoding
// (selectRound + encodeRound with the base's identity, as round.ts calls them) trains the f16 turn on-policy and the
// Q4_0 turn as text (KTO), saying why. A turn that names no weights (stored before they were recorded) keeps the
// model-id rule.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCore } from '../core/core.ts';
import type { ReinCore } from '../core/core.ts';
import { hfToGguf } from '../engine/gguf/convert.ts';
import { writeTinyModel } from '../engine/tiny.ts';
import { loadTokenizer } from '../engine/tokenizer.ts';
import type { ReinTokenizer } from '../engine/tokenizer.ts';
import { resolveHome } from '../home.ts';
import { weightsId, weightsIdCacheFile } from '../model-files/weights-id.ts';
import { encodeRound, offPolicyReason, selectRound } from '../training/data.ts';
import { startModelServer } from './embedded.ts';
import { producerResolver } from './producer.ts';
import { startProxyServer } from './proxy.ts';
import { WEIGHTS_HEADER } from './upstream.ts';

const TOKEN = 'd'.repeat(64);
let root: string;
let modelDir: string;
let f16: string;
let f32: string;
let q4: string;
let core: ReinCore;
let tok: ReinTokenizer;

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'rein-served-weights-'));
  modelDir = path.join(root, 'tiny');
  writeTinyModel(modelDir, { arch: 'qwen2', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 128, std: 0.2 });
  f16 = path.join(root, 'tiny-f16.gguf');
  f32 = path.join(root, 'tiny-f32.gguf');
  q4 = path.join(root, 'tiny-q4_0.gguf');
  hfToGguf(modelDir, f16, { type: 'f16' });
  hfToGguf(modelDir, f32, { type: 'f32' });
  hfToGguf(modelDir, q4, { type: 'q4_0' });
  core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'home') }) });
  await core.call('setSettings', { values: { 'model.active': modelDir, 'training.auto': false } }, 'test');
  tok = loadTokenizer(modelDir);
}, 120_000);

afterAll(() => {
  core?.close();
  rmSync(root, { recursive: true, force: true });
});

/** One chat through the capture proxy to Rein's model server serving `gguf`; the stored turn's id and the header. */
async function chatServedBy(gguf: string, seed: number): Promise<{ turnId: number; header: string | null }> {
  const ms = await startModelServer({ core, token: TOKEN, port: 0, gguf, contextSize: 256, threads: 1, log: () => {} });
  const proxy = await startProxyServer({ core, token: TOKEN, port: 0, upstream: () => ({ baseUrl: ms.url, apiKey: TOKEN, kind: 'rein' }), vocab: () => tok, producer: producerResolver(core), log: () => {} });
  try {
    const res = await fetch(`${proxy.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'Name a colour.' }], max_tokens: 6, seed, temperature: 1, top_p: 1 }),
    });
    expect(res.status).toBe(200);
    await res.text();
    await proxy.idle();
    const page = await core.call('listTurns', { limit: 1 }, 'test');
    return { turnId: page.items[0]!.id, header: res.headers.get(WEIGHTS_HEADER) };
  } finally {
    await proxy.close();
    await ms.close();
  }
}

describe('the weights identity', () => {
  it('is one for the HF folder and its f32 and f16 GGUFs, and another for a Q4_0 copy', () => {
    const base = weightsId(modelDir);
    expect(base).toMatch(/^[0-9a-f]{64}$/);
    expect(weightsId(f32)).toBe(base);
    expect(weightsId(f16)).toBe(base);
    expect(weightsId(q4)).not.toBe(base);
  });

  it('is kept in the home\'s cache file, which a malformed file does not break', () => {
    const file = weightsIdCacheFile(path.join(root, 'home', 'models'));
    writeFileSync(file, '{not json');
    const id = weightsId(f32, { cacheFile: file });
    expect(id).toBe(weightsId(modelDir));
    const entries = JSON.parse(readFileSync(file, 'utf8')) as [string, string][];
    expect(entries).toHaveLength(1);
    expect(entries[0]![0]).toContain(path.resolve(f32));
    expect(entries[0]![1]).toBe(id);
    expect(weightsId(q4, { cacheFile: file })).toBe(weightsId(q4));
    expect((JSON.parse(readFileSync(file, 'utf8')) as [string, string][]).map((e) => e[1])).toEqual([id, weightsId(q4)]);
  });

  it('a turn served from a Q4_0 file of the base trains as text, one served from its f16 file on-policy', async () => {
    const base = weightsId(modelDir);
    const onF16 = await chatServedBy(f16, 5);
    const onQ4 = await chatServedBy(q4, 6);
    expect(onF16.header).toBe(base);
    expect(onQ4.header).toBe(weightsId(q4));
    for (const t of [onF16, onQ4]) await core.call('rate', { turnId: t.turnId, value: 'good' }, 'test');

    const turns = await selectRound(core.store, modelDir, { replayRatio: 0, heldoutFraction: 0, gateTurns: 0, seed: 1, lineageRuns: new Set() });
    const byTurn = new Map(turns.map((t) => [t.turnId, t]));
    const f16Turn = byTurn.get(onF16.turnId)!;
    const q4Turn = byTurn.get(onQ4.turnId)!;
    // Both name the same model id and carry tokens and μ: only the weights tell them apart.
    expect(f16Turn.policy?.modelId).toBe(modelDir);
    expect(q4Turn.policy?.modelId).toBe(modelDir);
    expect(q4Turn.tokens?.length).toBeGreaterThan(0);
    expect(f16Turn.policy?.weights).toBe(base);
    expect(q4Turn.policy?.weights).toBe(weightsId(q4));

    const opts = { modelId: modelDir, baseWeights: base, advantageClip: 2, maxTokens: 256 };
    const { sequences, skipped } = encodeRound([f16Turn, q4Turn], tok, opts);
    expect(skipped).toEqual([]);
    expect(sequences.map((s) => [s.ratingId, s.kind])).toEqual([
      [f16Turn.ratingId, 'mispo'],
      [q4Turn.ratingId, 'kto'],
    ]);
    expect(offPolicyReason(q4Turn, modelDir, base)).toMatch(/other weights than the training base's .*a quantized or otherwise different file/);
    expect(offPolicyReason(f16Turn, modelDir, base)).toBeNull();

    // A turn stored before weights were recorded (no `weights` in its policy) keeps the model-id rule.
    const { weights: _dropped, ...legacy } = q4Turn.policy!;
    const old = { ...q4Turn, policy: legacy };
    expect(offPolicyReason(old, modelDir, base)).toBeNull();
    expect(encodeRound([old], tok, opts).sequences.map((s) => s.kind)).toEqual(['mispo']);
  }, 120_000);
});
