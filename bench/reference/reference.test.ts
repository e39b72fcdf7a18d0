// Runs the PyTorch reference (llama_ref.py) on tiny models the project generates, and checks what can be
// checked without another implementation: shapes, logprobs against the logits, causality, that a fresh
// LoRA (B = 0) changes nothing, and that applying a trained PEFT adapter equals fusing it into the weights
// (which also pins PEFT key names, A/B orientation and the rsLoRA scale).
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromBase, fuse, loraScale, loraSpec } from '../../src-main/common/engine/lora.ts';
import { modelLinearParams } from '../../src-main/common/engine/families/registry.ts';
import { Rng } from '../../src-main/common/engine/rng.ts';
import { loadHfModel } from '../../src-main/node/engine/hf.ts';
import { savePeftAdapter } from '../../src-main/node/engine/peft.ts';
import { SafetensorsFile, writeSafetensors } from '../../src-main/node/engine/safetensors.ts';
import type { TensorToWrite } from '../../src-main/node/engine/safetensors.ts';
import { writeTinyModel } from '../../src-main/node/engine/tiny.ts';

const SCRIPT = path.join(import.meta.dirname, 'llama_ref.py');

/** A python3 that can import torch: $REIN_PYTHON, Debian's /usr/bin/python3, then python3 on PATH. */
function findTorchPython(): string | null {
  for (const py of [process.env.REIN_PYTHON, '/usr/bin/python3', 'python3']) {
    if (!py) continue;
    const r = spawnSync(py, ['-c', 'import torch, numpy'], { timeout: 60_000 });
    if (r.status === 0) return py;
  }
  return null;
}
const python = findTorchPython();

interface RefResult {
  shape: [number, number];
  logits: Float64Array;
  logprobs?: (number | null)[];
  lora_pairs: number;
}

interface Job {
  model: string;
  ids: number[];
  adapter?: string;
  targets?: number[];
}

const root = mkdtempSync(path.join(tmpdir(), 'rein-ref-'));

