import { describe, expect, it } from 'vitest';
import { BadInputError } from '../errors.ts';
import { policyGradient } from './objectives.ts';

describe('policyGradient', () => {
  const logp = Float64Array.from([-1.2, -0.3, -2.5, -0.05]);
  const ref = Float64Array.from([-1.0, -0.9, -2.0, -0.04]);

  it('dlogp matches central differences of the loss', () => {
    const obj = policyGradient({ beta: 0.3 });
    const base = obj.sequence({ logp, ref, advantage: -0.7 }, 0.5);
    const h = 1e-6;
    for (let t = 0; t < logp.length; t++) {
      const up = logp.slice();
      const dn = logp.slice();
      up[t]! += h;
      dn[t]! -= h;
      const fd = (obj.sequence({ logp: up, ref, advantage: -0.7 }, 0.5).loss - obj.sequence({ logp: dn, ref, advantage: -0.7 }, 0.5).loss) / (2 * h);
      expect(base.dlogp[t]).toBeCloseTo(fd, 8);
    }
  });

  it('k3 is zero where the policy equals the base, and the loss is then -A·mean(π)·weight', () => {
    const obj = policyGradient({ beta: 0.1 });
    const r = obj.sequence({ logp, ref: logp, advantage: 2 }, 1);
    expect([...r.kl!]).toEqual([0, 0, 0, 0]);
    expect(r.loss).toBeCloseTo((-2 * (-1.2 - 0.3 - 2.5 - 0.05)) / 4, 12);
  });

  it('needs no reference when beta is 0, and names bad input', () => {
    const obj = policyGradient({ beta: 0 });
    expect(obj.needsRef).toBe(false);
    expect(obj.sequence({ logp, ref: null, advantage: 1 }, 1).kl).toBeNull();
    expect(() => policyGradient({ beta: -1 })).toThrow(BadInputError);
    expect(() => policyGradient({ beta: 0.1 }).sequence({ logp, ref: null, advantage: 1 }, 1)).toThrow(/reference logprobs/);
    expect(() => obj.sequence({ logp: new Float64Array(0), ref: null, advantage: 1 }, 1)).toThrow(/no response tokens/);
  });
});
