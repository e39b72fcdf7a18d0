// The model server's sampler (embedded.ts: logSoftmax and pick) against the straightforward algorithm it replaced
// (a full-vocabulary sort a token): on random logit rows of Qwen's vocabulary size (151,936) and small ones, across
// temperatures, top_p and seeds, the same token for the same seed, the same number of draws taken from the Rng, and
// the same log-softmax row, bit for bit.
import { describe, expect, it } from 'vitest';
import type { Token } from 'node-llama-cpp';
import { Rng } from '../../common/engine/rng.ts';
import { pick } from '../../common/engine/sampling.ts';
import { logSoftmax } from './embedded.ts';

function refLogSoftmax(logits: Map<Token, number>, V: number): Float64Array {
  const out = new Float64Array(V).fill(-Infinity);
  let mx = -Infinity;
  for (const v of logits.values()) mx = Math.max(mx, v);
  let z = 0;
  for (const v of logits.values()) z += Math.exp(v - mx);
  const lz = mx + Math.log(z);
  for (const [t, v] of logits) out[t as number] = v - lz;
  return out;
}

// The old pick(), verbatim, in two halves so one full sort can serve many seeds: the order and the top-p set, then
// the draw.
function refSet(logp: Float64Array, temperature: number, topP: number): { best: number; p: Float64Array; order: number[]; k: number; mass: number } {
  let best = 0;
  for (let i = 1; i < logp.length; i++) if (logp[i]! > logp[best]!) best = i;
  const p = new Float64Array(logp.length);
  let z = 0;
  for (let i = 0; i < p.length; i++) z += p[i] = Math.exp((logp[i]! - logp[best]!) / temperature);
  const order = Array.from({ length: p.length }, (_, i) => i).sort((a, b) => p[b]! - p[a]! || a - b);
  let mass = 0;
  let k = 0;
  while (k < order.length && mass < topP * z) mass += p[order[k++]!]!;
  return { best, p, order, k, mass };
}

function refDraw({ p, order, k, mass }: ReturnType<typeof refSet>, rng: Rng): number {
  let u = rng.uniform() * mass;
  for (let i = 0; i < k; i++) {
    u -= p[order[i]!]!;
    if (u <= 0) return order[i]!;
  }
  return order[k - 1]!;
}

function refPick(logp: Float64Array, temperature: number, topP: number, rng: Rng): number {
  const set = refSet(logp, temperature, topP);
  return temperature <= 0 ? set.best : refDraw(set, rng);
}

/** A row of logits: Gaussian with the given spread, a few standing out, some repeated exactly, some masked. */
function logitsRow(V: number, seed: number, shape: 'flat' | 'peaked' | 'ties' | 'masked'): Map<Token, number> {
  const g = new Rng(seed);
  const m = new Map<Token, number>();
  for (let t = 0; t < V; t++) {
    let v = shape === 'flat' ? 0.5 * g.normal() : 3 * g.normal();
    if (shape === 'peaked' && g.uniform() < 0.001) v += 15;
    if (shape === 'ties') v = Math.round(v * 2) / 2; // many exactly equal probabilities at any temperature
    if (shape === 'masked' && g.uniform() < 0.3) v = -Infinity;
    m.set(t as Token, Math.fround(v)); // llama.cpp's logits are floats
  }
  return m;
}

/** Both samplers from the same seed; also the draw after, so they took as many from the Rng. */
function both(logp: Float64Array, temperature: number, topP: number, seed: number): [number[], number[]] {
  const a = new Rng(seed);
  const b = new Rng(seed);
  return [
    [pick(logp, temperature, topP, a), a.uniform()],
    [refPick(logp, temperature, topP, b), b.uniform()],
  ];
}

/** An Rng whose uniform() returns the given value (the draw at the ends of [0, 1)). */
const fixed = (u: number) => ({ uniform: () => u }) as unknown as Rng;

