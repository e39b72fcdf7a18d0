// The training schedule (setting training.schedule) through the real core and scheduler, on a fake clock: the
// threshold, interval and nightly modes, the idle guard, and the one wake-up timer. Starting a round itself (the
// worker) is round.test.ts's; here `start` records the round and writes its run, as the real one does first. Last,
// the start-up recovery of version directories a killed worker left (worker-kill.test.ts kills the real one).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RunView } from '../../common/domain.ts';
import { createCore, type ReinCore } from '../core/core.ts';
import { resolveHome } from '../home.ts';
import { versionDir } from '../model-files/adapter-versions.ts';
import { Scheduler, type SchedulerTimers } from './scheduler.ts';

class FakeClock implements SchedulerTimers {
  t: number;
  private timers: { id: number; at: number; fn: () => void }[] = [];
  private nextId = 1;
  constructor(t: number) {
    this.t = t;
  }
  now = () => this.t;
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.push({ id, at: this.t + ms, fn });
    return id;
  }
  clearTimeout(h: unknown): void {
    this.timers = this.timers.filter((x) => x.id !== h);
  }
  get pending(): number {
    return this.timers.length;
  }
  /** Moves the clock to `to`, firing each timer due on the way at its own time. */
  advanceTo(to: number): void {
    for (;;) {
      const next = this.timers.filter((x) => x.at <= to).sort((a, b) => a.at - b.at)[0];
      if (next === undefined) break;
      this.timers = this.timers.filter((x) => x !== next);
      this.t = Math.max(this.t, next.at);
      next.fn();
    }
    this.t = to;
  }
}

/** A local date and time: the nightly mode works in the computer's local time. */
const local = (d: number, h: number, m = 0) => new Date(2026, 10, d, h, m).getTime();

let root: string;
let modelDir: string;
let core: ReinCore;
let clock: FakeClock;
let idle: boolean;
let started: { trigger: RunView['trigger']; at: number }[];
let turn = 0;

beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rein-scheduler-'));
  modelDir = path.join(root, 'model');
  mkdirSync(modelDir);
  writeFileSync(path.join(modelDir, 'config.json'), '{}');
  started = [];
  idle = true;
});
afterEach(() => {
  core?.close();
  rmSync(root, { recursive: true, force: true });
});

async function newCore(at: number, schedule: Record<string, unknown> | null, more: Record<string, unknown> = {}): Promise<ReinCore> {
  clock = new FakeClock(at);
  core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'home') }), now: clock.now, timers: clock, machineIdle: () => idle });
  vi.spyOn(core.scheduler, 'start').mockImplementation((trigger) => {
    started.push({ trigger, at: clock.t });
    const run = core.store.runs.insert({ modelId: modelDir, status: 'succeeded', trigger }, 'system');
    core.store.stmt('UPDATE runs SET started_at = ? WHERE id = ?').run(clock.t, run.id);
    // The real round marks the pending ratings as trained; these rounds take them all.
    core.store.stmt('UPDATE ratings SET run_id = ? WHERE model_id = ? AND run_id IS NULL').run(run.id, modelDir);
    return run;
  });
  const values = { 'model.active': modelDir, 'training.threshold': 3, ...(schedule ? { 'training.schedule': { everyMinutes: 30, at: '02:00', minPending: 2, ...schedule } } : {}), ...more };
  await core.call('setSettings', { values }, 'test');
  core.scheduler.startClock();
  return core;
}

async function rate(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const t = await core.call('captureTurn', { source: 'api', eventId: `e${turn++}`, prompt: 'p', response: 'r' }, 'test');
    await core.call('rate', { turnId: t.turn!.id, value: 'good' }, 'test');
  }
}

