// The round packs: agent turns stored with the ids their model server consumed (a shared system prompt and tools,
// then each turn's own prompt) train in steps that run the shared prefix once per pack (step.ts packBatch), in the
// round's own step path (runRound → trainStep). That a pack's gradient equals the per-sequence one is pack.test.ts.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../common/engine/rng.ts';
import { PACK_MIN_PREFIX } from '../../common/training/pack.ts';
import { createCore } from '../core/core.ts';
import { SMALL_LM_DIR } from '../demo/small-lm.ts';
import { Engine } from '../engine/engine.ts';
import { resolveHome } from '../home.ts';
import { runRound } from './round.ts';

let root: string;
let engine: Engine;
beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rein-pack-round-'));
  engine = Engine.load(SMALL_LM_DIR, { threads: 1 });
});
afterAll(async () => {
  await engine.close();
  rmSync(root, { recursive: true, force: true });
});

describe('a round of agent turns sharing a prefix', () => {
  it('runs each step as packs: fewer runs than sequences', { timeout: 300_000 }, async () => {
    const core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'agent') }) });
    try {
      await core.call('setSettings', { values: { 'model.active': SMALL_LM_DIR, 'training.auto': false, 'training.preset': 'custom', 'training.custom': { steps: 2, batchSize: 6 } } }, 'test');
      const tok = engine.tokenizer!;
      const rng = new Rng(3);
      const textId = (): number => {
        for (;;) {
          const id = Math.floor(rng.uniform() * tok.size);
          if (tok.decode([id], { skipSpecialTokens: true }) !== '') return id;
        }
      };
      const shared = Array.from({ length: PACK_MIN_PREFIX + 72 }, textId);
      for (let i = 0; i < 8; i++) {
        const prompt = `task ${i}: fix the failing test`;
        const context = [...shared, ...tok.encodeChat([{ role: 'user', content: prompt }], { addGenerationPrompt: true })];
        const s = await engine.sample(context, { maxTokens: 12, temperature: 1, topP: 1, seed: 100 + i, stop: [] });
        const policy = { modelId: SMALL_LM_DIR, temperature: 1, topP: 1 };
        const { turn } = await core.call('captureTurn', { source: 'claude-code', eventId: `a${i}`, prompt, response: tok.decode(s.tokens), tokens: s.tokens, logprobs: s.logprobs, policy, adapterVersion: 0, promptIds: context }, 'test');
        await core.call('rate', { turnId: turn!.id, value: i % 2 === 0 ? 'good' : 'bad' }, 'test');
      }
      const run = core.store.runs.insert({ modelId: SMALL_LM_DIR, status: 'running', trigger: 'manual', fromVersion: null }, 'system');
      const { metrics } = await runRound({ home: core.home, store: core.store, runId: run.id, threads: 1 });
      expect(metrics.samples.mispo).toBeGreaterThan(2);
      expect(metrics.steps.length).toBeGreaterThan(0);
      // Every sequence of a step shares the prefix: one pack holds the batch.
      for (const s of metrics.steps) expect(s.runs).toBe(1);
    } finally {
      core.close();
    }
  });
});
