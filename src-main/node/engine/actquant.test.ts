// llama.cpp's activation rounding (composites.ts quantizeActivations) against the CPU backend node-llama-cpp ships:
// gguf/fixtures/ggml-act-quant.json holds what the .so that llama.cpp picks on this machine (highest
// ggml_backend_score) made of 4 rows of 512 fixed values (gaussian, outliers and a zero block, exact halves, scales
// from 1e-3 to 1e3), for each vec_dot_type; fixtures/ggml-act-quant.c says how. Ours runs through ORT as training
// does (float32, full graph optimisation) and must give the same floats exactly.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { grad } from '../../common/engine/autodiff.ts';
import { type ActQuantKind, quantizeActivations } from '../../common/engine/composites.ts';
import { Graph } from '../../common/engine/ir.ts';
import * as op from '../../common/engine/ops.ts';
import { Runtime } from './runtime.ts';

const ref = JSON.parse(readFileSync(path.join(import.meta.dirname, 'gguf', 'fixtures', 'ggml-act-quant.json'), 'utf8')) as Record<string, string | number>;
const f32s = (s: string): Float32Array => new Float32Array(Uint8Array.from(Buffer.from(s, 'hex')).buffer);
const ROWS = ref['rows'] as number;
const K = ref['cols'] as number;
const input = f32s(ref['input'] as string);

const rt = new Runtime({ intraOpThreads: 1 });
afterAll(() => rt.dispose());

async function ours(kind: ActQuantKind, x: Float32Array = input): Promise<Float32Array> {
  const g = new Graph(`actq_${kind}`);
  const xin = g.input('x', 'float32', [ROWS, K]);
  g.output('y', quantizeActivations(xin, kind));
  return (await rt.run(g, {}, { x }))['y']!.data as Float32Array;
}

/**
 * Index of the first element that differs (−1 when none), so a failure names it. Floats compare exactly, with −0
 * equal to 0: ggml's q is an integer, ours a float that is −0 where x rounds to zero from below.
 */
function firstDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  return a.findIndex((v, i) => !(v === b[i]));
}

describe(`activation rounding equals llama.cpp's CPU backend (${String(ref['variant'])} build)`, () => {
  it.each([
    ['q8_0', 'q8_0'],
    ['q8_1', 'q8_1'],
    ['q8_K', 'q8_K'],
    ['q8_K', 'q8_K_4x8'],
    ['f16', 'f16'],
    ['bf16', 'bf16'],
  ] as const)('%s equals ggml %s exactly', async (kind, fixture) => {
    const want = f32s(ref[fixture] as string);
    const got = await ours(kind);
    const at = firstDiff(got, want);
    expect({ at, got: got[at], want: want[at], x: input[at] }).toEqual({ at: -1, got: undefined, want: undefined, x: undefined });
  });

  it('the fixture meets the rounding rule: rounding exact halves away from zero (roundf) would differ', () => {
    // Row 2 holds blocks of amax 127, so x·(127/amax) = x and its halves are ties; q8_0 with roundf, as the
    // scalar quantize_row_q8_0_ref does, then differs from what the SIMD build wrote.
    const want = f32s(ref['q8_0'] as string);
    let ties = 0;
    let differ = 0;
    for (let i = 2 * K; i < 3 * K; i++) {
      const x = input[i]!;
      if (Math.abs(x) % 1 !== 0.5) continue;
      ties++;
      if (Math.sign(x) * Math.round(Math.abs(x)) !== want[i]) differ++;
    }
    expect(ties).toBeGreaterThan(100);
    expect(differ).toBeGreaterThan(ties / 3);
  });

  it('an all-zero block stays zero, and only its own block', async () => {
    const x = input.slice();
    x.fill(0, 0, 256);
    for (const kind of ['q8_0', 'q8_K'] as const) {
      const y = await ours(kind, x);
      expect(Array.from(y.subarray(0, 256)).every((v) => v === 0)).toBe(true);
      expect(Array.from(y.subarray(256, 512)).some((v) => v !== 0)).toBe(true);
    }
  });

  it('refuses a row that is not a whole number of blocks, naming the kind', () => {
    const g = new Graph('bad');
    expect(() => quantizeActivations(g.input('x', 'float32', [2, 96]), 'q8_K')).toThrow(/q8_K input needs a last dim that is a multiple of 256/);
  });

  it('the gradient is straight through: d/dx Σ c·q(x) = c', async () => {
    const g = new Graph('actq_grad');
    const x = g.input('x', 'float32', [ROWS, K]);
    const c = g.input('c', 'float32', [ROWS, K]);
    for (const kind of ['q8_0', 'q8_K', 'f16'] as const) {
      const y = op.reduceSum(op.mul(quantizeActivations(x, kind), c), [], false);
      g.output(`dx_${kind}`, grad([y], [x])[0]!);
    }
    const cs = Float32Array.from(input, (_, i) => ((i * 7919) % 13) - 6);
    const out = await rt.run(g, {}, { x: input, c: cs });
    for (const kind of ['q8_0', 'q8_K', 'f16']) expect(firstDiff(out[`dx_${kind}`]!.data as Float32Array, cs)).toBe(-1);
  });
});
