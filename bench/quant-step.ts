// npm run bench:quant-step — LoRA training on block-quantized frozen weights (common/engine/quant.ts), side by side
// with the fp32 step. Each step runs in a fresh child process, so peak RSS (a per-process high-water mark) is the
// step's own:
//   1. the dX backward of one Qwen2-0.5B layer's 7 linears at seq 512, three ways: W dequantized in the graph then
//      Gemm (what the engine does), MatMulNBits on a transposed int4 copy, and f32 Gemm;
//   2. the Qwen2-0.5B shape (bench/train-step.ts's step: reference forward, then the MIS-PO step with LoRA r = 16 on
//      all 7 projections) at seq 512 with an int4 base (symmetric, blocks of 32: every decoder linear; the tied
//      embedding / lm_head stays f32, see docs/performance.md), against the fp32 step on the same weights dequantized: time and
//      peak RSS ratios, and the losses. Every kind runs with the engine's defaults (a quantized base recomputes each
//      layer's forward in the backward above 256 tokens, driver.ts RECOMPUTE_ABOVE_QUANT), beside two more int4
//      kinds: 'int4-residuals' keeps the residuals as the f32 step does, and 'int4-embed' quantizes the tied
//      embedding too (a Q4_0 file's token_embd: rows dequantized on lookup, the lm_head through MatMulNBits; not the
//      fp32 step's weights, so its loss differs);
//   3. a Llama-3-8B shape (32 layers, H 4096, FFN 14336, 32/8 heads, vocab 128256) with random int4 weights drawn
//      directly (lm_head through MatMulNBits, embedding rows dequantized on lookup): one LoRA step (forward and
//      backward, layers recomputed) at seq 512, peak RSS and tokens/s.
//   flags: --steps N (2)  --seq T (512)  --layers N (24)  --no-8b  --only-8b  --no-backward  --no-residuals  --no-embed
//          --prepack on|off (the driver's default: DriverOptions.prepack)  --only-backward (part 1 alone)
//          --dequantize-max BYTES (DriverOptions.dequantizeLayerMaxBytes: 0 runs the layers through MatMulNBits)
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Graph } from '../src-main/common/engine/ir.ts';
import * as op from '../src-main/common/engine/ops.ts';
import { llamaParams, parseLlamaConfig } from '../src-main/common/engine/families/llama.ts';
import type { LlamaConfig } from '../src-main/common/engine/families/llama.ts';
import { numel } from '../src-main/common/engine/families/params.ts';
import { Rng } from '../src-main/common/engine/rng.ts';
import { type QuantWeight, dequantize, matmulDequant, matmulNBits, quantBytes, quantFeeds, quantInputs, quantize, randomInt4 } from '../src-main/common/engine/quant.ts';
import { Runtime } from '../src-main/node/engine/runtime.ts';
import { Engine } from '../src-main/node/engine/engine.ts';
import type { FArray } from '../src-main/node/engine/driver.ts';
import { ObjectiveRunner } from '../src-main/node/training/objective-runner.ts';
import { presetConfig } from '../src-main/common/training/presets.ts';
import { generateWeightsEach, loadAverage, median, qwen2HalfBConfig, roundStep, timed } from './harness.ts';
import { benchArgs } from './args.ts';

const args = benchArgs();
const flag = args.num;
const STEPS = flag('steps', 2);
const SEQ = flag('seq', 512);
const LAYERS = flag('layers', 24);
const THREADS = 2;
const RANK = 16;
const ALPHA = 32;
const INT4 = { bits: 4, zeroPoints: false } as const;
const GiB = 2 ** 30;
const PREPACK = {
  ...(args.has('prepack') ? { prepack: args.str('prepack', '') === 'on' } : {}),
  ...(args.has('dequantize-max') ? { dequantizeLayerMaxBytes: flag('dequantize-max', 0) } : {}),
};

const llama3_8b: LlamaConfig = parseLlamaConfig({
  architectures: ['LlamaForCausalLM'], vocab_size: 128256, hidden_size: 4096, intermediate_size: 14336, num_hidden_layers: 32,
  num_attention_heads: 32, num_key_value_heads: 8, rms_norm_eps: 1e-5, rope_theta: 500000, tie_word_embeddings: false,
});

interface ChildResult {
  kind: string;
  weightBytes: number;
  warmS: number;
  stepS: number[];
  cpuS: number[];
  loss: number;
  /** Σ log p of the sequence under the policy (adapter on): a direct function of the weights. */
  logpSum: number;
  rssBytes: number;
  load: string;
}

