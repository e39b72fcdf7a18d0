import { describe, expect, it } from 'vitest';
import { AdamW, GradAccumulator, OptimizerError, clipGradNorm, globalNorm } from './adamw.ts';

describe('AdamW', () => {
  it('matches torch.optim.AdamW step for step', () => {
    // Expected values printed by torch 1.13.1 (Debian python3-torch), float64:
    //   AdamW([p], lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01), p = [1, -2, 0.5]
    const p = new Float32Array([1, -2, 0.5]);
    const opt = new AdamW([p], { lr: 0.1, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01 });
    const grads = [[0.5, 0.1, -3.0], [-0.25, 0.1, 2.0], [0.0, -1.0, 0.5]];
    const torch = [
      [0.899000002, -2.09799999000000, 0.5994999996666667],
      [0.8714672987058463, -2.195901980010001, 0.613352552581956],
      [0.8500079016867623, -2.141269423607758, 0.6150225383345743],
    ];
    grads.forEach((g, s) => {
      opt.step([new Float32Array(g)]);
      for (let i = 0; i < 3; i++) expect(p[i]).toBeCloseTo(torch[s]![i]!, 6);
    });
    expect(opt.stepCount).toBe(3);
  });

  it('first step moves each weight by about lr against the gradient sign, after decay', () => {
    const p = new Float32Array([2, 2]);
    const opt = new AdamW([p], { lr: 0.01, weightDecay: 0.5 });
    opt.step([new Float32Array([1e-3, -7])]);
    // bias-corrected m/√v = g/|g| on step 1; decay multiplies by 1 − lr·wd first.
    expect(p[0]).toBeCloseTo(2 * (1 - 0.005) - 0.01, 6);
    expect(p[1]).toBeCloseTo(2 * (1 - 0.005) + 0.01, 6);
  });

  it('rejects non-finite or misshaped gradients and leaves parameters and state untouched', () => {
    const p = new Float32Array([1, 2]);
    const opt = new AdamW([p], { lr: 0.1 });
    opt.step([new Float32Array([1, 1])]);
    const before = { p: p.slice(), s: opt.saveState() };
    expect(() => opt.step([new Float32Array([1, NaN])])).toThrow(OptimizerError);
    expect(() => opt.step([new Float32Array([1])])).toThrow(/1 values/);
    expect(() => opt.step([])).toThrow(OptimizerError);
    expect([...p]).toEqual([...before.p]);
    expect(opt.saveState()).toEqual(before.s);
  });

  it('state round-trips: a restored optimizer continues identically', () => {
    const a = new Float32Array([0.3, -0.7]);
    const optA = new AdamW([a], { lr: 0.05 });
    optA.step([new Float32Array([0.2, 0.4])]);
    const b = a.slice();
    const optB = new AdamW([b], { lr: 0.05 });
    optB.loadState(optA.saveState());
    optA.step([new Float32Array([-0.1, 0.3])]);
    optB.step([new Float32Array([-0.1, 0.3])]);
    expect([...b]).toEqual([...a]);
    expect(() => optB.loadState({ step: 1, m: [], v: [] })).toThrow(OptimizerError);
  });

  it('validates options', () => {
    expect(() => new AdamW([], { lr: -1 })).toThrow(/lr/);
    expect(() => new AdamW([], { beta1: 1 })).toThrow(/betas/);
  });
});

describe('clipGradNorm', () => {
  it('scales to maxNorm like torch clip_grad_norm_ and returns the norm before clipping', () => {
    const g = [new Float32Array([3, 4]), new Float32Array([12])]; // norm 13
    expect(clipGradNorm(g, 1)).toBeCloseTo(13, 6);
    expect(globalNorm(g)).toBeCloseTo(13 / (13 + 1e-6), 6);
    expect(g[0]![0]).toBeCloseTo(3 / 13, 6);
  });
  it('leaves small gradients alone and refuses non-finite ones', () => {
    const g = [new Float32Array([0.3, 0.4])];
    expect(clipGradNorm(g, 1)).toBeCloseTo(0.5, 6);
    expect([...g[0]!]).toEqual([...new Float32Array([0.3, 0.4])]);
    expect(() => clipGradNorm([new Float32Array([Infinity])], 1)).toThrow(OptimizerError);
  });
});

describe('GradAccumulator', () => {
  it('gives the token-weighted mean of micro-batch gradients', () => {
    const acc = new GradAccumulator([2]);
    acc.add([new Float32Array([1, 2])], 3);
    acc.add([new Float32Array([5, -2])], 1);
    const [m] = acc.mean();
    expect(m![0]).toBeCloseTo((3 * 1 + 5) / 4, 6);
    expect(m![1]).toBeCloseTo((3 * 2 - 2) / 4, 6);
    expect(acc.micro).toBe(2);
    acc.reset();
    expect(() => acc.mean()).toThrow(/no gradients/);
    expect(() => acc.add([new Float32Array(3)])).toThrow(OptimizerError);
  });
});
