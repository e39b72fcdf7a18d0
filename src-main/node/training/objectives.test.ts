// The MIS-PO and KTO graphs (common/training/objectives.ts) run through ORT in float64: their dlogp output against
// central differences of their loss output, and the edge cases of a round against a closed form written here.
import { afterAll, describe, expect, it } from 'vitest';
import { advantage, roundBaselines } from '../../common/rewards.ts';
import { ktoClassWeights } from '../../common/training/objectives.ts';
import { ObjectiveRunner, type MisPoTerms } from './objective-runner.ts';

const base = { beta: 0.05, ratioClipLow: 0.5, ratioClipHigh: 2, ktoBeta: 0.5 };
const wide = new ObjectiveRunner({ ...base, bandLow: 0.5, bandHigh: 2, drift: 'scale' });
const tight = new ObjectiveRunner({ ...base, bandLow: 0.994, bandHigh: 1.002, drift: 'scale' });
const reject = new ObjectiveRunner({ ...base, bandLow: 0.994, bandHigh: 1.002, drift: 'reject' });
afterAll(async () => {
  await wide.dispose();
  await tight.dispose();
  await reject.dispose();
});

const f64 = (xs: number[]): Float64Array => Float64Array.from(xs);

/** Closed-form dLoss/dπ_t of MIS-PO with the drift scale held fixed (it is a stop-gradient). */
function misPoReference(t: MisPoTerms, scale: number, beta: number, lo: number, hi: number): Float64Array {
  const n = t.logp.length;
  const A = t.advantage;
  return t.logp.map((p, i) => {
    const rho = Math.exp(p - t.mu[i]!);
    const c = Math.min(hi, Math.max(lo, rho));
    // −min(ρA, cA): its derivative is −ρA where the unclipped branch is the smaller one or the ratio is inside the clip.
    const actor = rho * A <= c * A || (rho >= lo && rho <= hi) ? -rho * A : 0;
    return (scale * actor + beta * (1 - Math.exp(t.ref[i]! - p))) / n;
  });
}

async function fdCheck(f: (logp: Float64Array) => Promise<number>, logp: Float64Array, analytic: Float64Array): Promise<number> {
  const h = 1e-6;
  let worst = 0;
  for (let i = 0; i < logp.length; i++) {
    const up = logp.slice();
    const dn = logp.slice();
    up[i]! += h;
    dn[i]! -= h;
    const numeric = ((await f(up)) - (await f(dn))) / (2 * h);
    worst = Math.max(worst, Math.abs(numeric - analytic[i]!) / (1e-9 + 1e-6 * Math.abs(numeric)));
  }
  return worst;
}

