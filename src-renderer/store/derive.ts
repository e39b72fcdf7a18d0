// Memoised derived selectors. A selector that builds a new object or array on every call makes React re-render
// forever under useSyncExternalStore (React error #185), so derived values are recomputed only when one of their
// inputs changed (compared with Object.is), like reselect's createSelector.
import type { ReinState } from './types.ts';

export function derive<const I extends readonly unknown[], O>(
  inputs: { [K in keyof I]: (s: ReinState) => I[K] },
  compute: (...args: I) => O,
): (s: ReinState) => O {
  let last: I | null = null;
  let value!: O;
  return (s) => {
    const args = inputs.map((f) => f(s)) as unknown as I;
    if (last === null || args.some((a, i) => !Object.is(a, last![i]))) {
      value = compute(...args);
      last = args;
    }
    return value;
  };
}
