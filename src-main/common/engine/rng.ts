// A seeded, platform-independent PRNG for weight and LoRA initialisation.
// xoshiro128** 1.1 (Blackman & Vigna, https://prng.di.unimi.it/xoshiro128starstar.c), seeded through
// splitmix32 so that nearby seeds give unrelated streams. Only 32-bit integer ops (Math.imul, >>>), so
// every platform and Node version produces the same sequence.

export class Rng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;
  private spareNormal: number | null = null;
  private readonly seed: number;

  constructor(seed: number) {
    if (!Number.isSafeInteger(seed)) throw new RangeError(`Rng seed must be a safe integer, got ${seed}`);
    this.seed = seed;
    // Fold the high bits in too, so seeds above 2^32 are not silently aliased.
    let x = (seed >>> 0) ^ Math.imul(Math.floor(seed / 2 ** 32) >>> 0, 0x9e3779b9);
    const next = (): number => {
      // splitmix32 (Steele, Lea & Flood 2014, 32-bit variant).
      x = (x + 0x9e3779b9) | 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x21f0aaad);
      z = Math.imul(z ^ (z >>> 15), 0x735a2d97);
      return (z ^ (z >>> 15)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** A uniform 32-bit unsigned integer. */
  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** A uniform double in [0, 1) with 53 random bits. */
  uniform(): number {
    const hi = this.nextU32() >>> 5; // 27 bits
    const lo = this.nextU32() >>> 6; // 26 bits
    return (hi * 67108864 + lo) / 9007199254740992;
  }

  /** A standard normal draw (Marsaglia's polar method; the second value is kept for the next call). */
  normal(): number {
    if (this.spareNormal !== null) {
      const v = this.spareNormal;
      this.spareNormal = null;
      return v;
    }
    for (;;) {
      const u = 2 * this.uniform() - 1;
      const v = 2 * this.uniform() - 1;
      const s = u * u + v * v;
      if (s > 0 && s < 1) {
        const f = Math.sqrt((-2 * Math.log(s)) / s);
        this.spareNormal = v * f;
        return u * f;
      }
    }
  }

  /** Fill `out` with uniform values in [lo, hi). */
  fillUniform<A extends Float32Array | Float64Array>(out: A, lo: number, hi: number): A {
    const span = hi - lo;
    for (let i = 0; i < out.length; i++) out[i] = lo + span * this.uniform();
    return out;
  }

  /** Fill `out` with normal values of the given mean and standard deviation. */
  fillNormal<A extends Float32Array | Float64Array>(out: A, std: number, mean = 0): A {
    for (let i = 0; i < out.length; i++) out[i] = mean + std * this.normal();
    return out;
  }

  /**
   * An independent stream named by a label (e.g. a tensor name), derived from this stream's seed only, so
   * adding or reordering tensors does not change the others' values.
   */
  fork(label: string): Rng {
    // Two FNV-1a (32-bit) hashes with different offset bases over "seed:label", joined into 53 bits.
    const text = `${this.seed}:${label}`;
    let h1 = 0x811c9dc5;
    let h2 = 0x050c5d1f;
    for (let i = 0; i < text.length; i++) {
      h1 = Math.imul(h1 ^ text.charCodeAt(i), 0x01000193);
      h2 = Math.imul(h2 ^ text.charCodeAt(i), 0x01000193);
    }
    return new Rng((h1 >>> 0) * 2 ** 21 + ((h2 >>> 0) >>> 11));
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