describe('MIS-PO', () => {
  const terms: MisPoTerms = {
    logp: f64([-1.3, -0.2, -2.7, -0.9, -4.1]),
    mu: f64([-1.25, -0.35, -2.6, -0.95, -4.0]),
    ref: f64([-1.1, -0.4, -2.2, -1.0, -3.5]),
    mask: [1, 1, 1, 1, 1],
    advantage: 1.4,
  };

  it('dlogp equals central differences of the loss (float64, inside the band)', async () => {
    for (const A of [1.4, -0.8]) {
      const t = { ...terms, advantage: A };
      const r = await wide.misPo(t);
      expect(r.scale).toBe(1);
      const worst = await fdCheck(async (logp) => (await wide.misPo({ ...t, logp })).loss, t.logp, r.dlogp);
      expect(worst).toBeLessThan(1);
      expect(Math.max(...r.dlogp.map((d, i) => Math.abs(d - misPoReference(t, 1, base.beta, 0.5, 2)[i]!)))).toBeLessThan(1e-12);
    }
  });

  it('with the round baseline, a one-class batch gives no actor gradient, and a mixed one pushes its Good samples up and its Bad ones down', async () => {
    const same = { ...terms, mu: terms.logp, ref: terms.logp };
    // All Good or all Bad: every rating meets the mean of the others, its own reward, so A = 0: no push at all
    // (ρ = 1 and π = ref, so the KL term is 0 too). Today's EMA from 0 gave A ≈ r here: supervised fine-tuning on
    // the round's own samples, or a push down of everything it sampled.
    for (const rewards of [
      [1, 1, 1, 1],
      [-1, -1, -1, -1],
    ]) {
      for (const b of roundBaselines(rewards).trained) {
        const r = await wide.misPo({ ...same, advantage: advantage(rewards[0]!, b!) });
        expect(r.loss).toBe(0);
        for (const d of r.dlogp) expect(d).toBe(0);
      }
    }
    // Three Good and one Bad: each Good meets (1 + 1 − 1)/3 = 1/3 (A = 2/3), the Bad meets 1 (A = −2).
    const rewards = [1, 1, -1, 1];
    const A = roundBaselines(rewards).trained.map((b, i) => advantage(rewards[i]!, b!));
    [2 / 3, 2 / 3, -2, 2 / 3].forEach((x, i) => expect(A[i]).toBeCloseTo(x, 15));
    for (const [i, a] of A.entries()) {
      const r = await wide.misPo({ ...same, advantage: a });
      for (const d of r.dlogp) expect(Math.sign(d)).toBe(rewards[i]! > 0 ? -1 : 1); // the loss's gradient: descent raises Good
      expect(r.loss).toBeCloseTo(-a, 12); // ρ = 1 everywhere: actor = −A, KL = 0
    }
  });

  it('advantage is r − baseline clipped to ±2', () => {
    expect(advantage(1, -0.5)).toBe(1.5);
    expect(advantage(1, -1.5)).toBe(2);
    expect(advantage(-1, 1.5)).toBe(-2);
  });

  it('a trajectory far outside the band is scaled down (stop-gradient) or rejected, and clipped tokens stop pushing', async () => {
    // π − μ = +2 on every token: ρ_t = e² ≈ 7.4 > 2 (clipped) and ρ̄ = e² far above the band's 1.002.
    const t: MisPoTerms = { logp: f64([-1, -2, -0.5]), mu: f64([-3, -4, -2.5]), ref: f64([-1.2, -2.1, -0.4]), mask: [1, 1, 1], advantage: 1 };
    const scaled = await tight.misPo(t);
    expect(scaled.rhoBar).toBeCloseTo(Math.exp(2), 10);
    expect(scaled.scale).toBeCloseTo(1.002 / Math.exp(2), 12);
    expect(scaled.clipFrac).toBe(1);
    // With A > 0 and ρ above the clip, the clipped branch is the min, so only the KL term has a gradient.
    const ref = misPoReference(t, scaled.scale, base.beta, 0.5, 2);
    for (let i = 0; i < 3; i++) expect(scaled.dlogp[i]).toBeCloseTo(ref[i]!, 12);
    for (let i = 0; i < 3; i++) expect(scaled.dlogp[i]).toBeCloseTo((base.beta * (1 - Math.exp(t.ref[i]! - t.logp[i]!))) / 3, 12);

    // A < 0: the unclipped branch −ρ|A| is the smaller one, so the token still pushes down, scaled.
    const neg = await tight.misPo({ ...t, advantage: -1 });
    const refNeg = misPoReference({ ...t, advantage: -1 }, neg.scale, base.beta, 0.5, 2);
    for (let i = 0; i < 3; i++) expect(neg.dlogp[i]).toBeCloseTo(refNeg[i]!, 12);
    expect(neg.dlogp[0]! - (base.beta * (1 - Math.exp(t.ref[0]! - t.logp[0]!))) / 3).toBeGreaterThan(0);

    const rej = await reject.misPo({ ...t, advantage: -1 });
    expect(rej.scale).toBe(0);
    for (let i = 0; i < 3; i++) expect(rej.dlogp[i]).toBeCloseTo((base.beta * (1 - Math.exp(t.ref[i]! - t.logp[i]!))) / 3, 12);
    // Just below the band's low edge: ρ̄ = 0.99 → scale = 0.99 / 0.994.
    const low = await tight.misPo({ logp: f64([-1, -1]), mu: f64([-1 - Math.log(0.99), -1 - Math.log(0.99)]), ref: f64([-1, -1]), mask: [1, 1], advantage: 1 });
    expect(low.scale).toBeCloseTo(0.99 / 0.994, 10);
    expect((await reject.misPo({ logp: f64([-1]), mu: f64([-1]), ref: f64([-1]), mask: [1], advantage: 1 })).scale).toBe(1);
  });

  it('names bad input', async () => {
    await expect(wide.misPo({ ...terms, mu: f64([-1]) })).rejects.toThrow(/behaviour/);
    await expect(wide.misPo({ ...terms, logp: new Float64Array(0), mu: new Float64Array(0), ref: new Float64Array(0), mask: [] })).rejects.toThrow(/no response tokens/);
    await expect(wide.misPo({ ...terms, advantage: Number.NaN })).rejects.toThrow(/advantage/);
    await expect(wide.misPo({ ...terms, logp: f64([-1, Number.NEGATIVE_INFINITY, -1, -1, -1]) })).rejects.toThrow(/logp\[1\]/);
  });
});

