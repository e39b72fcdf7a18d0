// A hostile reward mapper (training.rewardMapper) against the real `rein serve`: the user's code runs in a sandbox
// process of its own (training/mapper-sandbox.ts), so whatever it does (an unhandled rejection, a dynamic import, a
// getter or a Proxy trap that never returns, a loop in any position, Atomics.wait, a memory bomb in native code, a
// huge return value) is a clear 400 or a plain result, the server keeps answering /api/health while it runs, its
// process stays alive and its RSS does not grow. A saved mapper that turns hostile on a newer rating fails that
// training round's mapping with a clear error; the training worker, the server and the ratings are unharmed.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { SMALL_LM_DIR } from '../../src-main/node/demo/small-lm.ts';
import { MAPPER_CALL_MS, MAPPER_MEMORY_MB } from '../../src-main/node/training/reward-mapper.ts';
import { startServe } from '../harness.ts';
import type { ServeChild } from '../harness.ts';
import { figure } from './figures.ts';

let serve: ServeChild;
beforeAll(async () => {
  serve = await startServe();
  for (let i = 0; i < 3; i++) {
    const { turn } = await serve.call('captureTurn', { source: 'api', eventId: `m${i}`, prompt: `prompt ${i}`, response: `answer ${i}` });
    await serve.call('rate', { turnId: turn!.id, value: i === 1 ? 'bad' : 'good', comment: `c${i}` });
  }
});
afterAll(async () => {
  await serve?.stop();
});

