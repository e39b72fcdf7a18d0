// Builds the small LM (src-main/node/demo): tokenizer, pretraining through the engine, then 200 sampled
// answers rated by the corpus's style detectors. Writes the model to resources/small-lm (or argv[2]) with BUILD.json:
// the settings, the losses, the measured rates and the sha256 of model.safetensors, so a rebuild can be compared.
// Usage: [SMALL_LM_INSTRUCTED=share] npm run build:small-lm [-- outDir] ; deterministic for a seed on one machine (single-threaded ORT).
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Engine } from '../src-main/node/engine/engine.ts';
import { measureStyles, sampleAnswers } from '../src-main/node/demo/evaluate.ts';
import { pretrainSmallLm } from '../src-main/node/demo/pretrain.ts';

const out = path.resolve(process.argv[2] ?? 'resources/small-lm');
const instructed = Number(process.env.SMALL_LM_INSTRUCTED ?? 0);
const settings = { seed: 0, steps: Number(process.env.SMALL_LM_STEPS ?? 600), batch: 8, ...(instructed > 0 ? { instructed } : {}) };
const r = await pretrainSmallLm(out, {
  ...settings,
  overwrite: true,
  onProgress: (p) => {
    if (p.step === 1 || p.step % 25 === 0 || p.step === p.steps) {
      console.log(`step ${p.step}/${p.steps}  loss ${p.loss.toFixed(3)}  ${p.elapsedS.toFixed(0)} s  ETA ${p.etaS.toFixed(0)} s`);
    }
  },
});
const sha256 = createHash('sha256').update(readFileSync(path.join(out, 'model.safetensors'))).digest('hex');
console.log(`${r.params} parameters, vocabulary ${r.vocabSize}, loss ${r.firstLoss.toFixed(3)} → ${r.lastLoss.toFixed(3)}, sha256 ${sha256}`);
const engine = Engine.load(out, { threads: 1 });
const answers = await sampleAnswers(engine, 200, 1);
const rates = measureStyles(answers);
for (const s of rates) {
  console.log(`${s.name.padEnd(9)} documented ${(s.documented * 100).toFixed(0).padStart(3)}%  sampled ${(s.measured * 100).toFixed(1).padStart(5)}%  95% CI [${(s.ci[0] * 100).toFixed(1)}, ${(s.ci[1] * 100).toFixed(1)}]`);
}
writeFileSync(path.join(out, 'BUILD.json'), JSON.stringify({ ...settings, ...r, dir: undefined, sha256, rates, sample: answers.slice(0, 5) }, null, 2) + '\n');
