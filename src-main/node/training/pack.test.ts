// A batch whose sequences share a leading run of ids runs it once (common/training/pack.ts, Driver.packedGrad): the
// step's loss, every LoRA gradient and each member's log-probs equal those of the same batch run one sequence at a
// time, for MIS-PO and KTO sequences, on every model family; a finite-difference check confirms the packed
// gradient on its own; and the step as the round calls it (trainStep with no options) packs.
//
// Tolerances. float64: 1e-10 of each tensor's largest magnitude (the two paths sum the same terms in another order
// and another padded length; float64's rounding is ~1e-16 a term). float32: 2e-5 of it, the training dtype's
// rounding (6e-8 a term) grown over the sums behind each value: the scores over up to 256 keys, the log-sum-exp over
// the ~151k-entry vocabulary, a gradient's sum over every row of the pack, in other orders and blockings.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdamW } from '../../common/engine/adamw.ts';
import type { LoraAdapter } from '../../common/engine/lora.ts';
import { Rng } from '../../common/engine/rng.ts';
import { Engine, adapterParams } from '../engine/engine.ts';
import { writeTinyModel, type TinyArch } from '../engine/tiny.ts';
import { ObjectiveRunner } from './objective-runner.ts';
import { batchGradient, newStepState, trainStep, type StepSequence } from './step.ts';

const root = mkdtempSync(path.join(tmpdir(), 'rein-pack-'));
const OPTS = { beta: 0.001, bandLow: 0.994, bandHigh: 1.002, drift: 'scale' as const, ratioClipLow: 0.5, ratioClipHigh: 2, ktoBeta: 0.1 };
const PREFIX = 150;
let objectives: ObjectiveRunner;
const engines = new Map<string, Engine>();

/** A tiny model of `arch` in `dtype`, loaded once. */
function tiny(arch: TinyArch, dtype: 'float32' | 'float64'): Engine {
  const key = `${arch}|${dtype}`;
  let e = engines.get(key);
  if (e === undefined) {
    const dir = path.join(root, arch);
    // A window of 24 positions: shorter than the prefix and than some suffixes, so it cuts both.
    writeTinyModel(dir, { arch, layers: 2, hidden: 16, heads: 2, kvHeads: 1, intermediate: 24, dtype: 'F32', std: 0.3, slidingWindow: 24, swaPattern: 2, attnSoftcap: 5, finalSoftcap: 10, overwrite: true });
    e = Engine.load(dir, { threads: 1, dtype });
    engines.set(key, e);
  }
  return e;
}

beforeAll(() => {
  objectives = new ObjectiveRunner(OPTS);
});
afterAll(async () => {
  await objectives.dispose();
  for (const e of engines.values()) await e.close();
  rmSync(root, { recursive: true, force: true });
});

/** Four sequences after one shared prefix: suffix lengths, and where each one's scored tokens start past it. */
const SHAPES = [
  { suffix: 12, own: 0 }, // the first scored token follows the prefix: the prefix's last row predicts it
  { suffix: 20, own: 5 },
  { suffix: 7, own: 2 },
  { suffix: 30, own: 0 },
] as const;

function ids(rng: Rng, n: number): number[] {
  return Array.from({ length: n }, () => 1 + Math.floor(rng.uniform() * 500));
}

/** The batch: MIS-PO with ±advantages and KTO desirable and not, some tokens masked, μ off the base's logprobs. */
async function batch(engine: Engine, seed: number): Promise<StepSequence[]> {
  const rng = new Rng(seed);
  const prefix = ids(rng, PREFIX);
  const out: StepSequence[] = [];
  for (const [k, sh] of SHAPES.entries()) {
    const tokens = [...prefix, ...ids(rng, sh.suffix)];
    const start = PREFIX + sh.own;
    const ref = await engine.logprobs(tokens, { start });
    const mask = tokens.slice(start).map((_, i) => (i % 5 === 3 ? 0 : 1));
    const mispo = k % 2 === 0;
    out.push({
      tokens,
      start,
      mask,
      ref,
      kind: mispo ? 'mispo' : 'kto',
      mu: mispo ? ref.map((x) => x - 0.05 + 0.1 * rng.uniform()) : null,
      advantage: k === 0 ? 1 : -0.6,
      desirable: k === 1,
      ktoWeight: 1,
    });
  }
  return out;
}