describe('the mask (an agent turn: its tool results are context, not trained)', () => {
  const logp = f64([-1.3, -0.2, -2.7, -0.9, -4.1]);
  const mu = f64([-1.25, -0.35, -2.6, -0.95, -4.0]);
  const ref = f64([-1.1, -0.4, -2.2, -1.0, -3.5]);
  const mask = [1, 0, 0, 1, 1];
  const keep = (x: Float64Array): Float64Array => x.filter((_, i) => mask[i] === 1);

  it('gives masked tokens zero gradient, and the loss and gradient of the tokens left alone (MIS-PO and KTO)', async () => {
    const m = await wide.misPo({ logp, mu, ref, mask, advantage: -0.9 });
    const alone = await wide.misPo({ logp: keep(logp), mu: keep(mu), ref: keep(ref), mask: [1, 1, 1], advantage: -0.9 });
    const k = await wide.ktoSeq({ logp, ref, mask, desirable: true, z0: 0.05, weight: 1.2 });
    const kAlone = await wide.ktoSeq({ logp: keep(logp), ref: keep(ref), mask: [1, 1, 1], desirable: true, z0: 0.05, weight: 1.2 });
    for (const [r, a] of [[m, alone], [k, kAlone]] as const) {
      expect(Math.abs(r.dlogp[1]!)).toBe(0);
      expect(Math.abs(r.dlogp[2]!)).toBe(0);
      expect(Array.from(keep(r.dlogp))).toEqual(Array.from(a.dlogp).map((d) => expect.closeTo(d, 14) as unknown));
      expect(r.loss).toBeCloseTo(a.loss, 14);
      expect(r.kl).toBeCloseTo(a.kl, 14);
    }
    expect(k.logRatio).toBeCloseTo(kAlone.logRatio, 14);
    // Unmasked, the same tokens do have a gradient: the zeros above are the mask's.
    const all = await wide.misPo({ logp, mu, ref, mask: [1, 1, 1, 1, 1], advantage: -0.9 });
    expect(Math.abs(all.dlogp[1]!)).toBeGreaterThan(1e-3);
  });

  it('must match the tokens, hold only 0 and 1, and train one token at least', async () => {
    const t = { logp, mu, ref, advantage: 1 };
    await expect(wide.misPo({ ...t, mask: [1, 1, 1] })).rejects.toThrow(/5 policy logprobs but a mask of 3/);
    await expect(wide.misPo({ ...t, mask: [1, 0.5, 1, 1, 1] })).rejects.toThrow(/mask\[1\] is 0.5/);
    await expect(wide.ktoSeq({ logp, ref, mask: [0, 0, 0, 0, 0], desirable: true, z0: 0, weight: 1 })).rejects.toThrow(/trains none of the 5/);
  });
});