describe('sampler', () => {
  it('log-softmax: the same row as before for a map in id order, out of order, with ids missing or out of range', () => {
    for (const V of [1, 7, 1000]) {
      const inOrder = logitsRow(V, V, 'peaked');
      const g = new Rng(V);
      const ids = [...inOrder.keys()].sort(() => g.uniform() - 0.5);
      const shuffled = new Map(ids.map((t) => [t, inOrder.get(t)!]));
      const holes = new Map([...inOrder].filter(([t]) => t % 3 !== 1));
      const beyond = new Map([...inOrder, [V as Token, 2], [(V + 5) as Token, -1]]);
      for (const m of [inOrder, shuffled, holes, beyond]) expect(logSoftmax(m, V)).toEqual(refLogSoftmax(m, V));
    }
  });

  it('small vocabularies: the same token, draws and log-softmax as the full sort, over many rows', () => {
    let cases = 0;
    for (const V of [1, 2, 3, 5, 17, 100, 1000]) {
      for (const shape of ['flat', 'peaked', 'ties', 'masked'] as const) {
        for (let row = 0; row < 4; row++) {
          const logits = logitsRow(V, 1000 * V + row, shape);
          if (shape === 'masked') logits.set(0 as Token, 0); // at least one finite logit
          const logp = logSoftmax(logits, V);
          expect(logp).toEqual(refLogSoftmax(logits, V));
          for (const temperature of [0, 0.05, 0.3, 0.7, 1, 1.5, 10, 1e6]) {
            for (const topP of [0.01, 0.5, 0.9, 0.95, 1, 2]) {
              for (const seed of [1, 2, 3]) {
                const [got, want] = both(logp, temperature, topP, seed);
                expect(got, `V ${V} ${shape} row ${row} T ${temperature} top_p ${topP} seed ${seed}`).toEqual(want);
                cases++;
              }
              for (const u of [0, 0.5, 1 - 2 ** -53]) expect(pick(logp, temperature, topP, fixed(u))).toBe(refPick(logp, temperature, topP, fixed(u)));
            }
          }
        }
      }
    }
    expect(cases).toBeGreaterThan(10_000);
  });

  it("reports the drawn token's log probability under the distribution it was drawn from: softmax(logp/T) renormalised over the top-p set; 0 when greedy", () => {
    let cases = 0;
    for (const shape of ['flat', 'peaked', 'ties', 'masked'] as const) {
      const logits = logitsRow(5000, 31, shape);
      if (shape === 'masked') logits.set(0 as Token, 0);
      const logp = logSoftmax(logits, 5000);
      for (const [temperature, topP] of [[0.7, 0.9], [1, 1], [0.3, 0.95], [1.5, 0.5], [0.7, 0.01], [0, 1], [0.8, 0]] as const) {
        const set = refSet(logp, temperature, topP);
        for (let seed = 0; seed < 20; seed++) {
          const out = { logprob: NaN };
          const id = pick(logp, temperature, topP, new Rng(seed), out);
          // Greedy draws its token with probability 1.
          const want = temperature <= 0 || topP <= 0 ? 0 : Math.log(set.p[id]! / set.mass);
          expect(out.logprob, `${shape} T ${temperature} top_p ${topP} seed ${seed}`).toBeCloseTo(want, 12);
          expect(out.logprob).toBeLessThanOrEqual(0);
          cases++;
        }
      }
    }
    expect(cases).toBe(4 * 7 * 20);
  });

  it('top_p 0 is greedy (the smallest set with a zero share of the mass is the top token), as temperature 0 is', () => {
    const logits = logitsRow(1000, 7, 'peaked');
    const logp = logSoftmax(logits, 1000);
    const argmax = logp.indexOf(Math.max(...logp));
    for (const seed of [1, 2, 3]) {
      expect(pick(logp, 0.8, 0, new Rng(seed))).toBe(argmax);
      expect(pick(logp, 0, 1, new Rng(seed))).toBe(argmax);
    }
  });

  it("Qwen's vocabulary (151,936): the same token and draws as the full sort across temperatures, top_p and seeds", { timeout: 120_000 }, () => {
    const V = 151_936;
    for (const shape of ['flat', 'peaked', 'ties', 'masked'] as const) {
      const logits = logitsRow(V, 7, shape);
      const logp = logSoftmax(logits, V);
      expect(logp).toEqual(refLogSoftmax(logits, V));
      expect(pick(logp, 0, 1, new Rng(1))).toBe(refPick(logp, 0, 1, new Rng(1)));
      for (const [temperature, topP] of [[0.8, 1], [1, 0.9], [0.3, 0.95], [1.5, 1], [0.7, 0.5]] as const) {
        const set = refSet(logp, temperature, topP);
        for (let seed = 0; seed < 40; seed++) {
          const a = new Rng(seed);
          const b = new Rng(seed);
          expect([pick(logp, temperature, topP, a), a.uniform()], `${shape} T ${temperature} top_p ${topP} seed ${seed}`).toEqual([refDraw(set, b), b.uniform()]);
        }
        // The draw at the ends: the first token, and the last of the top-p set (or a long walk into the tail).
        for (const u of [0, 0.999999, 1 - 2 ** -53]) expect(pick(logp, temperature, topP, fixed(u)), `${shape} T ${temperature} top_p ${topP} u ${u}`).toBe(refDraw(set, fixed(u)));
      }
    }
  });
});