const tokensFor = (c: LlamaConfig, T: number, seed: number): number[] => {
  const r = new Rng(seed);
  return Array.from({ length: T }, () => Math.floor(r.uniform() * c.vocabSize));
};

type HalfBKind = 'fp32' | 'int4' | 'int4-residuals' | 'int4-embed';

/** One Qwen2-0.5B-shaped step kind in this fresh process: the int4 kinds keep the base quantized, 'fp32' holds it dequantized. */
async function halfBChild(kind: HalfBKind): Promise<ChildResult> {
  const config = qwen2HalfBConfig(LAYERS);
  const byKey = new Map(llamaParams(config).map((p) => [p.hfKey, p]));
  const weights = new Map<string, FArray | QuantWeight>();
  let weightBytes = 0;
  // Quantized tensor by tensor: no f32 copy of the whole model exists in the int4 process.
  generateWeightsEach(config, 0, (k, a) => {
    const p = byKey.get(k)!;
    if (p.kind === 'linear' || (kind === 'int4-embed' && p.kind === 'embedding')) {
      const q = quantize(a, p.shape[0] as number, p.shape[1] as number, INT4);
      const w = kind === 'fp32' ? dequantize(q) : q;
      weightBytes += kind === 'fp32' ? 4 * a.length : quantBytes(q);
      weights.set(k, w);
    } else {
      weightBytes += 4 * a.length;
      weights.set(k, a);
    }
  });
  const engine = Engine.fromWeights(config, (k) => weights.get(k)!, { dtype: 'float32', threads: THREADS, ...(kind === 'int4-residuals' ? { recomputeAbove: SEQ } : {}), ...PREPACK });
  weights.clear();
  const adapter = engine.newAdapter({ r: RANK, alpha: ALPHA }, 1);
  const rng = new Rng(2);
  for (const p of adapter.pairs) rng.fork(p.baseKey).fillNormal(p.b, 0.01); // nonzero B: every gradient is real work
  const objectives = new ObjectiveRunner(presetConfig('balanced', { activeParams: 0.5e9, totalParams: 0.5e9, moe: false }));
  const tokens = tokensFor(config, SEQ, 100);
  const warm = await timed(() => roundStep(engine, adapter, objectives, tokens));
  const stepS: number[] = [];
  const cpuS: number[] = [];
  let loss = warm.value.loss;
  for (let s = 0; s < STEPS; s++) {
    const t = await timed(() => roundStep(engine, adapter, objectives, tokens));
    stepS.push(t.wallS);
    cpuS.push(t.cpuS);
    loss = t.value.loss;
  }
  const logpSum = (await engine.logprobs(tokens, { adapter })).reduce((a, v) => a + v, 0);
  await objectives.dispose();
  await engine.close();
  return { kind, weightBytes, warmS: warm.wallS, stepS, cpuS, loss, logpSum, rssBytes: process.resourceUsage().maxRSS * 1024, load: loadAverage() };
}

