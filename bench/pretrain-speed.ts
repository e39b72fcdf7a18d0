// nice -n 10 node bench/pretrain-speed.ts [sizes=4x256,6x256,8x320] [lengths=128,256,512] [reps=3] [threads=1]
// The small LM's pretraining speed per model size: one fullGrad (forward + backward over every weight, single-threaded
// ORT as the build runs it) per sequence length, plus the per-step optimizer cost (gradient sums and AdamW over every
// parameter). The build script's header derives its size and step count from these figures.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AdamW } from '../src-main/common/engine/adamw.ts';
import { modelParams } from '../src-main/common/engine/families/registry.ts';
import { Rng } from '../src-main/common/engine/rng.ts';
import { Engine } from '../src-main/node/engine/engine.ts';
import { writeSmallLm } from '../src-main/node/demo/small-lm.ts';
import { benchArgs } from './args.ts';

const args = benchArgs();
const sizes = args.str('sizes', '4x256,6x256,8x320').split(',').map((s) => s.split('x').map(Number) as [number, number]);
const lengths = args.str('lengths', '128,256,512').split(',').map(Number);
const reps = args.num('reps', 3);
const threads = args.num('threads', 1);
const root = mkdtempSync(path.join(os.tmpdir(), 'rein-pretrain-speed-'));
try {
  for (const [layers, hidden] of sizes) {
    const w = writeSmallLm(path.join(root, `${layers}x${hidden}`), { layers, hidden, tokenizerDialogues: 300 });
    const engine = Engine.load(w.dir, { threads, buckets: lengths });
    const rng = new Rng(1);
    const cells: string[] = [];
    for (const T of lengths) {
      const ids = Array.from({ length: T }, () => Math.floor(rng.uniform() * (w.vocabSize - 3)));
      await engine.driver.fullGrad(ids, 1, (lp) => new Float64Array(lp.length).fill(-1)); // sessions built, warm
      const t0 = performance.now();
      for (let r = 0; r < reps; r++) await engine.driver.fullGrad(ids, 1, (lp) => new Float64Array(lp.length).fill(-1));
      const ms = (performance.now() - t0) / reps;
      cells.push(`T=${T}: ${ms.toFixed(0)} ms (${((ms / T) * 1000).toFixed(0)} µs/token)`);
    }
    const params = modelParams(engine.config);
    const wts = engine.driver.weights;
    const arrays = params.map((p) => (p.layer !== null ? wts.layers[p.layer]![p.name]! : p.name === 'embed_tokens' ? wts.embed : p.name === 'norm' ? wts.norm : wts.lmHead)) as Float32Array[];
    const opt = new AdamW(arrays, { lr: 1e-9 });
    const grads = arrays.map((a) => new Float64Array(a.length));
    const t1 = performance.now();
    for (let r = 0; r < reps; r++) opt.step(grads, 1e-9);
    const optMs = (performance.now() - t1) / reps;
    console.log(`${layers}x${hidden} (${threads} ORT thread${threads === 1 ? '' : 's'}): ${w.params} params, vocab ${w.vocabSize}; fullGrad ${cells.join(', ')}; AdamW step ${optMs.toFixed(0)} ms`);
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