/** Run all jobs in one python process (torch is imported once) and read back their outputs. */
function reference(jobs: Record<string, Job>): Record<string, RefResult> {
  const names = Object.keys(jobs);
  const spec = names.map((n) => ({ ...jobs[n], out: path.join(root, `${n}.json`), logits: path.join(root, `${n}.f64`) }));
  const jobsFile = path.join(root, 'jobs.json');
  writeFileSync(jobsFile, JSON.stringify(spec));
  const r = spawnSync(python!, [SCRIPT, '--jobs', jobsFile], { timeout: 300_000, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`llama_ref.py failed (${r.status}): ${r.stderr}`);
  return Object.fromEntries(
    spec.map((j, i) => {
      const buf = readFileSync(j.logits);
      return [names[i]!, { ...JSON.parse(readFileSync(j.out, 'utf8')), logits: new Float64Array(buf.buffer, buf.byteOffset, buf.length / 8) }];
    }),
  );
}

function maxDiff(a: Float64Array, b: Float64Array, from = 0, to = a.length): number {
  let m = 0;
  for (let i = from; i < to; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const llamaDir = path.join(root, 'llama');
const qwenDir = path.join(root, 'qwen');
const llamaIds = [128000, 9906, 1917, 0, 5];
const llamaTargets = [9906, 1917, 0, 5, -1];
const chatIds = [151644, 872, 198, 9707, 1879, 151645];

/**
 * A fresh LoRA (B = 0) and a trained one (random B) on the Qwen model, and the same model with the trained
 * adapter fused into its weights (float64 fuse, stored as F32).
 */
function prepareAdapters(): number {
  const m = loadHfModel(qwenDir, { tokenizer: false });
  const spec = loraSpec({ r: 4, alpha: 8, rslora: true, targets: ['q_proj', 'v_proj', 'down_proj'] });
  const adapter = fromBase(modelLinearParams(m.config), spec, 7);
  savePeftAdapter(path.join(root, 'fresh'), adapter, { baseModel: qwenDir });
  const rng = new Rng(8);
  for (const p of adapter.pairs) rng.fillNormal(p.b, 0.05);
  savePeftAdapter(path.join(root, 'trained'), adapter, { baseModel: qwenDir });
  m.close();
  const fusedDir = path.join(root, 'fused');
  mkdirSync(fusedDir);
  for (const f of readdirSync(qwenDir)) if (f !== 'model.safetensors') copyFileSync(path.join(qwenDir, f), path.join(fusedDir, f));
  const src = SafetensorsFile.open(path.join(qwenDir, 'model.safetensors'));
  const tensors: Record<string, TensorToWrite> = {};
  for (const k of src.names()) {
    const pair = adapter.pairs.find((p) => p.baseKey === k);
    const w = src.read(k, { as: 'f64' });
    tensors[k] = { shape: src.info(k).shape, data: pair ? fuse(w, pair, spec.r, loraScale(spec)) : w };
  }
  src.close();
  writeSafetensors(path.join(fusedDir, 'model.safetensors'), tensors);
  return adapter.pairs.length;
}

describe.skipIf(python === null)('PyTorch reference llama_ref.py (skipped when no python3 can import torch + numpy: apt-get install python3-torch libopenblas0-pthread)', () => {
  let res: Record<string, RefResult>;
  let pairs = 0;
  beforeAll(() => {
    writeTinyModel(llamaDir, { arch: 'llama', hidden: 32, heads: 4, kvHeads: 2, layers: 2, shards: 2, dtype: 'BF16', seed: 3 });
    writeTinyModel(qwenDir, { arch: 'qwen2', hidden: 32, heads: 4, kvHeads: 1, layers: 2, seed: 4 });
    pairs = prepareAdapters();
    res = reference({
      llama: { model: llamaDir, ids: llamaIds, targets: llamaTargets },
      causalA: { model: qwenDir, ids: [1, 2, 3, 4] },
      causalB: { model: qwenDir, ids: [1, 2, 3, 99] },
      base: { model: qwenDir, ids: chatIds },
      fresh: { model: qwenDir, ids: chatIds, adapter: path.join(root, 'fresh') },
      trained: { model: qwenDir, ids: chatIds, adapter: path.join(root, 'trained') },
      fused: { model: path.join(root, 'fused'), ids: chatIds },
    });
  }, 300_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('gives [T, V] logits whose log-softmax matches the reported target logprobs (sharded bf16 Llama)', () => {
    const r = res.llama!;
    const V = 128256;
    expect(r.shape).toEqual([5, V]);
    expect(r.logits.length).toBe(5 * V);
    expect(r.logits.every(Number.isFinite)).toBe(true);
    for (let t = 0; t < 4; t++) {
      const row = r.logits.subarray(t * V, (t + 1) * V);
      const mx = row.reduce((a, b) => Math.max(a, b), -Infinity);
      const lse = mx + Math.log(row.reduce((s, x) => s + Math.exp(x - mx), 0));
      expect(r.logprobs![t]).toBeCloseTo(row[llamaTargets[t]!]! - lse, 10);
    }
    expect(r.logprobs![4]).toBeNull();
    // Random weights at std 0.02 give near-uniform but not degenerate predictions.
    const head = r.logits.subarray(0, 5000);
    expect(Math.max(...head) - Math.min(...head)).toBeGreaterThan(0.1);
  });

  it('is causal: changing the last token changes only the last position', () => {
    const V = 151669;
    const [a, b] = [res.causalA!, res.causalB!];
    expect(maxDiff(a.logits, b.logits, 0, 3 * V)).toBeLessThan(1e-12);
    expect(maxDiff(a.logits, b.logits, 3 * V, 4 * V)).toBeGreaterThan(1e-4);
  });

  it('a fresh adapter (B = 0) changes nothing', () => {
    expect(res.fresh!.lora_pairs).toBe(pairs);
    expect(pairs).toBe(2 * 3);
    expect(maxDiff(res.fresh!.logits, res.base!.logits)).toBe(0);
  });

  it('a trained adapter applied as LoRA equals its weights fused into the base', () => {
    const moved = maxDiff(res.trained!.logits, res.base!.logits);
    expect(moved).toBeGreaterThan(1e-3);
    expect(maxDiff(res.trained!.logits, res.fused!.logits)).toBeLessThan(moved * 1e-4);
  });
});
