// How far one array of numbers is from a reference, for the engine's tests and benchmarks.

/** max |a − b| / max |b|: the largest error relative to the reference's scale (not to each element). */
export function maxRelErr(a: ArrayLike<number | bigint>, b: ArrayLike<number | bigint>): number {
  if (a.length !== b.length) throw new RangeError(`maxRelErr: lengths differ (${a.length} against ${b.length})`);
  let d = 0;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const x = Number(a[i]);
    const y = Number(b[i]);
    d = Math.max(d, Math.abs(x - y));
    m = Math.max(m, Math.abs(y));
  }
  return d / Math.max(m, 1e-30);
}
