// A client that leaves mid-reply (an agent's timeout, a closed tab) frees Rein's model server: the generation stops at
// its next token instead of running to max_tokens while every later request waits in the queue, and close() stops a
// generation in flight the same way. The log line of each generation says how it ended.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createCore } from '../core/core.ts';
import type { ReinCore } from '../core/core.ts';
import { hfToGguf } from '../engine/gguf/convert.ts';
import { writeTinyModel } from '../engine/tiny.ts';
import { resolveHome } from '../home.ts';
import { startModelServer } from './embedded.ts';
import type { ModelServer } from './embedded.ts';

const TOKEN = 'e'.repeat(64);
const MAX = 3000;
let root: string;
let core: ReinCore;
let ms: ModelServer;
const logs: string[] = [];

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'rein-embedded-abort-'));
  const modelDir = path.join(root, 'tiny');
  writeTinyModel(modelDir, { arch: 'qwen2', layers: 1, hidden: 32, heads: 2, kvHeads: 1, intermediate: 64, std: 0.2 });
  const gguf = path.join(root, 'tiny-f32.gguf');
  hfToGguf(modelDir, gguf);
  core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'home') }) });
  await core.call('setSettings', { values: { 'model.active': modelDir, 'training.auto': false } }, 'test');
  ms = await startModelServer({ core, token: TOKEN, port: 0, gguf, contextSize: 4096, threads: 1, log: (l) => logs.push(l) });
}, 120_000);

afterAll(async () => {
  await ms?.close();
  core?.close();
  rmSync(root, { recursive: true, force: true });
});

const chat = (signal?: AbortSignal) =>
  fetch(`${ms.url}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    // The tiny random model almost never samples its end token, so the reply would run to MAX.
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: MAX, stream: true, seed: 7, logprobs: true }),
    ...(signal ? { signal } : {}),
  });

it('a streaming client that disconnects after its first chunk stops the generation; the next request is answered', { timeout: 120_000 }, async () => {
  const ac = new AbortController();
  const res = await chat(ac.signal);
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  await reader.read();
  ac.abort();
  await reader.cancel().catch(() => {});
  const next = await fetch(`${ms.url}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hello' }], max_tokens: 4, seed: 1 }),
  });
  expect(next.status).toBe(200);
  const gone = logs.find((l) => l.includes('(client gone)'));
  expect(gone, logs.join('\n')).toBeDefined();
  const produced = Number(/→ (\d+) tokens/.exec(gone!)![1]);
  expect(produced).toBeLessThan(MAX);
});
