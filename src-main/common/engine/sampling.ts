// Drawing the next token from a row of log-probabilities, and the log probability of the drawn token under the
// distribution it was drawn from (the behaviour logprob μ an on-policy turn stores). Rein's model server
// (serving/embedded.ts) and the engine's own sampler (node/engine/engine.ts) both draw here, so a turn sampled by
// either has the same μ for the same row, temperature and top_p.
import type { Rng } from './rng.ts';

// pick()'s order is "most probable first, ties by the lower id", and the top-p mass and the draw add and subtract the
// probabilities in that order, so the result depends on that order bit for bit. Sorting the whole vocabulary (152k
// ids for Qwen) with a comparator cost ~100 ms a token; instead the probabilities (all in [0, 1]) are bucketed by the
// high 32 bits of their IEEE-754 pattern, which order them as their values do (at most 65,536 buckets over the range
// the row spans down to 2^-54, then one for everything smaller), and a bucket is sorted only when a walk reaches it.
// The walks need values only (equal values are interchangeable in a sum); the one sampled position is mapped back to
// its id at the end: the n-th id, in id order, among those with its value.
const MAX_BUCKETS = 1 << 16;
/** The high word of 1, and how far under it the high word of 2^-54 is: the mass walk never needs a smaller value. */
const ONE_HI = 0x3ff00000;
const CUT = 54 << 20;
/** Adding a value below mass·2^-54 leaves the mass as it is (under half its ulp), and so does every smaller one. */
const NO_CHANGE = 2 ** -54;
const HI_WORD = new Uint8Array(new Float64Array([1]).buffer)[7] === 0x3f ? 1 : 0;
const word = new Float64Array(1);
const wordHalves = new Uint32Array(word.buffer);
let probs = new Float64Array(0);
let probHalves = new Uint32Array(0);
/** The probabilities, negated (an ascending sort is "most probable first"), grouped by bucket. */
let negSorted = new Float64Array(0);
let bucketOf = new Int32Array(0);
const bucketStart = new Int32Array(MAX_BUCKETS + 2);

/** Sorts bucket b of negSorted in place and returns where it ends. */
function sortBucket(b: number): number {
  const s = bucketStart[b]!;
  const e = bucketStart[b + 1]!;
  if (e - s > 32) negSorted.subarray(s, e).sort();
  else {
    for (let i = s + 1; i < e; i++) {
      const v = negSorted[i]!;
      let j = i;
      for (; j > s && negSorted[j - 1]! > v; j--) negSorted[j] = negSorted[j - 1]!;
      negSorted[j] = v;
    }
  }
  return e;
}

/**
 * Greedy at temperature 0 or top_p 0 (the smallest set holding a share 0 of the mass is the top token); else
 * softmax(logp/temperature) cut to the smallest top-p set (Holtzman et al. 2020). `out.logprob` receives the log
 * probability of the returned token under that distribution: (logp − max)/T − log(nucleus mass), and 0 for a
 * greedy pick, which draws its token with probability 1 (the limit of the tempered distribution as T → 0).
 */
export function pick(logp: Float64Array, temperature: number, topP: number, rng: Rng, out?: { logprob: number }): number {
  const V = logp.length;
  let best = 0;
  for (let i = 1; i < V; i++) if (logp[i]! > logp[best]!) best = i;
  if (temperature <= 0 || topP <= 0) {
    if (out !== undefined) out.logprob = 0;
    return best;
  }
  if (probs.length !== V) {
    probs = new Float64Array(V);
    probHalves = new Uint32Array(probs.buffer);
    negSorted = new Float64Array(V);
    bucketOf = new Int32Array(V);
  }
  const p = probs;
  const top = logp[best]!;
  let z = 0;
  let least = 1;
  for (let i = 0; i < V; i++) {
    const x = Math.exp((logp[i]! - top) / temperature);
    z += p[i] = x;
    if (x < least) least = x;
  }
  const target = topP * z;
  if (!(0 < target)) {
    // NaN logits: llama.cpp handed over something that is not a distribution.
    throw new Error('the model returned logits that are not numbers (NaN)');
  }
  // Every p is in [0, 1] now (a NaN would have made z NaN) and p[best] = 1. Bucket b holds the d = hi(1) - hi(p)
  // in [b·2^shift, (b+1)·2^shift) for d < span; the last bucket the rest.
  word[0] = least;
  const span = Math.min(CUT, ONE_HI - wordHalves[HI_WORD]! + 1);
  const buckets = Math.min(MAX_BUCKETS, V);
  let shift = 0;
  while ((span - 1) >>> shift >= buckets) shift++;
  const last = ((span - 1) >>> shift) + 1;
  bucketStart.fill(0, 0, last + 2);
  for (let i = 0; i < V; i++) {
    const d = ONE_HI - probHalves[2 * i + HI_WORD]!;
    const b = d < span ? d >>> shift : last;
    bucketOf[i] = b;
    bucketStart[b]!++;
  }
  for (let b = 1; b <= last; b++) bucketStart[b]! += bucketStart[b - 1]!;
  // bucketStart[b] is where bucket b ends; filled from its end down, it is where the bucket starts.
  for (let i = V - 1; i >= 0; i--) negSorted[--bucketStart[bucketOf[i]!]!] = -p[i]!;
  bucketStart[last + 1] = V;
  const S = negSorted;
  let sorted = 0; // positions below this are in their final order
  let next = 0; // the next bucket to sort
  // The smallest prefix of that order whose mass reaches topP·z (all of it when it never does).
  let mass = 0;
  let k = 0;
  while (k < V && mass < target) {
    while (k >= sorted) sorted = sortBucket(next++);
    const v = -S[k]!;
    if (v < mass * NO_CHANGE) {
      k = V;
      break;
    }
    mass += v;
    k++;
  }
  let u = rng.uniform() * mass;
  let at = k - 1;
  for (let i = 0; i < k; i++) {
    while (i >= sorted) sorted = sortBucket(next++);
    u -= -S[i]!;
    if (u <= 0) {
      at = i;
      break;
    }
  }
  // The id at that position: the n-th with its value, in id order, n counted from the value's first position.
  const n = S[at]!;
  let first = at;
  while (first > 0 && S[first - 1] === n) first--;
  let skip = at - first;
  const v = -n;
  for (let i = 0; i < V; i++) if (p[i] === v && skip-- === 0) {
    if (out !== undefined) out.logprob = (logp[i]! - top) / temperature - Math.log(mass);
    return i;
  }
  throw new Error('pick: the sampled probability is not in the row');
}
