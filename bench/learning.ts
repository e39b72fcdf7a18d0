// node bench/learning.ts [model=DIR] [seeds=1,2,3] [rounds=4] [n=32] [held=64] [preset=balanced] [rule=short3]
// The learning curve through the product: per seed, a fresh Rein home on the model (default: rein demo's model,
// written to a temporary directory), then R rounds of: sample N answers from the active adapter, capture and rate
// them by the rule through the core, train one round through the scheduler and the worker. Printed per round: the
// candidate's held-out preferred-style rate (64 fixed held-out prompts per seed) with its 95% Wilson interval, the
// version's status and the gate's KL, and for a rejected version the live adapter's rate too. Issue #12 asks for >= 0.80 from <= 0.20 within 4 rounds on 4 of 5 seeds.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { modelLinearParams } from '../src-main/common/engine/models/registry.ts';
import { createCore } from '../src-main/node/core/core.ts';
import { Engine } from '../src-main/node/engine/engine.ts';
import { loadPeftAdapter } from '../src-main/node/engine/peft.ts';
import { resolveHome } from '../src-main/node/home.ts';
import { writeDemoModel } from '../src-main/node/training/demo-model.ts';
import { captureAndRate, preferredRate, sampleTurns } from '../src-main/node/training/synthetic.ts';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.split('=')) as [string, string][]);
const num = (k: string, d: number): number => (args[k] !== undefined ? Number(args[k]) : d);
const RULES: Record<string, (text: string) => boolean> = {
  short3: (text) => text.split(/\s+/).filter(Boolean).length <= 3,
  polite: (text) => /\b(please|thanks)\b/.test(text),
};
const ruleName = args['rule'] ?? 'short3';
const rule = RULES[ruleName];
if (rule === undefined) throw new Error(`rule must be one of ${Object.keys(RULES).join(', ')}, got ${ruleName}`);
const seeds = (args['seeds'] ?? '1,2,3').split(',').map(Number);
const ROUNDS = num('rounds', 4);
const N = num('n', 32);
const HELD = num('held', 64);
const preset = args['preset'] ?? 'balanced';

const root = mkdtempSync(path.join(os.tmpdir(), 'rein-learning-'));
const modelDir = args['model'] ?? writeDemoModel(path.join(root, 'model'), { seed: 0 }).dir;
const engine = Engine.load(modelDir, { threads: 1 });
const f = (x: number): string => x.toFixed(2);
try {
  console.log(`learning curve: model ${modelDir}, rule ${ruleName}, preset ${preset}, ${ROUNDS} rounds of ${N} ratings, ${HELD} held-out prompts`);
  for (const seed of seeds) {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, `home-${seed}`) }) });
    try {
      await core.call('setSettings', { values: { 'model.active': modelDir, 'training.auto': false, 'training.preset': preset } }, 'cli');
      const heldSeed = 10_000 + seed;
      const base = preferredRate(await sampleTurns(engine, HELD, heldSeed), rule);
      const cells = [`base ${f(base.rate)} [${base.ci.map(f).join(', ')}]`];
      let adapter = null;
      for (let r = 1; r <= ROUNDS; r++) {
        const turns = await sampleTurns(engine, N, seed + 1000 * r, adapter);
        const { good } = await captureAndRate(core, turns, rule, `s${seed}r${r}`);
        await core.call('startTraining', {}, 'cli');
        await core.scheduler.idle();
        const run = (await core.call('listRuns', {}, 'cli'))[0]!;
        if (run.status !== 'succeeded') throw new Error(`seed ${seed} round ${r}: run ${run.status}: ${String(run.error)}`);
        const v = (await core.call('listAdapters', {}, 'cli'))[0]!;
        const gate = (run.metrics as { gate: { kl: number } }).gate;
        const candidate = loadPeftAdapter(path.join(v.path, 'peft'), modelLinearParams(engine.config)).adapter;
        // The next round samples from the active adapter, as a user's agent would.
        const active = (await core.call('listAdapters', {}, 'cli')).find((a) => a.status === 'active');
        adapter = active === undefined ? null : loadPeftAdapter(path.join(active.path, 'peft'), modelLinearParams(engine.config)).adapter;
        // The candidate's rate (what the round learned) and, when the gate rejected it, the live one's (what a user gets).
        const cand = preferredRate(await sampleTurns(engine, HELD, heldSeed, candidate), rule);
        const live = v.status === 'active' ? cand : preferredRate(await sampleTurns(engine, HELD, heldSeed, adapter), rule);
        const ci = (x: { rate: number; ci: [number, number] }): string => `${f(x.rate)} [${x.ci.map(f).join(', ')}]`;
        cells.push(`r${r} (${good}/${N} good, v${v.version} ${v.status}, KL ${gate.kl.toFixed(3)}): ${ci(cand)}${v.status === 'active' ? '' : `, live ${ci(live)}`}`);
      }
      console.log(`seed ${seed}: ${cells.join(' | ')}`);
    } finally {
      core.close();
    }
  }
} finally {
  await engine.close();
  rmSync(root, { recursive: true, force: true });
}
