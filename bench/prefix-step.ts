// npm-less: node bench/prefix-step.ts [--turns 32] [--prefix 1700] [--reply 300] [--threads 2] [--reps 1]
// One training step (training/step.ts batchGradient, the round's step) over `turns` Claude-shaped agent turns on the
// small LM: a shared `prefix` of text ids (Claude Code's system prompt and tools are ~7.6k tokens; the default, 1700,
// is the largest whose turns fit the balanced preset's maxTokens of 2048 with the reply), each turn's own short
// prompt, then a `reply`-token answer trained with MIS-PO (advantage ±1, μ a little off the base's logprobs). The
// same batch runs packed (the prefix once per pack, common/training/pack.ts) and one sequence at a time (packSpan 0),
// alternating, `reps` times each after a warm-up, in one process: the machine is shared, so the ratio is the figure,
// not the times.
// Prints both times, their ratio, the runs each took, the peak RSS after one sequence alone and after a pack, and how
// far the packed loss and gradient are from the per-sequence ones.
import { Rng } from '../src-main/common/engine/rng.ts';
import { SMALL_LM_DIR } from '../src-main/node/demo/small-lm.ts';
import { Engine } from '../src-main/node/engine/engine.ts';
import { ObjectiveRunner } from '../src-main/node/training/objective-runner.ts';
import { batchGradient, newStepState, type BatchGradient, type StepSequence } from '../src-main/node/training/step.ts';
import { benchArgs } from './args.ts';
import { loadAverage, median, textIds, timed } from './harness.ts';

const args = benchArgs();
const TURNS = args.num('turns', 32);
const PREFIX = args.num('prefix', 1700);
const REPLY = args.num('reply', 300);
const THREADS = args.num('threads', 2);
const REPS = args.num('reps', 1);

const engine = Engine.load(SMALL_LM_DIR, { threads: THREADS });
const tok = engine.tokenizer!;
const rng = new Rng(5);
const shared = textIds(tok, rng, PREFIX);
const members = Array.from({ length: TURNS }, (_, i) => {
  const own = tok.encodeChat([{ role: 'user', content: `task ${i}: fix the failing test` }], { addGenerationPrompt: true });
  const context = [...shared, ...own];
  return { tokens: [...context, ...textIds(tok, rng, REPLY)], start: context.length };
});
// The base's logprobs of every reply, from one packed forward (the bench times the step, not this).
const refs = await engine.driver.packedLogprobs(PREFIX, members, null);
const batch: StepSequence[] = members.map((m, i) => ({
  ...m,
  mask: m.tokens.slice(m.start).map(() => 1),
  ref: refs[i]!,
  kind: 'mispo',
  mu: refs[i]!.map((x) => x - 0.02 + 0.04 * rng.uniform()),
  advantage: i % 2 === 0 ? 1 : -1,
  desirable: i % 2 === 0,
  ktoWeight: 1,
}));
const objectives = new ObjectiveRunner({ beta: 0.001, bandLow: 0.5, bandHigh: 2, drift: 'scale', ratioClipLow: 0.5, ratioClipHigh: 2, ktoBeta: 0.1 });
const adapter = engine.newAdapter({ r: 8, alpha: 16 }, 1);

const n = batch[0]!.tokens.length;
console.log(`prefix-step: small LM, ${TURNS} turns of ${n} tokens (shared prefix ${PREFIX}, reply ${REPLY}), ${THREADS} threads; load ${loadAverage()}`);
const times: Record<'packed' | 'alone', number[]> = { packed: [], alone: [] };
const last: Partial<Record<'packed' | 'alone', BatchGradient>> = {};
// Warm-up: ORT builds a session per new shape. One sequence alone, and a pack of two through the driver (the step
// would run two alone): with the turns' lengths, their padded shapes are those of the timed steps.
// The peak RSS after each (a high-water mark: the second figure is the pack's only where it is the larger).
const gib = (): string => (process.resourceUsage().maxRSS / 2 ** 20).toFixed(2);
const warm = await timed(async () => {
  await batchGradient(engine, adapter, objectives, batch.slice(0, 1), newStepState(), undefined, { packSpan: 0 });
  const alone = gib();
  await engine.driver.packedGrad(PREFIX, batch.slice(0, 2), adapter, (logps) => logps.map((l) => l.map(() => 0)));
  return alone;
});
console.log(`  warm-up: ${warm.wallS.toFixed(1)} s; peak RSS ${warm.value} GiB after one sequence alone, ${gib()} GiB after a pack`);
for (let r = 0; r < REPS; r++) {
  for (const kind of ['alone', 'packed'] as const) {
    const t = await timed(() => batchGradient(engine, adapter, objectives, batch, newStepState(), undefined, { packSpan: kind === 'packed' ? undefined : 0 }));
    times[kind].push(t.wallS);
    last[kind] = t.value;
    console.log(`  ${kind}: ${t.wallS.toFixed(1)} s, ${t.value.runs} runs; load ${loadAverage()}`);
  }
}
const a = last.alone!;
const p = last.packed!;
let gradDiff = 0;
let gradMax = 0;
a.grads.forEach((g, i) => g.forEach((v, j) => {
  gradDiff = Math.max(gradDiff, Math.abs(p.grads[i]![j]! - v));
  gradMax = Math.max(gradMax, Math.abs(v));
}));
const [tp, ta] = [median(times.packed), median(times.alone)];
console.log(`per-sequence ${ta.toFixed(1)} s (${a.runs} runs) | packed ${tp.toFixed(1)} s (${p.runs} runs) | per-sequence/packed ${(ta / tp).toFixed(2)}x`);
console.log(`packed vs per-sequence: loss ${p.loss.toPrecision(8)} vs ${a.loss.toPrecision(8)} (|diff| ${Math.abs(p.loss - a.loss).toExponential(1)}), gradient max |diff| ${gradDiff.toExponential(2)} of max |g| ${gradMax.toExponential(2)}`);
await objectives.dispose();
await engine.close();
