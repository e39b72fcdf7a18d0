// Pretraining is deterministic (a shortened run twice from one seed gives the same bytes) and learns (the loss
// falls well below the uniform ln V over a few steps).
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { pretrainSmallLm } from './pretrain.ts';

const tmp = mkdtempSync(path.join(tmpdir(), 'rein-pretrain-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

it('a shortened pretraining run is byte-identical per seed and lowers the loss', async () => {
  const o = { hidden: 32, layers: 1, tokenizerDialogues: 500, steps: 30, batch: 2 };
  const a = await pretrainSmallLm(path.join(tmp, 'a'), { ...o, seed: 4 });
  const b = await pretrainSmallLm(path.join(tmp, 'b'), { ...o, seed: 4 });
  const c = await pretrainSmallLm(path.join(tmp, 'c'), { ...o, seed: 5 });
  const bytes = (d: string) => readFileSync(path.join(d, 'model.safetensors'));
  expect(bytes(a.dir).equals(bytes(b.dir))).toBe(true);
  expect(readFileSync(path.join(a.dir, 'tokenizer.json'), 'utf8')).toBe(readFileSync(path.join(b.dir, 'tokenizer.json'), 'utf8'));
  expect(bytes(a.dir).equals(bytes(c.dir))).toBe(false);
  expect(a.firstLoss).toBeGreaterThan(Math.log(a.vocabSize) - 0.5);
  expect(a.lastLoss).toBeLessThan(a.firstLoss - 1);
}, 120_000);