describe('KTO', () => {
  const logp = f64([-1.2, -0.7, -2.2, -0.3]);
  const ref = f64([-1.0, -0.9, -2.0, -0.5]);
  const mask = [1, 1, 1, 1];
  const k3 = (lp: Float64Array, rf: Float64Array): number => lp.reduce((s, p, i) => s + Math.exp(rf[i]! - p) - (rf[i]! - p) - 1, 0) / lp.length;

  it('dlogp equals central differences of the loss, desirable and undesirable, weighted, with the k3 anchor', async () => {
    for (const [desirable, weight] of [[true, 1], [false, 1.5], [true, 0.5]] as const) {
      const t = { logp, ref, mask, desirable, z0: 0.1, weight };
      const r = await wide.ktoSeq(t);
      const worst = await fdCheck(async (lp) => (await wide.ktoSeq({ ...t, logp: lp })).loss, logp, r.dlogp);
      expect(worst).toBeLessThan(1);
      const logRatio = logp.reduce((s, p, i) => s + p - ref[i]!, 0);
      expect(r.logRatio).toBeCloseTo(logRatio, 12);
      const sig = (x: number): number => 1 / (1 + Math.exp(-x));
      const value = desirable ? 1 - sig(0.5 * (logRatio - 0.1)) : 1 - sig(0.5 * (0.1 - logRatio));
      expect(r.kl).toBeCloseTo(k3(logp, ref), 12);
      expect(r.loss).toBeCloseTo(weight * value + base.beta * k3(logp, ref), 12);
      // Desirable text is pulled up (dL/dπ < 0), undesirable pushed down.
      for (const d of r.dlogp) expect(Math.sign(d)).toBe(desirable ? -1 : 1);
    }
  });

  it('the anchor pulls text far above the base back once the sigmoid has saturated', async () => {
    // π − ref = +3 on every token: r = 12, so σ′ is ~e⁻⁶ and KTO alone would still push the text up.
    const far = ref.map((x) => x + 3);
    const r = await wide.ktoSeq({ logp: far, ref, mask, desirable: true, z0: 0, weight: 1 });
    for (const d of r.dlogp) expect(d).toBeGreaterThan(0);
    const noAnchor = new ObjectiveRunner({ ...base, beta: 0, bandLow: 0.5, bandHigh: 2, drift: 'scale' });
    const free = await noAnchor.ktoSeq({ logp: far, ref, mask, desirable: true, z0: 0, weight: 1 });
    for (const d of free.dlogp) expect(d).toBeLessThan(0);
    await noAnchor.dispose();
  });

  it('class weights put λ_D·n_D / (λ_U·n_U) in the paper\'s [1, 4/3], moving λ_D only as far as needed', () => {
    const preset = { ktoDesirable: 1, ktoUndesirable: 1 };
    for (const [nD, nU] of [[1, 30], [30, 1], [10, 10], [12, 10], [5, 7], [64, 3]] as const) {
      const w = ktoClassWeights(nD, nU, preset);
      const ratio = (w.desirable * nD) / (w.undesirable * nU);
      expect(ratio).toBeGreaterThanOrEqual(1 - 1e-12);
      expect(ratio).toBeLessThanOrEqual(4 / 3 + 1e-12);
      expect(w.undesirable).toBe(1);
    }
    expect(ktoClassWeights(12, 10, preset)).toEqual({ desirable: 1, undesirable: 1 }); // 1.2 is in range already
    expect(ktoClassWeights(0, 10, preset)).toEqual({ desirable: 1, undesirable: 1 });
  });

  it('a correction trains the corrected text as desirable and the original as undesirable', async () => {
    const corrected = await wide.ktoSeq({ logp, ref, mask, desirable: true, z0: 0, weight: 1 });
    const original = await wide.ktoSeq({ logp, ref, mask, desirable: false, z0: 0, weight: 1 });
    expect(corrected.dlogp[0]).toBeLessThan(0);
    expect(original.dlogp[0]).toBeGreaterThan(0);
  });
});
