// Builds the small LM (src-main/node/demo): a byte-level BPE tokenizer and a Llama pretrained through the engine on
// the prompt-conditional corpus (demo/prompted.ts), then evaluated on answers sampled by llama.cpp: the style rates
// (corpus.ts STYLES) and the prompt-feature follow rates (prompted.ts PROMPT_FEATURES) on held-out compositions.
//
//   npm run build:small-lm -- [--preset full|quick|smoke] [--out resources/small-lm] [--checkpoints DIR] [--steps N]
//                             [--until STEP] [--eval N] [--peek]
//
// Resumable: training runs in DIR/model with checkpoints in DIR (default `<out>.checkpoints`); run the same command
// again after a kill and it resumes from the newest checkpoint. --until stops after that step (checkpointed). Only
// when every step is done is the model evaluated, BUILD.json written and the folder copied to --out (staged, then
// renamed), so the committed model stays in place while a build runs. Deterministic for a seed on one machine
// (single-threaded ORT); BUILD.json records the corpus hash, settings, losses, time, the weights' sha256 and rates.
// --peek evaluates the newest checkpoint (a running build's progress) and exits, training nothing.
//
// Size and steps. bench/pretrain-speed.ts (fullGrad of one sequence, single-threaded ORT, the 2-core machine shared
// with other jobs, load average ~4), ms per sequence at T = 64 / 128 / 512 tokens, and the AdamW step:
//   4×256 (3.3M params)   94 / 121 / 459 ms, AdamW 109 ms
//   6×256 (4.9M)          88 / 143 / 673 ms, AdamW  78 ms     (an earlier run: 142 ms at 256, 323 ms at 512)
//   8×320 (10.1M)        195 / 357 / 795 ms, AdamW 147 ms     (an earlier run: 1564 ms at 512)
// The figures swing 2× with the machine's load. Up to 128 tokens the per-call cost (a session run per layer,
// gradient copies) is most of the time, so dialogues (~130 tokens) are packed into sequences of 512. A second ORT
// thread made 6×256 slower on the shared machine (1196 ms at 512), so one thread, which also keeps runs
// deterministic. Full preset: 6 layers × 256 (4.97M params with the 1024-token vocabulary, 10 MB in f16), 2 packed
// sequences of 512 (~920 tokens) a step: 2 × 0.3-0.7 s + ~0.15 s of gradient sums and AdamW ≈ 0.8-1.5 s a step, so
// 7000 steps (6.4M tokens) take ~2-3 hours on an otherwise idle core. (Measured through this script while the
// machine ran ~30 other processes, load average 25-34: 8 s a step, ETA 16 h; the ETA it prints tracks the load.)
// 6.4M tokens is ~1.3 per parameter, little by Chinchilla's measure, but the corpus is a closed grammar of a few
// thousand distinct sentences, and a 0.9M model fit the old corpus on 0.3M tokens. 8×320 would see about half the
// tokens in the same time, and 4×256 is hardly faster per token, so 6×256 is the most model for the time.
// The engine's own path (Driver.fullGrad) is the tool: npm and Debian packages only (no PyTorch), deterministic,
// and the same graphs that serve and fine-tune the model; a hand-written trainer would be a second engine.
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { corpus, featureRates, HELD_OUT } from '../src-main/node/demo/prompted.ts';
import { measureStyles, samplePromptedAnswers } from '../src-main/node/demo/evaluate.ts';
import { newestCheckpoint, pretrainSmallLm, type PretrainOptions } from '../src-main/node/demo/pretrain.ts';
import { renderDialogue } from '../src-main/node/demo/small-lm.ts';

const FULL: PretrainOptions = { corpus: 'prompted', dtype: 'F16', seed: 0, hidden: 256, layers: 6, seqLen: 512, batch: 2, steps: 7000, lr: 2e-3, warmup: 200, checkpointEvery: 100 };
const SMOKE: PretrainOptions = { corpus: 'prompted', dtype: 'F16', seed: 0, hidden: 64, layers: 2, seqLen: 256, batch: 2, steps: 300, lr: 3e-3, warmup: 30, checkpointEvery: 50, tokenizerDialogues: 2000 };
// A quarter-hour build of the old model's size on the new corpus: whether the corpus is learnable, before hours.
const QUICK: PretrainOptions = { corpus: 'prompted', dtype: 'F16', seed: 0, hidden: 128, layers: 4, seqLen: 512, batch: 2, steps: 1500, lr: 3e-3, warmup: 100, checkpointEvery: 100 };
const PRESETS: Record<string, { o: PretrainOptions; evalN: number }> = { full: { o: FULL, evalN: 400 }, quick: { o: QUICK, evalN: 200 }, smoke: { o: SMOKE, evalN: 100 } };

