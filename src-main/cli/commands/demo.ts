// `rein demo`: the whole loop offline in about a minute. It writes a tiny random model with a word-level vocabulary
// (node/training/demo-model.ts), samples answers from it, rates them with a visible rule, trains one round through
// the real scheduler and worker, and prints the preferred-behaviour rate before and after with 95% intervals.
// The rule: an answer is good when it is short (at most three words, then </s>). The random 48-word model stops that
// early in about a tenth of its answers, and stopping is one decision (the </s> token) that a LoRA learns in one
// round. 64 ratings by default: they hold 3-11 good examples, enough for one round to reach >= 80% on every seed the
// learning test tries; 32 hold 1-4 and land anywhere from 0.66 to 0.98 (README "Does one round learn?"). The round
// uses the balanced preset with the LR size rule every model gets (common/training/presets.ts), so the numbers above,
// measured with the old toy bucket (LR x2000, clip [0.2, 5]), no longer hold: README "Does one round learn?".
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { modelLinearParams } from '../../common/engine/models/registry.ts';
import { createCore } from '../../node/core/core.ts';
import { Engine } from '../../node/engine/engine.ts';
import { loadPeftAdapter } from '../../node/engine/peft.ts';
import { resolveHome } from '../../node/home.ts';
import { writeDemoModel } from '../../node/training/demo-model.ts';
import { captureAndRate, preferredRate, sampleTurns } from '../../node/training/synthetic.ts';
import { registerCommand } from '../dispatch.ts';
import { intOption } from './format.ts';

const rule = (text: string): boolean => text.split(/\s+/).filter(Boolean).length <= 3;

registerCommand({
  name: 'demo',
  summary: 'Train a tiny model offline on a visible rule and show the before/after rate (about a minute).',
  usage: 'rein demo [--ratings N] [--seed S] [--keep]',
  options: {
    ratings: { type: 'string', help: 'rated answers to train on <n> (default 64)' },
    seed: { type: 'string', help: 'random seed <n> (default 1)' },
    keep: { type: 'boolean', help: 'keep the demo folder (model, database, adapter) and print its path' },
  },
  async run(ctx) {
    const n = intOption(ctx.options, 'ratings', 4, 1000) ?? 64;
    const seed = intOption(ctx.options, 'seed', 0, 1_000_000) ?? 1;
    const root = mkdtempSync(path.join(os.tmpdir(), 'rein-demo-'));
    const say = (s: string): void => ctx.io.stderr(`${s}\n`);
    const engine = Engine.load(writeDemoModel(path.join(root, 'model'), { seed: 0 }).dir);
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'home') }) });
    try {
      say('rule: an answer is good when it is short (at most three words)');
      const before = preferredRate(await sampleTurns(engine, 128, 10_000 + seed), rule);
      await core.call('setSettings', { values: { 'model.active': engine.tokenizer!.dir, 'training.auto': false, 'training.preset': 'balanced' } }, 'cli');
      const rated = n;
      const examples = await sampleTurns(engine, rated, seed);
      for (const t of examples.slice(0, 3)) say(`  "${t.prompt}" -> "${t.text}" : ${rule(t.text) ? 'good' : 'bad'}`);
      const counts = await captureAndRate(core, examples, rule, 'demo');
      say(`rated ${rated} sampled answers: ${counts.good} good, ${counts.bad} bad; training one round…`);
      const off = core.on('trainingProgress', (p) => {
        if (p.phase === 'training' && p.step % 8 === 0) say(`  step ${p.step}/${p.steps} loss ${p.loss?.toFixed(3)} KL ${p.kl?.toFixed(3)} ${p.tokensPerSecond?.toFixed(0)} tok/s`);
      });
      const t0 = performance.now();
      await core.call('startTraining', {}, 'cli');
      await core.scheduler.idle();
      off();
      const run = (await core.call('listRuns', {}, 'cli'))[0]!;
      if (run.status !== 'succeeded') throw new Error(`the round ${run.status}: ${run.error}`);
      const v = (await core.call('listAdapters', {}, 'cli'))[0]!;
      const { adapter } = loadPeftAdapter(path.join(v.path, 'peft'), modelLinearParams(engine.config));
      const after = preferredRate(await sampleTurns(engine, 128, 10_000 + seed, adapter), rule);
      const pct = (r: typeof before): string => `${(100 * r.rate).toFixed(1)}% (95% CI ${(100 * r.ci[0]).toFixed(1)}-${(100 * r.ci[1]).toFixed(1)}%, ${r.k}/${r.n})`;
      const result = { before, after, seconds: (performance.now() - t0) / 1000, adapter: { version: v.version, status: v.status, reason: v.reason }, dir: ctx.options.keep === true ? root : null };
      ctx.print(
        `short answers on 128 held-out prompts\n  before: ${pct(before)}\n  after:  ${pct(after)}\nround: ${result.seconds.toFixed(1)} s; v${v.version} ${v.status} (${v.reason})${result.dir === null ? '' : `\nkept in ${root}`}`,
        result,
      );
    } finally {
      core.close();
      await engine.close();
      if (ctx.options.keep !== true) rmSync(root, { recursive: true, force: true });
    }
  },
});
