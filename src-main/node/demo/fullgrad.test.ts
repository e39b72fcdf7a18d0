// Driver.fullGrad against central finite differences in float64, per tensor kind: a layer weight, the final norm
// and the tied embedding (lm_head use plus the rows the tokens read).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { Engine } from '../engine/engine.ts';
import { loadHfModel } from '../engine/hf.ts';
import { writeSmallLm } from './small-lm.ts';

const tmp = mkdtempSync(path.join(tmpdir(), 'rein-fullgrad-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

it('full-parameter gradients equal finite differences (float64)', async () => {
  const dir = path.join(tmp, 'm');
  writeSmallLm(dir, { seed: 1, hidden: 16, layers: 2, tokenizerDialogues: 200, bpeSize: 300 });
  const m = loadHfModel(dir, { tokenizer: false });
  const engine = Engine.fromWeights(m.config, (k) => m.read(k, { as: 'f64' }), { dtype: 'float64', threads: 1, buckets: [16] });
  const tokens = [5, 17, 290, 3, 44, 100, 7];
  const w = engine.driver.weights;
  const loss = async () => (await engine.driver.logprobs(tokens, 2, null)).reduce((s, v) => s + v, 0);
  const g = await engine.driver.fullGrad(tokens, 2, (lp) => new Float64Array(lp.length).fill(1));
  const cases: [string, ArrayLike<number> & { [i: number]: number }, Float64Array, number][] = [
    ['layer 0 q_proj', w.layers[0]!['q_proj']!, g.grads.layers[0]!['q_proj']!, 5],
    ['layer 1 down_proj', w.layers[1]!['down_proj']!, g.grads.layers[1]!['down_proj']!, 11],
    ['norm', w.norm, g.grads.norm, 3],
    ['embed (token 17 row, read and predicted)', w.embed, g.grads.embed, 17 * 16 + 2],
    ['embed (token 290, predicted only)', w.embed, g.grads.embed, 290 * 16 + 4],
  ];
  for (const [name, arr, grad, i] of cases) {
    const e = 1e-5;
    const v = arr[i]!;
    arr[i] = v + e;
    const up = await loss();
    arr[i] = v - e;
    const down = await loss();
    arr[i] = v;
    const fd = (up - down) / (2 * e);
    expect(Math.abs(fd - grad[i]!), `${name}: fd ${fd} vs ${grad[i]}`).toBeLessThan(1e-6 + 1e-5 * Math.abs(fd));
    expect(Math.abs(fd), name).toBeGreaterThan(1e-6);
  }
}, 120_000);
