// npm-less: node bench/round-time.ts [--seq T] [--layers N] [--steps S] [--batch B] [--turns N]
// The time of one training round on a Qwen2-0.5B-shaped random model (hidden 896, 24 layers, 14/2 heads, FFN 4864,
// vocab 151936, tied), through the same engine calls round.ts makes: one base forward per rated turn (engine.logprobs,
// adapter off; cached for the round) and steps × batch policy forward+backward passes (driver.grad, LoRA r = 16 on
// the 7 projections). Round ≈ turns × t_ref + steps × batch × t_grad (+ the gate's few forwards). Printed with CPU/wall
// beside each figure: the two cores here are shared, and the load average says how busy they were.
import { Rng } from '../src-main/common/engine/rng.ts';
import { Engine } from '../src-main/node/engine/engine.ts';
import { generateWeights, loadAverage, median, qwen2HalfBConfig, timed } from './harness.ts';
import { benchArgs } from './args.ts';

const args = benchArgs();
const flag = args.num;
const SEQ = flag('seq', 512);
const STEPS = flag('steps', 32);
const BATCH = flag('batch', 8);
const TURNS = flag('turns', 32);
const REPS = flag('reps', 2);

const config = qwen2HalfBConfig(flag('layers', 24));

const weights = generateWeights(config, 0);
const engine = Engine.fromWeights(config, (k) => weights.get(k)!, { threads: 2 });
const adapter = engine.newAdapter({ r: 16, alpha: 32 }, 0);
for (const pair of adapter.pairs) new Rng(1).fork(pair.baseKey).fillNormal(pair.b, 0.01);
const rng = new Rng(3);
const tokens = Array.from({ length: SEQ }, () => Math.floor(rng.uniform() * config.vocabSize));
const start = Math.floor(SEQ / 2);
console.log(`round-time: Qwen2-0.5B shape (${config.numLayers} layers), seq ${SEQ} (response = last ${SEQ - start}), 2 threads; load ${loadAverage()}`);
const warm = await timed(() => engine.driver.grad(tokens, start, adapter, async (lp) => lp.map(() => 1 / lp.length)));
console.log(`first policy step (session creation included): ${warm.wallS.toFixed(1)} s`);
const ref: number[] = [];
const grad: number[] = [];
const cpu: number[] = [];
for (let r = 0; r < REPS; r++) {
  const a = await timed(() => engine.logprobs(tokens, { start, adapter: null }));
  const b = await timed(() => engine.driver.grad(tokens, start, adapter, async (lp) => lp.map(() => 1 / lp.length)));
  ref.push(a.wallS);
  grad.push(b.wallS);
  cpu.push(b.cpuS / b.wallS);
  console.log(`  rep ${r + 1}: base forward ${a.wallS.toFixed(2)} s (cpu/wall ${(a.cpuS / a.wallS).toFixed(2)}), policy forward+backward ${b.wallS.toFixed(2)} s (cpu/wall ${(b.cpuS / b.wallS).toFixed(2)})`);
}
const tRef = median(ref);
const tGrad = median(grad);
const round = TURNS * tRef + STEPS * BATCH * tGrad;
console.log(`round of ${TURNS} turns, ${STEPS} steps × ${BATCH}: ${TURNS} × ${tRef.toFixed(2)} s + ${STEPS * BATCH} × ${tGrad.toFixed(2)} s = ${(round / 60).toFixed(1)} min (load ${loadAverage()})`);
await engine.close();