describe('training.schedule', () => {
  it('threshold: a round starts on the rating that reaches training.threshold, with no timer', async () => {
    await newCore(local(25, 15), null);
    await rate(2);
    expect(started).toEqual([]);
    expect(clock.pending).toBe(0);
    await rate(1);
    expect(started).toEqual([{ trigger: 'auto', at: local(25, 15) }]);
    expect(core.status().threshold).toBe(3);
  });

  it('interval: at most every everyMinutes, once minPending are pending; the wake-up timer starts the late one', async () => {
    await newCore(local(25, 15), { mode: 'interval' });
    expect(core.status().threshold).toBe(2);
    await rate(1);
    expect(started).toEqual([]);
    expect(core.scheduler.nextWakeAt).toBeNull(); // the clock alone cannot make one rating enough
    await rate(1);
    expect(started).toEqual([{ trigger: 'auto', at: local(25, 15) }]); // no round yet: the first is due at once
    clock.advanceTo(local(25, 15, 10));
    await rate(2);
    expect(started).toHaveLength(1);
    expect(core.scheduler.nextWakeAt).toBe(local(25, 15, 30));
    expect(clock.pending).toBe(1);
    clock.advanceTo(local(25, 15, 29));
    expect(started).toHaveLength(1);
    clock.advanceTo(local(25, 16));
    expect(started).toEqual([
      { trigger: 'auto', at: local(25, 15) },
      { trigger: 'auto', at: local(25, 15, 30) },
    ]);
    expect(clock.pending).toBe(0);
  });

  it('nightly: once a night after `at`, when idle, within the 6 h window', async () => {
    await newCore(local(25, 15), { mode: 'nightly', at: '02:00' });
    await rate(3);
    expect(started).toEqual([]);
    expect(core.scheduler.nextWakeAt).toBe(local(26, 2));
    idle = false;
    clock.advanceTo(local(26, 2, 30));
    expect(started).toEqual([]); // busy at 02:00: the scheduler checks again each minute
    expect(core.scheduler.nextWakeAt).toBe(local(26, 2, 31));
    idle = true;
    clock.advanceTo(local(26, 2, 31));
    expect(started).toEqual([{ trigger: 'auto', at: local(26, 2, 31) }]);
    await rate(3);
    expect(started).toHaveLength(1); // one round a night
    expect(core.scheduler.nextWakeAt).toBe(local(27, 2));
    idle = false;
    clock.advanceTo(local(27, 9));
    expect(started).toHaveLength(1); // busy all through the window: no round after 08:00
    expect(core.scheduler.nextWakeAt).toBe(local(28, 2));
    idle = true;
    clock.advanceTo(local(28, 2));
    expect(started.map((s) => s.at)).toEqual([local(26, 2, 31), local(28, 2)]);
  });

  it('nightly: a rating inside the window with the computer idle starts the night round at once', async () => {
    await newCore(local(26, 3), { mode: 'nightly', at: '02:00' });
    await rate(1);
    expect(started).toEqual([]);
    await rate(1);
    expect(started).toEqual([{ trigger: 'auto', at: local(26, 3) }]);
  });

  it('training.auto off: no round and no timer; turning it on starts the due round', async () => {
    await newCore(local(25, 15), { mode: 'interval' }, { 'training.auto': false });
    await rate(4);
    expect(started).toEqual([]);
    expect(clock.pending).toBe(0);
    await core.call('setSettings', { values: { 'training.auto': true } }, 'test');
    expect(started).toHaveLength(1);
  });

  it('a core whose clock is not started (a CLI command) never sets a wake-up timer', async () => {
    clock = new FakeClock(local(25, 15));
    core = createCore({ home: resolveHome({ REIN_HOME: path.join(root, 'cli') }), now: clock.now, timers: clock, machineIdle: () => true });
    await core.call('setSettings', { values: { 'model.active': modelDir, 'training.schedule': { mode: 'nightly', everyMinutes: 60, at: '02:00', minPending: 1 } } }, 'test');
    expect(clock.pending).toBe(0);
    expect(core.scheduler.nextWakeAt).toBeNull();
  });

  it('refuses a bad schedule with the field named and keeps the saved one', async () => {
    await newCore(local(25, 15), { mode: 'nightly', at: '02:00' });
    await expect(core.call('setSettings', { values: { 'training.schedule': { mode: 'nightly', everyMinutes: 60, at: '25:00', minPending: 2 } } }, 'test')).rejects.toMatchObject({
      field: 'training.schedule',
      message: expect.stringMatching(/training\.schedule\.at: a local time as HH:MM/),
    });
    await expect(core.call('setSettings', { values: { 'training.schedule': { mode: 'hourly', everyMinutes: 60, at: '02:00', minPending: 2 } } }, 'test')).rejects.toThrow(/training\.schedule\.mode/);
    expect(core.settings()['training.schedule'].at).toBe('02:00');
  });
});

describe('crash recovery at start-up', () => {
  it('removes a version directory no row names (a kill between its rename and its row) and keeps the listed ones', async () => {
    const home = resolveHome({ REIN_HOME: path.join(root, 'home') });
    core = createCore({ home });
    const v1 = versionDir(home, modelDir, 1);
    const v2 = versionDir(home, modelDir, 2);
    for (const v of [v1, v2]) {
      mkdirSync(v, { recursive: true });
      writeFileSync(path.join(v, 'metrics.json'), '{}');
    }
    core.store.adapters.insert({ modelId: modelDir, version: 1, status: 'active', path: v1 }, 'system');
    core.close();
    core = createCore({ home });
    expect(existsSync(v1)).toBe(true);
    expect(existsSync(v2)).toBe(false);
    expect(core.store.adapters.list(modelDir).map((a) => a.version)).toEqual([1]);
  });
});

describe("the worker's own output", () => {
  it('goes to logs/trainer.log, and a worker that dies says its last words in the run', async () => {
    const home = resolveHome({ REIN_HOME: path.join(root, 'home') });
    core = createCore({ home, machineIdle: () => false });
    const worker = path.join(root, 'dying-worker.mjs');
    writeFileSync(worker, "process.stderr.write('warning: no Vulkan adapter\\n'); process.stdout.write('half a line'); process.exit(3);\n");
    const scheduler = new Scheduler({ home, store: core.store, modelId: () => modelDir, settings: () => core.settings(), emit: () => {}, workerPath: worker });
    const run = scheduler.start('manual');
    await scheduler.idle();
    const row = core.store.runs.get(run.id)!;
    expect(row.status).toBe('failed');
    expect(row.error).toBe('the trainer process exited with code 3; its last output (logs/trainer.log): warning: no Vulkan adapter half a line');
    const log = readFileSync(path.join(home.logsDir, 'trainer.log'), 'utf8');
    expect(log).toMatch(new RegExp(`^--- run ${run.id}, \\d{4}-.*\\nwarning: no Vulkan adapter\\nhalf a line$`));
    scheduler.close();
  });
});