function rssKb(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

/** Every process below `pid` (the sandbox, a training worker), from /proc (Linux). */
function descendants(pid: number): number[] {
  let kids: number[];
  try {
    kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
  return kids.flatMap((k) => [k, ...descendants(k)]);
}

async function healthMs(on: ServeChild = serve): Promise<number> {
  const t0 = performance.now();
  const h = await fetch(new URL('/api/health', on.url), { signal: AbortSignal.timeout(5000) });
  if (!h.ok) throw new Error(`/api/health: ${h.status}`);
  return performance.now() - t0;
}

interface Probe {
  status: number;
  text: string;
  ms: number;
  /** The slowest /api/health answered while the mapper ran, and the one right after. */
  healthDuring: number;
  healthAfter: number;
  /** The server's peak RSS growth during the call, and the sandbox's peak RSS (0 when none was seen), in MB. */
  serverGrowMb: number;
  sandboxPeakMb: number;
}

async function probe(source: string): Promise<Probe> {
  const rss0 = rssKb(serve.pid);
  let serverPeak = rss0;
  let sandboxPeak = 0;
  let done = false;
  const healthTimes: number[] = [];
  const watch = (async () => {
    while (!done) {
      serverPeak = Math.max(serverPeak, rssKb(serve.pid));
      for (const k of descendants(serve.pid)) sandboxPeak = Math.max(sandboxPeak, rssKb(k) || 0);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const health = (async () => {
    await new Promise((r) => setTimeout(r, 150));
    while (!done) {
      healthTimes.push(await healthMs().catch(() => Infinity));
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const t0 = performance.now();
  let status = 0;
  let text: string;
  try {
    const r = await fetch(new URL('/api/testRewardMapper', serve.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${serve.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ source }),
      signal: AbortSignal.timeout(30_000),
    });
    status = r.status;
    text = await r.text();
  } catch (e) {
    text = String(e);
  }
  const ms = performance.now() - t0;
  done = true;
  await Promise.all([watch, health]);
  const healthAfter = await healthMs().catch(() => Infinity);
  return { status, text, ms, healthDuring: Math.max(0, ...healthTimes), healthAfter, serverGrowMb: (serverPeak - rss0) / 1024, sandboxPeakMb: sandboxPeak / 1024 };
}

const LOOP = new RegExp(`ran longer than ${MAPPER_CALL_MS} ms`);
// A memory bomb is stopped by the RSS cap or, on a machine too loaded to fill memory fast, by the time limit first;
// the sandbox's unit test (mapper-sandbox.test.ts) pins the RSS cap alone.
const MEMORY = new RegExp(`memory|ran longer than ${MAPPER_CALL_MS} ms`);
/** A mapper's source, and what it must get: a 400 naming why, or a 200 (its stray promise is its own business). */
const CORPUS: [string, string, RegExp | 200][] = [
  // Rejections and dynamic import: both used to end the server on an unhandled rejection after it answered 200.
  ['a rejection left unhandled', '(r) => { Promise.reject(new Error("x")); return 0 }', 200],
  ['an async throw left unhandled', '(r) => { (async () => { throw new Error("late") })(); return 0 }', 200],
  ['a rejection at the top level', '(Promise.reject(new Error("top")), (r) => 0)', 200],
  ['an async mapper that throws', 'async (r) => { throw new Error("x") }', /returned object/],
  ['a dynamic import, not awaited', '(r) => { import("fs"); return 0 }', 200],
  ['a dynamic import, returned', '(r) => import("node:child_process")', /returned object/],
  ['a dynamic import at the top level', '(import("fs"), (r) => 0)', 200],
  // Getters and Proxies of a thrown or returned object: read inside the time limit, or never.
  ['a thrown object whose message getter loops', '(r) => { throw { get message() { while (true) {} } } }', LOOP],
  ['a thrown object whose name getter takes 8 s', '(r) => { throw { message: "m", get name() { const t = Date.now(); while (Date.now() - t < 8000) {} return "E" } } }', LOOP],
  ['a thrown object whose toString loops', '(r) => { throw { toString() { while (true) {} } } }', LOOP],
  ['a thrown object whose Symbol.toPrimitive loops', '(r) => { throw { [Symbol.toPrimitive]() { while (true) {} } } }', LOOP],
  ['a thrown Proxy whose has trap loops', '(r) => { throw new Proxy({}, { has() { while (true) {} } }) }', LOOP],
  ['a thrown Proxy whose get trap loops', '(r) => { throw new Proxy({}, { has: () => true, get() { while (true) {} } }) }', LOOP],
  ['a thrown Proxy whose getPrototypeOf trap loops', '(r) => { throw new Proxy(new Error("p"), { getPrototypeOf() { while (true) {} } }) }', /threw on rating|ran longer/],
  ['a returned Proxy whose traps loop', '(r) => new Proxy({}, { get() { while (true) {} }, getPrototypeOf() { while (true) {} } })', /returned object/],
  ['a returned object whose valueOf loops', '(r) => ({ valueOf() { while (true) {} } })', /returned object/],
  ['a mapper that is a Proxy whose apply trap loops', 'new Proxy((r) => 0, { apply() { while (true) {} } })', LOOP],
  // Endless loops in every position.
  ['a loop at the top level', '(() => { while (true) {} })()', LOOP],
  ['a loop in the body', '(r) => { while (true) {} }', LOOP],
  ['a loop in finally', '(r) => { try { return 0 } finally { while (true) {} } }', LOOP],
  ['a loop in a microtask', '(r) => { Promise.resolve().then(() => { while (true) {} }); return 0 }', LOOP],
  ['an endless microtask chain', '(r) => { const f = () => Promise.resolve().then(f); f(); return 0 }', LOOP],
  ['a loop in a microtask at the top level', '(Promise.resolve().then(() => { while (true) {} }), (r) => 0)', LOOP],
  ['a loop in a sort comparator', '(r) => [3, 2, 1].sort(() => { while (true) {} })[0]', LOOP],
  ['catastrophic regex backtracking', '(r) => /^(a+)+$/.test("a".repeat(40) + "b") ? 1 : 0', LOOP],
  ['endless recursion', '(r) => { const f = () => f(); return f() }', /threw on rating \d+: RangeError/],
  ['Atomics.wait for ever', '(r) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0) && 0', LOOP],
  ['Atomics.wait for 8 s', '(r) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 8000) && 0', LOOP],
  // Memory bombs, on the heap and off it (array buffers, which no heap limit counts).
  ['new Uint8Array(2**31).fill(1)', '(r) => new Uint8Array(2 ** 31).fill(1)[0]', MEMORY],
  ['array buffers kept at the top level', '(globalThis.keep = new Uint8Array(2 ** 31).fill(1), (r) => 0)', MEMORY],
  ['a SharedArrayBuffer of 2 GB filled', '(r) => new Uint8Array(new SharedArrayBuffer(2 ** 31)).fill(1)[0]', MEMORY],
  ['a WebAssembly.Memory of 2 GB filled', '(r) => new Uint8Array(new WebAssembly.Memory({ initial: 32000 }).buffer).fill(1)[0]', MEMORY],
  ['heap arrays grown without end', '(r) => { const a = []; for (;;) a.push(new Array(1e6).fill(r.reward)) }', MEMORY],
  ['one heap array of 1 GB', '(r) => new Array(2 ** 27).fill(0.5).length', MEMORY],
  ['strings grown without end', '(r) => { let s = [], x = "y"; for (;;) s.push(x = x + x.slice(0, 1e6) + "z") }', MEMORY],
  // Huge return values and errors: only their type, or 300 characters, cross.
  ['a returned string of 256 MB', '(r) => "x".repeat(2 ** 28)', /returned string/],
  ['a returned array of a million strings', '(r) => new Array(1e6).fill("x".repeat(100))', /returned object/],
  ['a returned BigInt of ten thousand digits', '(r) => 10n ** 10000n', /returned bigint/],
  // Cutting its text to 300 characters flattens the string, which a loaded machine may not finish in time.
  ['a thrown message of 256 MB', '(r) => { throw new Error("x".repeat(2 ** 28)) }', new RegExp(`threw on rating \\d+: Error: x{200}|memory|${LOOP.source}`)],
  // Reaching out.
  ['the host realm through a constructor', '(r) => r.constructor.constructor("return process")().exit(1)', /EvalError/],
];

test(`a corpus of ${CORPUS.length} hostile reward mappers: each a clear answer, the server healthy and its memory flat`, { timeout: 600_000 }, async () => {
  const rows: string[] = [];
  const failures: string[] = [];
  let passed = 0;
  let worstHealth = 0;
  let worstGrow = 0;
  let worstSandbox = 0;
  let worstMs = 0;
  for (const [label, source, want] of CORPUS) {
    const p = await probe(source);
    const ok =
      (want === 200 ? p.status === 200 : p.status === 400 && want.test(p.text) && /training\.rewardMapper: /.test(p.text)) &&
      p.healthDuring < 2000 &&
      p.healthAfter < 2000 &&
      p.serverGrowMb < 100 &&
      serve.alive();
    worstHealth = Math.max(worstHealth, p.healthDuring, p.healthAfter);
    worstGrow = Math.max(worstGrow, p.serverGrowMb);
    worstSandbox = Math.max(worstSandbox, p.sandboxPeakMb);
    worstMs = Math.max(worstMs, p.ms);
    rows.push(
      `${ok ? 'ok  ' : 'FAIL'} ${label}: ${p.status} in ${p.ms.toFixed(0)} ms, health ${p.healthDuring.toFixed(0)}/${p.healthAfter.toFixed(0)} ms, ` +
        `server RSS +${p.serverGrowMb.toFixed(0)} MB, sandbox peak ${p.sandboxPeakMb.toFixed(0)} MB: ${p.text.slice(0, 160)}`,
    );
    if (ok) passed++;
    else failures.push(label);
    if (!serve.alive()) break;
  }
  console.log(`hostile reward mappers:\n  ${rows.join('\n  ')}`);
  figure(
    `hostile reward mappers: ${passed}/${CORPUS.length} answered clearly; slowest call ${worstMs.toFixed(0)} ms, ` +
      `slowest /api/health ${worstHealth.toFixed(0)} ms, server RSS growth at most ${worstGrow.toFixed(0)} MB, sandbox peak RSS ${worstSandbox.toFixed(0)} MB (cap ${MAPPER_MEMORY_MB} MB)`,
  );
  expect(failures).toEqual([]);
  expect(serve.alive()).toBe(true);
  // A good mapper still maps after all of them.
  const ok = await serve.call('testRewardMapper', { source: '(r) => r.reward / 2' });
  expect(ok.results.map((x) => x.reward).sort()).toEqual([-0.5, 0.5, 0.5]);
});

test('a saved mapper that turns hostile on a newer rating fails the round with a clear error; worker and server live on', { timeout: 300_000 }, async () => {
  // A server of its own: this test stands even when the corpus above took the first one down.
  const serve = await startServe();
  const rows: string[] = [];
  const cases: [string, string, RegExp][] = [
    ['a memory bomb', 'new Uint8Array(2 ** 31).fill(1)[0]', MEMORY],
    ['Atomics.wait for ever', 'Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0) && 0', LOOP],
    ['a thrown Proxy whose traps loop', '(() => { throw new Proxy({}, { has() { while (true) {} } }) })()', LOOP],
  ];
  try {
    await serve.call('setSettings', { values: { 'model.active': SMALL_LM_DIR, 'training.auto': false, 'training.preset': 'custom', 'training.custom': { steps: 1 } } });
    for (const [i, [label, hostile, want]] of cases.entries()) {
      const tag = `boom${i}`;
      // Benign on every rating it is tried on before it is saved.
      await serve.call('setSettings', { values: { 'training.rewardMapper': `(r) => r.comment === ${JSON.stringify(tag)} ? ${hostile} : r.reward` } });
      const { turn } = await serve.call('captureTurn', { source: 'api', eventId: `late${i}`, prompt: 'a late prompt', response: 'a late answer' });
      await serve.call('rate', { turnId: turn!.id, value: 'good', comment: tag });
      const pending = (await serve.call('status', {})).pending;
      const t0 = performance.now();
      // The previous case's run is marked failed a moment before the scheduler lets go of it (its worker is still being
      // reaped), so a start right after it may answer 409 "already running": try again, as a user pressing Train now would.
      let runId: number | undefined;
      while (runId === undefined) {
        try {
          runId = (await serve.call('startTraining', {})).runId;
        } catch (e) {
          if (!/HTTP 409/.test(String(e)) || performance.now() - t0 > 60_000) throw e;
          await new Promise((r) => setTimeout(r, 250));
        }
      }
      let slowestHealth = 0;
      let run = (await serve.call('listRuns', {})).find((r) => r.id === runId)!;
      while (run.status === 'queued' || run.status === 'running') {
        slowestHealth = Math.max(slowestHealth, await healthMs(serve));
        await new Promise((r) => setTimeout(r, 100));
        run = (await serve.call('listRuns', {})).find((r) => r.id === runId)!;
        if (performance.now() - t0 > 120_000) break;
      }
      const ms = performance.now() - t0;
      const st = await serve.call('status', {});
      rows.push(`${label}: run ${run.status} in ${ms.toFixed(0)} ms, slowest health ${slowestHealth.toFixed(0)} ms, pending ${pending} → ${st.pending}: ${run.error?.slice(0, 200)}`);
      expect(run.status, label).toBe('failed');
      expect(run.error, label).toMatch(/training\.rewardMapper: /);
      expect(run.error, label).toMatch(want);
      expect(st.pending, label).toBe(pending);
      expect(st.training.state, label).toBe('idle');
      expect(slowestHealth, label).toBeLessThan(2000);
      expect(serve.alive(), label).toBe(true);
    }
  } finally {
    await serve.stop();
  }
  console.log(`hostile saved mapper in a round:\n  ${rows.join('\n  ')}`);
  figure(`hostile saved reward mapper in a training round: ${cases.length}/${cases.length} rounds failed with the mapper's error, server alive, ratings pending`);
});
