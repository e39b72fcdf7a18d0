// The reward mapper's sandbox process itself (mapper-sandbox.ts), with limits chosen per test so each one shows a
// single limit at work: chunks keep the order and stop at the first failure, the RSS cap stops array buffers that no
// heap limit counts (with a time limit far away), the heap cap ends the mapper's thread, a call stuck in native code
// is stopped by the supervisor, and a dropped promise is harmless. reward-mapper.test.ts covers the messages.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MAPPER_SILENCE_MS, MAX_SANDBOXES, runMapperSandbox, SANDBOX_CHUNK, type SandboxLimits } from './mapper-sandbox.ts';

const LIMITS: SandboxLimits = { callMs: 500, memoryMb: 256, heapMb: 64 };
const args = (n: number): unknown[][] => Array.from({ length: n }, (_, i) => [{ reward: i / n, comment: `c${i}` }, { length: i }]);

/** Polls the RSS of this process's children (Linux /proc) while `p` runs: the peak in MB and the most children at once (null where there is no /proc). */
async function childPeakMb<T>(p: Promise<T>): Promise<{ value: T; peakMb: number | null; most: number | null }> {
  let peak: number | null = null;
  let most: number | null = null;
  let done = false;
  const watch = (async () => {
    while (!done) {
      try {
        const kids = readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
        most = Math.max(most ?? 0, kids.length);
        for (const k of kids) {
          const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${k}/status`, 'utf8'))?.[1] ?? NaN);
          if (Number.isFinite(kb)) peak = Math.max(peak ?? 0, kb / 1024);
        }
      } catch {
        // no /proc here, or the child just ended
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  const value = await p.finally(() => (done = true));
  await watch;
  return { value, peakMb: peak, most };
}

describe('the reward mapper sandbox', () => {
  it(`maps a batch larger than one chunk (${SANDBOX_CHUNK}) in order, and stops at the first failure`, { timeout: 60_000 }, async () => {
    const n = 2 * SANDBOX_CHUNK + 88;
    const t0 = performance.now();
    const all = await runMapperSandbox('(rating, turn) => rating.reward - turn.length / 10000', args(n), LIMITS);
    const ms = performance.now() - t0;
    expect(all.failure).toBe(null);
    expect(all.values).toEqual(args(n).map(([r, t]) => (r as { reward: number }).reward - (t as { length: number }).length / 10000));
    const stop = await runMapperSandbox(`(r, t) => t.length === ${SANDBOX_CHUNK + 7} ? "no" : 0`, args(n), LIMITS);
    expect(stop.values).toHaveLength(SANDBOX_CHUNK + 7);
    expect(stop.failure).toEqual({ at: SANDBOX_CHUNK + 7, why: 'returned', text: 'string' });
    console.log(`${n} cases in one sandbox: ${ms.toFixed(0)} ms (process start included)`);
  });

  it('caps the process RSS, array buffers included, long before the time limit would stop it', { timeout: 60_000 }, async () => {
    const limits = { ...LIMITS, callMs: 30_000 };
    const { value, peakMb } = await childPeakMb(runMapperSandbox('(r) => new Uint8Array(2 ** 31).fill(1)[0]', args(1), limits));
    console.log(`new Uint8Array(2 ** 31).fill(1) under a ${limits.memoryMb} MB cap: ${JSON.stringify(value.failure)}, sandbox peak RSS ${peakMb?.toFixed(0) ?? 'n/a'} MB`);
    expect(value.failure).toMatchObject({ at: 0, why: 'memory' });
    // The supervisor polls every 10 ms: what is touched meanwhile is the overshoot.
    if (peakMb !== null) expect(peakMb).toBeLessThan(limits.memoryMb + 256);
  });

  it('caps the mapper thread\'s heap: running out of it ends the thread, not a server', { timeout: 60_000 }, async () => {
    const r = await runMapperSandbox('(r) => { const a = []; for (;;) a.push(new Array(1e6).fill(r.reward + 0.5)) }', args(1), { ...LIMITS, callMs: 30_000, memoryMb: 2048 });
    expect(r.failure).toMatchObject({ at: 0, why: 'heap' });
  });

  it('stops a call stuck where the vm timeout cannot reach (Atomics.wait), and a loop at the top level', { timeout: 60_000 }, async () => {
    const t0 = performance.now();
    const r = await runMapperSandbox('(r) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0) && 0', args(3), { ...LIMITS, callMs: 300 });
    const ms = performance.now() - t0;
    expect(r.failure).toMatchObject({ at: 0, why: 'timeout' });
    expect(ms).toBeLessThan(MAPPER_SILENCE_MS + 5000);
    const top = await runMapperSandbox('(() => { for (;;) {} })()', args(3), { ...LIMITS, callMs: 300 });
    expect(top.failure).toMatchObject({ at: -1, why: 'timeout' });
    console.log(`Atomics.wait for ever, limit 300 ms: stopped in ${ms.toFixed(0)} ms`);
  });

  it('a dropped rejection, a dynamic import and a finalizer are harmless; only primitives come back', { timeout: 60_000 }, async () => {
    const r = await runMapperSandbox(
      '(r) => { Promise.reject(new Error("x")); import("node:fs"); new FinalizationRegistry(() => { for (;;) {} }).register({}, 1); return r.reward }',
      args(4),
      LIMITS,
    );
    expect(r).toEqual({ values: [0, 0.25, 0.5, 0.75], failure: null });
    const thrown = await runMapperSandbox('(r) => { throw { name: "Big", get message() { return "m".repeat(1e6) } } }', args(1), LIMITS);
    expect(thrown.failure).toEqual({ at: 0, why: 'threw', text: `Big: ${'m'.repeat(300 - 'Big: '.length)}` });
  });

  it(`runs at most ${MAX_SANDBOXES} sandboxes at once; the others wait their turn`, { timeout: 60_000 }, async () => {
    const slow = '(r) => { const t = Date.now(); while (Date.now() - t < 300) {} return r.reward }';
    const { value, most } = await childPeakMb(Promise.all(Array.from({ length: 5 }, () => runMapperSandbox(slow, args(2), LIMITS))));
    for (const r of value) expect(r).toEqual({ values: [0, 0.5], failure: null });
    if (most !== null) expect(most).toBeLessThanOrEqual(MAX_SANDBOXES);
    if (most !== null) expect(most).toBeGreaterThan(0);
  });

  it('sees nothing of the host: no process, no require, no environment, no code from strings', { timeout: 60_000 }, async () => {
    const r = await runMapperSandbox(
      '(r) => [typeof process, typeof require, typeof globalThis.Buffer, typeof globalThis.fetch].join() === "undefined,undefined,undefined,undefined" ? 1 : -1',
      args(1),
      LIMITS,
    );
    expect(r).toEqual({ values: [1], failure: null });
    const gen = await runMapperSandbox('(r) => (0, r.constructor.constructor)("return 1")()', args(1), LIMITS);
    expect(gen.failure).toMatchObject({ why: 'threw', text: expect.stringMatching(/^EvalError/) as unknown });
  });
});
