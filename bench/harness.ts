// Shared pieces of the engine benchmarks: a timer that reports CPU time beside wall time (the second core is often
// busy with other work, so a low CPU/wall ratio explains a slow figure), the PyTorch reference server, the load, and
// the Qwen2-0.5B-shaped random model the engine benchmarks run.
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { loadavg } from 'node:os';
import { llamaParams, parseLlamaConfig } from '../src-main/common/engine/families/llama.ts';
import type { LlamaConfig } from '../src-main/common/engine/families/llama.ts';
import { numel } from '../src-main/common/engine/families/params.ts';
import { Rng } from '../src-main/common/engine/rng.ts';
import { PYTHON } from './blas.ts';
import type { Engine } from '../src-main/node/engine/engine.ts';
import type { LoraAdapter } from '../src-main/common/engine/lora.ts';
import type { ObjectiveRunner } from '../src-main/node/training/objective-runner.ts';
import { batchGradient, newStepState, type BatchGradient } from '../src-main/node/training/step.ts';

export interface Timed<T> {
  value: T;
  wallS: number;
  cpuS: number;
}

export async function timed<T>(fn: () => Promise<T>): Promise<Timed<T>> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await fn();
  const wallS = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  return { value, wallS, cpuS: (c.user + c.system) / 1e6 };
}

export function loadAverage(): string {
  return loadavg().map((x) => x.toFixed(2)).join(' ');
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * A long-lived Python process answering one JSON line per JSON command line, so the benchmark can alternate ours and
 * the reference without paying PyTorch's start-up and weight generation each time.
 */
export class PyServer {
  private readonly proc: ChildProcessWithoutNullStreams;
  private readonly lines: AsyncIterator<string>;
  private stderr = '';

  constructor(script: string, arg: unknown, env: NodeJS.ProcessEnv = process.env) {
    this.proc = spawn(PYTHON, [script, JSON.stringify(arg)], { stdio: ['pipe', 'pipe', 'pipe'], env });
    this.proc.stderr.on('data', (d: Buffer) => {
      this.stderr += d.toString();
    });
    this.lines = createInterface({ input: this.proc.stdout })[Symbol.asyncIterator]();
  }

  async next(): Promise<Record<string, unknown>> {
    const r = await this.lines.next();
    if (r.done === true) throw new Error(`${PYTHON} exited early: ${this.stderr.slice(-2000)}`);
    return JSON.parse(r.value) as Record<string, unknown>;
  }

  async call(cmd: Record<string, unknown>): Promise<Record<string, unknown>> {
    this.proc.stdin.write(`${JSON.stringify(cmd)}\n`);
    return this.next();
  }

  async close(): Promise<void> {
    this.proc.stdin.write(`${JSON.stringify({ cmd: 'quit' })}\n`);
    this.proc.stdin.end();
    await new Promise((resolve) => this.proc.once('exit', resolve));
  }
}

/** The Qwen2-0.5B shape the engine benchmarks use (random weights; --layers N for quick experiments). */
export function qwen2HalfBConfig(layers = 24): LlamaConfig {
  return parseLlamaConfig({
    architectures: ['Qwen2ForCausalLM'],
    vocab_size: 151936,
    hidden_size: 896,
    intermediate_size: 4864,
    num_hidden_layers: layers,
    num_attention_heads: 14,
    num_key_value_heads: 2,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000,
    tie_word_embeddings: true,
  });
}

/**
 * Random weights in memory (2 GB for the 0.5B shape; never written to disk). Step time does not depend on the values,
 * so one block of N(0, 0.02²) draws is tiled with a shifting offset: ~100× faster than drawing 494M normals in JS.
 */
export function generateWeights(c: LlamaConfig, seed: number): Map<string, Float32Array> {
  const w = new Map<string, Float32Array>();
  generateWeightsEach(c, seed, (k, a) => void w.set(k, a));
  return w;
}

/** generateWeights one tensor at a time, in table order (a caller that quantizes them never holds them all in f32). */
export function generateWeightsEach(c: LlamaConfig, seed: number, each: (hfKey: string, a: Float32Array) => void): void {
  const block = new Rng(seed).fillNormal(new Float32Array(1 << 22), 0.02);
  let shift = 0;
  for (const p of llamaParams(c)) {
    const a = new Float32Array(numel(p.shape));
    if (p.init === 'ones') a.fill(1);
    else if (p.init === 'normal') {
      const rot = new Float32Array(block.length);
      rot.set(block.subarray(shift));
      rot.set(block.subarray(0, shift), block.length - shift);
      for (let o = 0; o < a.length; o += rot.length) a.set(rot.subarray(0, Math.min(rot.length, a.length - o)), o);
      shift = (shift + 7919) % block.length;
    }
    each(p.hfKey, a);
  }
}

/** The base's logprobs (the round computes them once per sequence), then the round's step on one on-policy sequence (μ = ref). */
export async function roundStep(engine: Engine, adapter: LoraAdapter, objectives: ObjectiveRunner, tokens: number[]): Promise<BatchGradient> {
  const ref = await engine.logprobs(tokens, { start: 1, adapter: null });
  return batchGradient(engine, adapter, objectives, [{ tokens, start: 1, mask: tokens.slice(1).map(() => 1), ref, kind: 'mispo', mu: ref, advantage: 1, desirable: true, ktoWeight: 1 }], newStepState());
}

/**
 * Random text ids of `tok` (none decodes to nothing, so no special token), drawn from `rng`: as a rendered system
 * prompt, tool declarations or a reply would be, for benches that need long contexts without sampling them.
 */
export function textIds(tok: { size: number; decode(ids: number[], o: { skipSpecialTokens: boolean }): string }, rng: Rng, n: number): number[] {
  const out: number[] = [];
  while (out.length < n) {
    const id = Math.floor(rng.uniform() * tok.size);
    if (tok.decode([id], { skipSpecialTokens: true }) !== '') out.push(id);
  }
  return out;
}
