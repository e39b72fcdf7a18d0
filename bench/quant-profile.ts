// node bench/quant-profile.ts [--kind fp32|int4|int4-residuals] [--layers N] [--seq T] [--steps N] [--ort-profile DIR]
//                              [--dequantize-max BYTES] (DriverOptions.dequantizeLayerMaxBytes; 0: layers through MatMulNBits)
// Where a Qwen2-0.5B-shaped LoRA step's time goes (bench/quant-step.ts's step, one kind in this process): wall time
// per ORT graph run, summed per graph name over the timed steps, and the rest (JS between runs: embedding, feeds,
// the objective). With --ort-profile, every session writes ORT's per-node profile under DIR, and the op types'
// totals are printed per graph.
import { mkdirSync, readFileSync } from 'node:fs';
import ort from 'onnxruntime-node';
import { llamaParams } from '../src-main/common/engine/families/llama.ts';
import { Rng } from '../src-main/common/engine/rng.ts';
import { type QuantWeight, dequantize, quantize } from '../src-main/common/engine/quant.ts';
import { CompiledGraph } from '../src-main/node/engine/runtime.ts';
import { Engine } from '../src-main/node/engine/engine.ts';
import type { FArray } from '../src-main/node/engine/driver.ts';
import { ObjectiveRunner } from '../src-main/node/training/objective-runner.ts';
import { presetConfig } from '../src-main/common/training/presets.ts';
import { generateWeightsEach, loadAverage, qwen2HalfBConfig, roundStep, timed } from './harness.ts';
import { benchArgs } from './args.ts';

const args = benchArgs();
const opt = args.str;
const KIND = opt('kind', 'int4');
const LAYERS = args.num('layers', 24);
const SEQ = args.num('seq', 512);
const STEPS = args.num('steps', 1);
const PROFILE = opt('ort-profile', '');
const DQ = args.has('dequantize-max') ? { dequantizeLayerMaxBytes: args.num('dequantize-max', 0) } : {};

// Wall time per graph run, by graph name.
const acc = new Map<string, { n: number; ms: number }>();
let on = false;
const run0 = CompiledGraph.prototype.run;
CompiledGraph.prototype.run = async function (this: CompiledGraph, ...a: Parameters<CompiledGraph['run']>) {
  const t0 = performance.now();
  const r = await run0.apply(this, a);
  if (on) {
    const k = `${this.graph.name} T=${Object.values(this.bindings).join(',')}`;
    const e = acc.get(k) ?? { n: 0, ms: 0 };
    e.n++;
    e.ms += performance.now() - t0;
    acc.set(k, e);
  }
  return r;
};
const sessions: { name: string; s: ort.InferenceSession }[] = [];
if (PROFILE !== '') {
  mkdirSync(PROFILE, { recursive: true });
  const create0 = ort.InferenceSession.create.bind(ort.InferenceSession);
  let k = 0;
  (ort.InferenceSession as { create: unknown }).create = async (bytes: Uint8Array, o: ort.InferenceSession.SessionOptions) => {
    const s = await create0(bytes, { ...o, enableProfiling: true, profileFilePrefix: `${PROFILE}/s${k++}` });
    sessions.push({ name: `s${k - 1}`, s });
    return s;
  };
}

const config = qwen2HalfBConfig(LAYERS);
const byKey = new Map(llamaParams(config).map((p) => [p.hfKey, p]));
const weights = new Map<string, FArray | QuantWeight>();
generateWeightsEach(config, 0, (k, a) => {
  const p = byKey.get(k)!;
  if (p.kind === 'linear') {
    const q = quantize(a, p.shape[0] as number, p.shape[1] as number, { bits: 4, zeroPoints: false });
    weights.set(k, KIND === 'fp32' ? dequantize(q) : q);
  } else weights.set(k, a);
});
const engine = Engine.fromWeights(config, (k) => weights.get(k)!, { dtype: 'float32', threads: 2, ...(KIND === 'int4-residuals' ? { recomputeAbove: SEQ } : {}), ...DQ });
weights.clear();
const adapter = engine.newAdapter({ r: 16, alpha: 32 }, 1);
const rng = new Rng(2);
for (const p of adapter.pairs) rng.fork(p.baseKey).fillNormal(p.b, 0.01);
const objectives = new ObjectiveRunner(presetConfig('balanced', { activeParams: 0.5e9, totalParams: 0.5e9, moe: false }));
const r = new Rng(100);
const tokens = Array.from({ length: SEQ }, () => Math.floor(r.uniform() * config.vocabSize));
await roundStep(engine, adapter, objectives, tokens); // sessions created
on = true;
const t = await timed(async () => {
  let loss = 0;
  for (let s = 0; s < STEPS; s++) loss = (await roundStep(engine, adapter, objectives, tokens)).loss;
  return loss;
});
on = false;
const total = t.wallS * 1000 / STEPS;
let inRuns = 0;
console.log(`${KIND}${DQ.dequantizeLayerMaxBytes === undefined ? '' : ` (dequantizeLayerMaxBytes ${DQ.dequantizeLayerMaxBytes})`}, ${LAYERS} layers, seq ${SEQ}: step ${total.toFixed(0)} ms (cpu/wall ${(t.cpuS / t.wallS).toFixed(2)}), loss ${t.value.toPrecision(8)}; load ${loadAverage()}`);
for (const [k, e] of [...acc].sort((a, b) => b[1].ms - a[1].ms)) {
  inRuns += e.ms / STEPS;
  console.log(`  ${k.padEnd(44)} ${String(e.n / STEPS).padStart(4)} runs ${(e.ms / STEPS).toFixed(0).padStart(6)} ms  ${(e.ms / STEPS / e.n * STEPS).toFixed(1).padStart(7)} ms/run`);
}
console.log(`  ${'outside ORT runs'.padEnd(44)}           ${(total - inRuns).toFixed(0).padStart(6)} ms`);
if (PROFILE !== '') {
  for (const { s } of sessions) await (s as unknown as { endProfiling(): void }).endProfiling();
}
await objectives.dispose();
await engine.close();
if (PROFILE !== '') {
  const { readdirSync } = await import('node:fs');
  for (const f of readdirSync(PROFILE).filter((x) => x.endsWith('.json'))) {
    const ev = JSON.parse(readFileSync(`${PROFILE}/${f}`, 'utf8')) as { cat: string; name: string; dur: number; args?: { op_name?: string } }[];
    const byOp = new Map<string, number>();
    let runs = 0;
    for (const e of ev) {
      if (e.cat === 'Session' && e.name === 'model_run') runs++;
      if (e.cat === 'Node' && e.name.endsWith('_kernel_time')) byOp.set(e.args?.op_name ?? '?', (byOp.get(e.args?.op_name ?? '?') ?? 0) + e.dur);
    }
    const tot = [...byOp.values()].reduce((a, b) => a + b, 0);
    if (tot < 1000) continue;
    console.log(`${f}: ${runs} runs, kernels ${(tot / 1000).toFixed(0)} ms: ${[...byOp].sort((a, b) => b[1] - a[1]).slice(0, 12).map(([o, d]) => `${o} ${(d / 1000).toFixed(0)}`).join(', ')}`);
  }
}