/** The Llama-3-8B shape, random int4 weights drawn directly: one LoRA step (forward, backward) at SEQ. */
async function eightBChild(): Promise<ChildResult> {
  const c = llama3_8b;
  let x = 0x9e3779b9;
  const next = (): number => {
    // xorshift32: fast enough for 3.7 GB of nibbles.
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
  const weights = new Map<string, FArray | QuantWeight>();
  let weightBytes = 0;
  const gen = await timed(async () => {
    for (const p of llamaParams(c)) {
      if (p.kind === 'linear' || p.kind === 'embedding') {
        const q = randomInt4(p.shape[0] as number, p.shape[1] as number, 0.02, next);
        weightBytes += quantBytes(q);
        weights.set(p.hfKey, q);
      } else {
        const a = new Float32Array(numel(p.shape)).fill(1);
        weightBytes += a.byteLength;
        weights.set(p.hfKey, a);
      }
    }
  });
  console.error(`8B: ${(weightBytes / GiB).toFixed(2)} GiB of int4 weights drawn in ${gen.wallS.toFixed(0)} s; RSS ${(process.memoryUsage().rss / GiB).toFixed(2)} GiB`);
  // The engine's defaults: a quantized base recomputes each layer's forward in the backward above 256 tokens (32
  // layers' residuals at seq 512 would take ~4 GiB), and the head runs over 512 rows at a time in vocabulary tiles.
  const engine = Engine.fromWeights(c, (k) => weights.get(k)!, { dtype: 'float32', threads: THREADS, ...PREPACK });
  weights.clear();
  const adapter = engine.newAdapter({ r: RANK, alpha: ALPHA }, 1);
  const rng = new Rng(2);
  for (const p of adapter.pairs) rng.fork(p.baseKey).fillNormal(p.b, 0.01);
  const tokens = tokensFor(c, SEQ, 7);
  const n = SEQ - 1;
  // Progress on stderr every 30 s (the step takes minutes on a shared 2-core machine): a cut-short run still says
  // how far it got and the peak RSS so far.
  const t0 = Date.now();
  const tick = setInterval(() => {
    console.error(`8B step: ${((Date.now() - t0) / 1000).toFixed(0)} s, cpu ${(process.cpuUsage().user / 1e6).toFixed(0)} s, RSS ${(process.memoryUsage().rss / GiB).toFixed(2)} GiB, peak ${((process.resourceUsage().maxRSS * 1024) / GiB).toFixed(2)} GiB; load ${loadAverage()}`);
  }, 30_000);
  const t = await timed(() => engine.driver.grad(tokens, 1, adapter, (lp) => new Float64Array(lp.length).fill(-1 / n))); // mean NLL
  clearInterval(tick);
  const loss = -t.value.logp.reduce((s, v) => s + v, 0) / n;
  await engine.close();
  return { kind: '8b-int4', weightBytes, warmS: t.wallS, stepS: [t.wallS], cpuS: [t.cpuS], loss, logpSum: -loss * n, rssBytes: process.resourceUsage().maxRSS * 1024, load: loadAverage() };
}

/** dX of one 0.5B layer's 7 linears at T = SEQ: dequantize-then-Gemm vs a transposed int4 copy vs f32. ms per layer. */
async function backwardChoice(): Promise<void> {
  const c = qwen2HalfBConfig(1);
  const H = c.hiddenSize;
  const Q = c.numHeads * c.headDim;
  const KV = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  const shapes: [string, number, number][] = [['q', Q, H], ['k', KV, H], ['v', KV, H], ['o', H, Q], ['gate', I, H], ['up', I, H], ['down', H, I]]; // [N, K]
  const rng = new Rng(11);
  const rt = new Runtime({ intraOpThreads: THREADS });
  const ways: Record<string, { g: Graph; feeds: Record<string, Float32Array | Uint8Array> }> = {};
  for (const way of ['dequantize + Gemm', 'transposed int4 copy', 'f32 Gemm'] as const) {
    const g = new Graph(way);
    const feeds: Record<string, Float32Array | Uint8Array> = {};
    for (const [m, N, K] of shapes) {
      const dy = g.input(`dy_${m}`, 'float32', [SEQ, N]); // [T, N]
      feeds[`dy_${m}`] = rng.fillNormal(new Float32Array(SEQ * N), 1);
      const w = rng.fillNormal(new Float32Array(N * K), 0.02);
      if (way === 'f32 Gemm') {
        feeds[m] = w;
        g.output(`dx_${m}`, op.gemm(dy, g.input(m, 'float32', [N, K]))); // [T, K]
      } else if (way === 'dequantize + Gemm') {
        Object.assign(feeds, quantFeeds(m, quantize(w, N, K, INT4)));
        g.output(`dx_${m}`, matmulDequant(dy, quantInputs(g, m, N, K, INT4))); // [T, K]
      } else {
        const wt = new Float32Array(K * N);
        for (let i = 0; i < N; i++) for (let j = 0; j < K; j++) wt[j * N + i] = w[i * K + j]!;
        Object.assign(feeds, quantFeeds(m, quantize(wt, K, N, INT4))); // Wᵀ [K, N], re-quantized along N: not the same weights
        g.output(`dx_${m}`, matmulNBits(dy, quantInputs(g, m, K, N, INT4))); // [T, K]
      }
    }
    ways[way] = { g, feeds };
  }
  const times: Record<string, number[]> = {};
  for (let r = 0; r < 4; r++) {
    for (const [way, { g, feeds }] of Object.entries(ways)) {
      const t = await timed(() => rt.run(g, {}, feeds));
      if (r > 0) (times[way] ??= []).push(t.wallS * 1000); // the first run creates the session
    }
  }
  const f32 = median(times['f32 Gemm']!);
  for (const [way, ts] of Object.entries(times)) console.log(`  ${way.padEnd(22)} ${median(ts).toFixed(1).padStart(7)} ms per layer (${(median(ts) / f32).toFixed(2)}× f32)`);
  await rt.dispose();
}

function runChild(kind: string): ChildResult {
  const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', kind, ...args.raw], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 20 });
  const line = child.stdout.trim().split('\n').pop() ?? '';
  if (child.status !== 0 || !line.startsWith('{')) throw new Error(`child ${kind} failed (status ${child.status}): ${child.stdout.slice(-2000)}`);
  return JSON.parse(line) as ChildResult;
}

async function main(): Promise<void> {
  console.log(`quant-step bench: seq ${SEQ}, LoRA r=${RANK} on 7 projections, ${THREADS} threads, ${STEPS} timed steps after a warm-up; load ${loadAverage()}`);
  if (!args.has('only-8b')) {
    if (!args.has('no-backward')) {
      console.log(`dX backward of one Qwen2-0.5B layer's 7 linears at T=${SEQ} (median of 3; load ${loadAverage()}):`);
      await backwardChoice();
    }
    if (args.has('only-backward')) return;
    const f = runChild('fp32');
    const q = runChild('int4');
    const extra = [...(args.has('no-residuals') ? [] : [runChild('int4-residuals')]), ...(args.has('no-embed') ? [] : [runChild('int4-embed')])];
    const fmt = (r: ChildResult): string =>
      `${r.kind}: weights ${(r.weightBytes / GiB).toFixed(2)} GiB; first step ${r.warmS.toFixed(1)} s; steps ${r.stepS.map((s, i) => `${s.toFixed(1)} s (cpu/wall ${(r.cpuS[i]! / s).toFixed(2)})`).join(', ')}; ` +
      `loss ${r.loss.toPrecision(8)}, Σ log p ${r.logpSum.toPrecision(8)}; peak RSS ${(r.rssBytes / GiB).toFixed(2)} GiB; load ${r.load}`;
    console.log(`Qwen2-0.5B shape, ${LAYERS} layers (each in a fresh process; the int4 kinds recompute each layer's forward in the backward, but int4-residuals):\n  ${[f, q, ...extra].map(fmt).join('\n  ')}`);
    const tr = median(q.stepS) / median(f.stepS);
    const cr = median(q.cpuS) / median(f.cpuS);
    const rr = q.rssBytes / f.rssBytes;
    const lr = Math.abs(q.loss - f.loss) / Math.abs(f.loss);
    const pr = Math.abs(q.logpSum - f.logpSum) / Math.abs(f.logpSum);
    console.log(`  int4 / fp32: step time ${tr.toFixed(2)}× wall, ${cr.toFixed(2)}× CPU (target ≤ 0.8); peak RSS ${rr.toFixed(2)}× (target ≤ 0.45); ` +
      `relative difference: loss ${lr.toExponential(2)}, Σ log p ${pr.toExponential(2)} (target ≤ 1e-4)`);
    for (const r of extra) console.log(`  ${r.kind} / fp32: step time ${(median(r.stepS) / median(f.stepS)).toFixed(2)}× wall, ${(median(r.cpuS) / median(f.cpuS)).toFixed(2)}× CPU; peak RSS ${(r.rssBytes / f.rssBytes).toFixed(2)}×`);
  }
  if (!args.has('no-8b')) {
    const e = runChild('8b');
    console.log(`Llama-3-8B shape, random int4 weights (${(e.weightBytes / GiB).toFixed(2)} GiB): one LoRA step at seq ${SEQ} (forward + backward, recomputed layers) ${e.stepS[0]!.toFixed(0)} s ` +
      `(cpu/wall ${(e.cpuS[0]! / e.stepS[0]!).toFixed(2)}), ${(SEQ / e.stepS[0]!).toFixed(1)} tokens/s; loss ${e.loss.toFixed(3)}; peak RSS ${(e.rssBytes / GiB).toFixed(2)} GiB (target ≤ 8); load ${e.load}`);
  }
}

if (args.has('child')) {
  const kind = args.str('child', '');
  const r = kind === '8b' ? await eightBChild() : await halfBChild((['int4', 'int4-residuals', 'int4-embed'] as const).find((k) => k === kind) ?? 'fp32');
  console.log(JSON.stringify(r));
} else await main();