const { values: a } = parseArgs({
  options: {
    preset: { type: 'string', default: 'full' },
    out: { type: 'string', default: 'resources/small-lm' },
    checkpoints: { type: 'string' },
    steps: { type: 'string' },
    until: { type: 'string' },
    eval: { type: 'string' },
    peek: { type: 'boolean', default: false },
  },
});
const preset = PRESETS[a.preset!];
if (preset === undefined) throw new Error(`--preset must be one of ${Object.keys(PRESETS).join(', ')}, got ${a.preset}`);
const int = (name: string, v: string | undefined): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${v}`);
  return n;
};
const out = path.resolve(a.out!);
const root = path.resolve(a.checkpoints ?? `${out}.checkpoints`);
const work = path.join(root, 'model');
const o: PretrainOptions = { ...preset.o, ...(a.steps === undefined ? {} : { steps: int('steps', a.steps) }) };
const evalN = int('eval', a.eval) ?? preset.evalN;

// The corpus as this build reads it: its first 2000 training dialogues and the held-out compositions.
const corpusSha256 = createHash('sha256')
  .update(corpus(2000, o.seed ?? 0).map(renderDialogue).join(''))
  .update([...HELD_OUT].sort().join(','))
  .digest('hex');
const fmt = (s: number): string => `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
console.log(`small LM build (${a.preset}): ${JSON.stringify(o)}; checkpoints in ${root}; corpus sha256 ${corpusSha256.slice(0, 16)}…`);
/** Answers sampled by llama.cpp to held-out and training compositions, rated by the style and prompt-feature detectors. */
async function evaluate(dir: string, n: number) {
  const held = await samplePromptedAnswers(dir, n, 1, 'held-out');
  const train = await samplePromptedAnswers(dir, Math.round(n / 2), 2, 'train');
  const styles = measureStyles(held.map((x) => x.answer));
  const features = featureRates(held);
  const featuresTrain = featureRates(train);
  for (const s of styles) console.log(`style ${s.name.padEnd(9)} documented ${(s.documented * 100).toFixed(0).padStart(3)}%  sampled ${(s.measured * 100).toFixed(1).padStart(5)}%  95% CI [${(s.ci[0] * 100).toFixed(1)}, ${(s.ci[1] * 100).toFixed(1)}]`);
  features.forEach((f, i) => console.log(`prompt feature ${f.name.padEnd(14)} held-out ${f.followed}/${f.n} (${(f.rate * 100).toFixed(1)}%)  training compositions ${(featuresTrain[i]!.rate * 100).toFixed(1)}%`));
  return { held, styles, features, featuresTrain };
}

/** Evaluates the newest checkpoint: a running build's progress. */
async function peek(): Promise<void> {
  const ck = newestCheckpoint(root);
  if (ck === null || !existsSync(work)) throw new Error(`no checkpoint in ${root} to peek at`);
  const tmp = mkdtempSync(path.join(tmpdir(), 'rein-small-lm-peek-'));
  try {
    cpSync(work, tmp, { recursive: true });
    cpSync(path.join(ck.dir, 'model.safetensors'), path.join(tmp, 'model.safetensors'));
    const st = JSON.parse(readFileSync(path.join(ck.dir, 'state.json'), 'utf8')) as { losses: number[]; elapsedS: number };
    const last = st.losses.slice(-50);
    console.log(`checkpoint ${ck.dir}: step ${ck.step}, mean loss of its last ${last.length} steps ${(last.reduce((x, y) => x + y, 0) / last.length).toFixed(3)}, ${fmt(st.elapsedS)} trained; sampling ${evalN} held-out and ${Math.round(evalN / 2)} training answers`);
    await evaluate(tmp, evalN);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Trains (or resumes), then evaluates, records BUILD.json and copies the model to --out. */
async function build(): Promise<void> {
  const r = await pretrainSmallLm(work, {
    ...o,
    overwrite: true,
    checkpoints: root,
    until: int('until', a.until),
    log: (l) => console.log(l),
    onProgress: (p) => {
      if (p.step % 10 === 0 || p.step === p.steps) {
        console.log(`step ${p.step}/${p.steps}  loss ${p.loss.toFixed(3)}  ${p.tokens} tokens  ${fmt(p.elapsedS)} trained  ETA ${fmt(p.etaS)}`);
      }
    },
  });
  if (r.step < (o.steps ?? 0)) {
    console.log(`stopped at step ${r.step} (--until); run the same command to go on`);
  } else {
    const sha256 = createHash('sha256').update(readFileSync(path.join(work, 'model.safetensors'))).digest('hex');
    console.log(`${r.params} parameters, vocabulary ${r.vocabSize}, ${r.tokens} tokens, loss ${r.firstLoss.toFixed(3)} → ${r.lastLoss.toFixed(3)} in ${fmt(r.elapsedS)}; sampling ${evalN} held-out and ${Math.round(evalN / 2)} training answers`);
    const { held, styles, features, featuresTrain } = await evaluate(work, evalN);
    // Loss means over 50 windows, so the file stays small whatever the step count.
    const w = Math.max(1, Math.ceil(r.losses.length / 50));
    const losses = Array.from({ length: Math.ceil(r.losses.length / w) }, (_, i) => {
      const xs = r.losses.slice(i * w, (i + 1) * w);
      return { step: Math.min((i + 1) * w, r.losses.length), loss: xs.reduce((s, x) => s + x, 0) / xs.length };
    });
    const record = {
      preset: a.preset, ...o, corpusSha256, params: r.params, vocabSize: r.vocabSize, tokens: r.tokens, firstLoss: r.firstLoss, lastLoss: r.lastLoss,
      trainSeconds: Math.round(r.elapsedS), losses, sha256, rates: styles, features, featuresTrain, sample: held.slice(0, 6).map((x) => ({ prompt: x.spec.text, answer: x.answer })),
    };
    writeFileSync(path.join(work, 'BUILD.json'), JSON.stringify(record, null, 2) + '\n');
    const stage = `${out}.tmp-${process.pid}`;
    rmSync(stage, { recursive: true, force: true });
    cpSync(work, stage, { recursive: true });
    if (existsSync(out)) rmSync(out, { recursive: true, force: true });
    renameSync(stage, out);
    console.log(`wrote ${out}`);
  }
}

await (a.peek ? peek() : build());
