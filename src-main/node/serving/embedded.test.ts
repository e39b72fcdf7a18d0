// Rein's model server (llama.cpp through node-llama-cpp, on a tiny generated model written as an F32 GGUF) behind the
// capture proxy: a client chats (streaming and not), the stored turn's tokens and logprobs equal our ONNX engine's
// logprobs of the same tokens, and once an adapter version is made active the next request uses it without a
// restart: the same prompt and seed give different logprobs, which equal the engine's with that adapter applied.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Turn } from '../../common/domain.ts';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { Rng } from '../../common/engine/rng.ts';
import { createCore } from '../core/core.ts';
import type { ReinCore } from '../core/core.ts';
import { Engine } from '../engine/engine.ts';
import { hfToGguf } from '../engine/gguf/convert.ts';
import { savePeftAdapter } from '../engine/peft.ts';
import { writeTinyModel } from '../engine/tiny.ts';
import { loadTokenizer } from '../engine/tokenizer.ts';
import { resolveHome } from '../home.ts';
import { startModelServer } from './embedded.ts';
import type { ModelServer } from './embedded.ts';
import { producerResolver } from './producer.ts';
import { startProxyServer } from './proxy.ts';
import type { ProxyServer } from './proxy.ts';

const TOKEN = 'c'.repeat(64);
let root: string;
let modelDir: string;
let core: ReinCore;
let engine: Engine;
let ms: ModelServer;
let proxy: ProxyServer;

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'rein-embedded-'));
  modelDir = path.join(root, 'tiny');
  writeTinyModel(modelDir, { arch: 'qwen2', layers: 2, hidden: 64, heads: 4, kvHeads: 2, intermediate: 128, std: 0.2 });
  const gguf = path.join(root, 'tiny-f32.gguf');
  hfToGguf(modelDir, gguf);
  core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'home') }) });
  await core.call('setSettings', { values: { 'model.active': modelDir } }, 'test');
  engine = Engine.load(modelDir, { threads: 1 });
  ms = await startModelServer({ core, token: TOKEN, port: 0, gguf, contextSize: 256, threads: 1, exactKv: true, log: () => {} });
  const tok = loadTokenizer(modelDir);
  proxy = await startProxyServer({ core, token: TOKEN, port: 0, upstream: () => ({ baseUrl: ms.url, apiKey: TOKEN, kind: 'rein' }), vocab: () => tok, producer: producerResolver(core), log: () => {} });
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await ms?.close();
  await engine?.close();
  core?.close();
  rmSync(root, { recursive: true, force: true });
});

const chat = (extra: Record<string, unknown>) => ({ model: 'tiny', messages: [{ role: 'user', content: 'Write one line.' }], max_tokens: 6, seed: 11, temperature: 0.8, ...extra });

async function ask(body: unknown): Promise<{ text: string; turn: Turn }> {
  const res = await fetch(`${proxy.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  const text = await res.text();
  await proxy.idle();
  const page = await core.call('listTurns', { limit: 1 }, 'test');
  return { text, turn: await core.call('getTurn', { turnId: page.items[0]!.id }, 'test') };
}

async function engineLogprobs(t: Turn, adapter: LoraAdapter | null = null): Promise<Float64Array> {
  const prompt = loadTokenizer(modelDir).encodeChat([...t.context, { role: 'user', content: t.prompt }], { addGenerationPrompt: true });
  return engine.logprobs([...prompt, ...t.tokens!], { start: prompt.length, adapter });
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}

describe('model server behind the proxy', () => {
  it('stores on-policy turns whose logprobs equal the engine (non-streaming and streaming); a new active version applies to the next request', async () => {
    const plain = await ask(chat({}));
    expect(plain.turn.onPolicy).toBe(true);
    expect(plain.turn.adapterVersion).toBe(0);
    expect(plain.turn.tokens!.length).toBeGreaterThan(0);
    expect(maxDiff(plain.turn.logprobs!, await engineLogprobs(plain.turn))).toBeLessThan(2e-3);

    const streamed = await ask(chat({ stream: true }));
    expect(streamed.text.endsWith('data: [DONE]\n\n')).toBe(true);
    // Same seed, same model: the same tokens.
    expect(streamed.turn.tokens).toEqual(plain.turn.tokens);
    expect(maxDiff(streamed.turn.logprobs!, plain.turn.logprobs!)).toBeLessThan(1e-5);

    // A new version becomes active (as a training round registers it): no restart.
    const adapter = engine.newAdapter({ r: 4, alpha: 8 }, 1);
    const rng = new Rng(5);
    for (const p of adapter.pairs) for (let i = 0; i < p.b.length; i++) p.b[i] = 0.3 * rng.normal();
    const dir = path.join(root, 'home', 'adapters', 'v1');
    savePeftAdapter(path.join(dir, 'peft'), adapter, { baseModel: modelDir });
    core.store.insertAdapter({ modelId: modelDir, version: 1, status: 'active', path: dir }, 'test');
    const tuned = await ask(chat({}));
    expect(tuned.turn.adapterVersion).toBe(1);
    const withAdapter = await engineLogprobs(tuned.turn, adapter);
    expect(maxDiff(tuned.turn.logprobs!, withAdapter)).toBeLessThan(2e-3);
    // The adapter moved the policy: the base scores the served tokens differently.
    const baseOnTuned = await engineLogprobs(tuned.turn);
    expect(maxDiff(baseOnTuned, withAdapter)).toBeGreaterThan(1e-2);
  }, 120_000);
});