function adapterOf(engine: Engine, seed: number): LoraAdapter {
  const a = engine.newAdapter({ r: 4, alpha: 8 }, seed);
  // B ≠ 0, so the policy is off the base and A has a gradient too.
  const rng = new Rng(seed + 1);
  for (const p of a.pairs) for (let i = 0; i < p.b.length; i++) p.b[i] = 0.2 * rng.normal();
  return a;
}

/** Per gradient tensor, max |a − b| over its largest |b|. */
function relDiffs(a: readonly Float64Array[], b: readonly Float64Array[]): number[] {
  return b.map((t, i) => {
    let d = 0;
    let m = 0;
    t.forEach((v, j) => {
      d = Math.max(d, Math.abs(a[i]![j]! - v));
      m = Math.max(m, Math.abs(v));
    });
    expect(m).toBeGreaterThan(0);
    return d / m;
  });
}

describe('a shared prefix in the step', () => {
  for (const [dtype, tol] of [['float64', 1e-10], ['float32', 2e-5]] as const) {
    it(`gives the per-sequence step's loss, metrics and every LoRA gradient, MIS-PO and KTO (${dtype}, within ${tol})`, async () => {
      const engine = tiny('qwen2', dtype);
      const seqs = await batch(engine, 11);
      const adapter = adapterOf(engine, 3);
      const alone = await batchGradient(engine, adapter, objectives, seqs, newStepState(), undefined, { packSpan: 0 });
      const packed = await batchGradient(engine, adapter, objectives, seqs, newStepState(), undefined);
      expect(alone.runs).toBe(4);
      expect(packed.runs).toBe(1);
      expect(Math.abs(packed.loss - alone.loss)).toBeLessThanOrEqual(tol * Math.abs(alone.loss));
      expect(Math.abs(packed.kl - alone.kl)).toBeLessThanOrEqual(tol * Math.abs(alone.kl) + 1e-12);
      expect(packed.clipFraction).toBeCloseTo(alone.clipFraction, 12);
      expect(packed.tokens).toBe(alone.tokens);
      const d = relDiffs(packed.grads, alone.grads);
      expect(Math.max(...d), `per tensor ${d.map((x) => x.toExponential(1)).join(' ')}`).toBeLessThanOrEqual(tol);
    });
  }

  it('a finite difference of the packed loss matches its gradient (float64)', async () => {
    const engine = tiny('qwen2', 'float64');
    // One KTO sequence: z0 has no mismatched pair and stays put, so the loss is a function of the adapter alone.
    const seqs = (await batch(engine, 12)).map((s, k) => (k === 3 ? { ...s, kind: 'mispo' as const, mu: s.ref.map((x) => x - 0.02) } : s));
    const adapter = adapterOf(engine, 4);
    // MIS-PO's band scale is a detached function of the policy (objectives.ts): a finite difference would see it move.
    // A band and a clip far wider than these ratios keep it at 1 and the loss smooth.
    const fdObjectives = new ObjectiveRunner({ ...OPTS, bandLow: 0.01, bandHigh: 100, ratioClipLow: 0.01, ratioClipHigh: 100 });
    const loss = async (): Promise<number> => (await batchGradient(engine, adapter, fdObjectives, seqs, newStepState())).loss;
    const g = await batchGradient(engine, adapter, fdObjectives, seqs, newStepState());
    expect(g.runs).toBe(1);
    const params = adapterParams(adapter);
    // The largest entry of an A and of a B tensor, in the first and the last layer.
    const picks = [0, 1, params.length - 2, params.length - 1].map((t) => {
      let j = 0;
      g.grads[t]!.forEach((v, i) => {
        if (Math.abs(v) > Math.abs(g.grads[t]![j]!)) j = i;
      });
      return [t, j] as const;
    });
    for (const [t, j] of picks) {
      const p = params[t]!;
      const x = p[j]!;
      // The adapter is float32: the step actually taken is the rounded one.
      p[j] = x + 1e-3;
      const up = p[j]! - x;
      const lUp = await loss();
      p[j] = x - 1e-3;
      const down = p[j]! - x;
      const lDown = await loss();
      p[j] = x;
      const fd = (lUp - lDown) / (up - down);
      expect(Math.abs(fd - g.grads[t]![j]!), `tensor ${t} entry ${j}: fd ${fd} grad ${g.grads[t]![j]}`).toBeLessThanOrEqual(1e-4 * Math.abs(g.grads[t]![j]!));
    }
    await fdObjectives.dispose();
  });

  it('trainStep packs as the round calls it, and takes the per-sequence step', async () => {
    const engine = tiny('qwen2', 'float32');
    const seqs = await batch(engine, 13);
    const a = adapterOf(engine, 5);
    const b = structuredClone(a);
    const o = { maxGradNorm: 1 };
    const ma = await trainStep(engine, a, new AdamW(adapterParams(a), { lr: 1e-2 }), objectives, seqs, newStepState(), o);
    const mb = await trainStep(engine, b, new AdamW(adapterParams(b), { lr: 1e-2 }), objectives, seqs, newStepState(), { ...o, packSpan: 0 });
    expect(ma.runs).toBe(1);
    expect(mb.runs).toBe(4);
    expect(Math.abs(ma.gradNorm - mb.gradNorm)).toBeLessThanOrEqual(2e-5 * mb.gradNorm);
    // AdamW's first step moves each entry by about lr·sign(g): equal where the gradients are.
    const pa = adapterParams(a);
    const pb = adapterParams(b);
    let moved = 0;
    pb.forEach((t, i) => t.forEach((v, j) => (moved = Math.max(moved, Math.abs(pa[i]![j]! - v)))));
    expect(moved).toBeLessThan(1e-4);
  });
});

