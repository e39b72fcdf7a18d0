// node bench/learning-profile.ts [key=value ...] — the training round's loop (round.ts: MIS-PO through the driver,
// cached base logprobs, the round's step in node/training/step.ts, shuffled epochs) in one process on the demo model,
// with what round.ts does not print: ρ = exp(π − μ) min/geometric mean/max and the clip fraction per step, the
// baseline variants (seeded EMA, the bias-corrected one, the mean), the good/bad turns' mean log-ratio to μ after the
// round, the KL at the first answer position, and the held-out preferred rate before and after; rounds=R re-samples
// N turns from the adapter R times. README "Training rounds".
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AdamW } from '../src-main/common/engine/adamw.ts';
import { Rng } from '../src-main/common/engine/rng.ts';
import { emaFold, advantage } from '../src-main/common/rewards.ts';
import { Engine, adapterParams } from '../src-main/node/engine/engine.ts';
import { writeDemoModel } from '../src-main/node/training/demo-model.ts';
import { ObjectiveRunner } from '../src-main/node/training/objective-runner.ts';
import { newStepState, trainStep, type StepSequence } from '../src-main/node/training/step.ts';
import { preferredRate, sampleTurns } from '../src-main/node/training/synthetic.ts';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.split('=')) as [string, string][]);
const num = (k: string, d: number): number => (args[k] !== undefined ? Number(args[k]) : d);
const FIRST = new Set((args.first ?? 'yes,sure,ok').split(','));
const CODE = new Set(['code', 'bug', 'fix', 'test', 'run', 'file', 'line', 'error', 'build', 'merge', 'commit', 'push', 'pull', 'branch', 'deploy', 'check', 'read', 'write', 'add', 'remove', 'update', 'change', ...(args.extra ?? '').split(',').filter(Boolean)]);
const rule = args.rule === 'nocode' ? (text: string): boolean => !text.split(/\s+/).filter(Boolean).slice(0, Number(args.k ?? 3)).some((w) => CODE.has(w)) : args.rule === 'first' ? (text: string): boolean => FIRST.has(text.split(/\s+/).filter(Boolean)[0] ?? '') : args.rule === 'short4' ? (text: string): boolean => { const n = text.split(/\s+/).filter(Boolean).length; return n >= 1 && n <= 4; } : (args.rule ?? 'polite') === 'polite' ? (text: string): boolean => /\b(please|thanks)\b/.test(text) : (text: string): boolean => text.split(/\s+/).filter(Boolean).length <= Number(args.words ?? 3);
const cfg = {
  lr: num('lr', 0.005), steps: num('steps', 48), batchSize: num('batch', 8), beta: num('beta', 0.001),
  bandLow: num('bandLow', 0.994), bandHigh: num('bandHigh', 10), drift: (args.drift ?? 'scale') as 'scale' | 'reject',
  ratioClipLow: num('clipLow', 0.5), ratioClipHigh: num('clipHigh', 20), ktoBeta: 0.1,
  rank: num('rank', 16), maxGradNorm: num('gn', 1),
};
const N = num('n', 32);
const H = num('held', 64);
const baselineMode = args.baseline ?? 'ema';
const root = mkdtempSync(path.join(os.tmpdir(), 'p13-'));
const engine = Engine.load(writeDemoModel(path.join(root, 'm'), { seed: num('model', 0) }).dir, { threads: 1 });
const seeds = (args.seeds ?? '1,2,3').split(',').map(Number);
for (const seed of seeds) {
  const t0 = performance.now();
  const before = preferredRate(await sampleTurns(engine, H, 10_000 + seed), rule);
  const R = num('rounds', 1);
  const adapter = engine.newAdapter({ r: cfg.rank, alpha: 2 * cfg.rank }, 0);
  const allRewards: number[] = [];
  let seqs: { tokens: number[]; start: number; mu: Float64Array; adv: number; good: boolean }[] = [];
  let log: string[] = [];
  for (let round = 0; round < R; round++) {
  const turns = await sampleTurns(engine, N, seed + 1000 * round, round === 0 ? null : adapter);
  const rewards = turns.map((t) => (rule(t.text) ? 1 : -1));
  allRewards.push(...rewards);
  const debiased = (() => { let m = 0; let w = 0; for (const r of allRewards) { m = 0.99 * m + 0.01 * r; w = 0.99 * w + 0.01; } return m / w; })();
  const baseline = baselineMode === 'ema' ? emaFold(null, allRewards)! : baselineMode === 'debiased' ? debiased : Number(baselineMode);
  seqs = turns.map((t, i) => ({ tokens: [...t.promptIds, ...t.tokens], start: t.promptIds.length, mu: Float64Array.from(t.logprobs), adv: advantage(rewards[i]!, baseline, 2), good: rewards[i]! > 0 }));
  const refs: Float64Array[] = [];
  let maxd = 0;
  for (const s of seqs) { const r = await engine.logprobs(s.tokens, { start: s.start, adapter: null }); refs.push(r); for (let i = 0; i < r.length; i++) maxd = Math.max(maxd, Math.abs(r[i]! - s.mu[i]!)); }
  const good = rewards.filter((r) => r > 0).length;
  console.log(`seed ${seed}: base ${before.rate.toFixed(3)}; train ${good}/${N} good; baseline ${baseline.toFixed(3)} (ema ${emaFold(null, rewards)!.toFixed(3)} debiased ${debiased.toFixed(3)} mean ${(rewards.reduce((a, b) => a + b, 0) / N).toFixed(3)}); max|ref-mu| ${maxd.toExponential(2)}`);
  const opt = new AdamW(adapterParams(adapter), { lr: cfg.lr, weightDecay: 0 });
  const obj = new ObjectiveRunner(cfg);
  const batchSeqs: StepSequence[] = seqs.map((s, k) => ({ tokens: s.tokens, start: s.start, mask: s.tokens.slice(s.start).map(() => 1), ref: refs[k]!, kind: 'mispo', mu: s.mu, advantage: s.adv, desirable: s.good, ktoWeight: 1 }));
  const rng = new Rng(seed + 7919);
  const state = newStepState();
  let order: number[] = [];
  log = [];
  for (let step = 1; step <= cfg.steps; step++) {
    const batch: StepSequence[] = [];
    while (batch.length < Math.min(cfg.batchSize, seqs.length)) { if (order.length === 0) { order = Array.from({ length: seqs.length }, (_, i) => i); for (let i = order.length - 1; i > 0; i--) { const j = Math.floor(rng.uniform() * (i + 1)); [order[i], order[j]] = [order[j]!, order[i]!]; } } batch.push(batchSeqs[order.pop()!]!); }
    // The round's step (node/training/step.ts), as round.ts runs it.
    const m = await trainStep(engine, adapter, opt, obj, batch, state, { maxGradNorm: cfg.maxGradNorm });
    if (step === 1 || step % 8 === 0) log.push(`  step ${step}: loss ${m.loss.toFixed(4)} kl ${m.kl.toFixed(4)} clip ${m.clipFraction.toFixed(2)} gn ${m.gradNorm.toFixed(3)} rho min ${m.ratio!.min.toFixed(2)} geo ${m.ratio!.geoMean.toFixed(2)} max ${m.ratio!.max.toFixed(2)}`);
  }
  await obj.dispose();
  }
  // ratio of good/bad training tokens at the end
  let lrGood = 0, nGood = 0, lrBad = 0, nBad = 0;
  for (const s of seqs) { const lp = await engine.logprobs(s.tokens, { start: s.start, adapter }); const m = lp.reduce((a, b, i) => a + b - s.mu[i]!, 0) / lp.length; if (s.good) { lrGood += m; nGood++; } else { lrBad += m; nBad++; } }
  let klp = 0;
  const heldTurns = await sampleTurns(engine, 32, 10_000 + seed);
  for (const t of heldTurns) { const p = await engine.driver.nextLogprobs(t.promptIds, adapter); const q = await engine.driver.nextLogprobs(t.promptIds, null); let k = 0; for (let i = 0; i < p.length; i++) k += Math.exp(p[i]!) * (p[i]! - q[i]!); klp += k / heldTurns.length; }
  const after = preferredRate(await sampleTurns(engine, H, 10_000 + seed, adapter), rule);
  if (args.quiet === undefined) console.log(log.join('\n'));
  console.log(`  => KL@0 ${klp.toFixed(3)} after ${after.rate.toFixed(3)} [${after.ci.map((x) => x.toFixed(2))}]  mean log-ratio good ${(lrGood / nGood).toFixed(2)} bad ${(lrBad / nBad).toFixed(2)}  ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
await engine.close();
rmSync(root, { recursive: true, force: true });