describe('a pack on every family', () => {
  const ARCHS: TinyArch[] = ['llama', 'qwen3', 'mistral', 'gemma2', 'gemma3', 'qwen3moe'];
  for (const arch of ARCHS) {
    it(`${arch}: each member's log-probs and the summed LoRA gradient equal the lone runs' (float64)`, async () => {
      const engine = tiny(arch, 'float64');
      const seqs = await batch(engine, 21);
      const adapter = adapterOf(engine, 6);
      const d = engine.driver;
      const lps = await d.packedLogprobs(PREFIX, seqs, adapter);
      for (const [k, s] of seqs.entries()) {
        const alone = await d.logprobs(s.tokens, s.start, adapter);
        expect(lps[k]!.length).toBe(alone.length);
        lps[k]!.forEach((v, i) => expect(Math.abs(v - alone[i]!)).toBeLessThan(1e-10));
      }
      // Any cotangent will do: a fixed one per token.
      const cot = (logp: Float64Array, k: number): Float64Array => logp.map((_, i) => Math.sin(1 + k + i));
      const packed = await d.packedGrad(PREFIX, seqs, adapter, (logps) => logps.map(cot));
      const sum = adapter.pairs.flatMap((p) => [new Float64Array(p.a.length), new Float64Array(p.b.length)]);
      for (const [k, s] of seqs.entries()) {
        const g = await d.grad(s.tokens, s.start, adapter, (logp) => cot(logp, k));
        g.grads.forEach((p, i) => {
          p.a.forEach((v, j) => (sum[2 * i]![j] += v));
          p.b.forEach((v, j) => (sum[2 * i + 1]![j] += v));
        });
      }
      const rel = relDiffs(packed.grads.flatMap((p) => [Float64Array.from(p.a), Float64Array.from(p.b)]), sum);
      expect(Math.max(...rel)).toBeLessThanOrEqual(1e-10);
    });
  }
});
