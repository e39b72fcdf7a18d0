// The scheduler: starts a round when training.schedule says one is due (with training.auto; common/training/
// schedule.ts decides: a pending-count threshold, an interval, or nightly; after a rejected round, only once as many
// ratings arrived that it did not see), or on `startTraining`; one round at a time (the training lock plus a check of the runs table);
// the round runs in a child process (worker.ts) at lower priority; its progress becomes `trainingProgress` events
// and its outcome `adapterChanged` events. At start-up it recovers from a crash: a stale lock is removed, a run left
// `running` by a process that is gone is marked failed with the reason, and half-written versions are deleted.
import { fork, type ChildProcess } from 'node:child_process';
import { closeSync, fstatSync, mkdirSync, openSync, readSync, renameSync, statSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Events } from '../../common/api.ts';
import type { Settings } from '../../common/config.ts';
import type { RunView } from '../../common/domain.ts';
import { ConflictError, ReinError } from '../../common/errors.ts';
import { scheduleDecision } from '../../common/training/schedule.ts';
import type { ReinHome } from '../home.ts';
import { keysForChild } from '../store/keyring.ts';
import type { Store } from '../store/store.ts';
import { pidAlive } from '../pid.ts';
import { acquireTrainingLock, readTrainingLock, releaseTrainingLock, writeTrainingLock } from './lock.ts';
import { resolveModelDir } from '../model-files/base-model.ts';
import { removeOrphanVersions, removeStaleStaging } from '../model-files/adapter-versions.ts';
import type { WorkerMessage, WorkerReply } from './worker.ts';
import type { EnvPlayer, GateKind } from './round.ts';

export interface SchedulerDeps {
  home: ReinHome;
  store: Store;
  modelId: () => string;
  /** The validated settings (store/settings.ts readSettings). */
  settings: () => Settings;
  emit: <E extends 'trainingProgress' | 'adapterChanged'>(event: E, payload: Events[E]) => void;
  /** Niceness of the worker (os.setPriority); 10 by default. */
  priority?: number;
  /** Worker entry (tests may point elsewhere). */
  workerPath?: string;
  /** How often a deferred (only-when-idle) start is retried, ms. */
  idlePollMs?: number;
  /** The clock the schedule runs on (tests pass a fake one); the system clock with unref'd timers by default. */
  timers?: SchedulerTimers;
  /** The idle guard of nightly rounds and training.onlyWhenIdle; `machineIdle` by default. */
  machineIdle?: () => boolean;
}

export interface SchedulerTimers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const SYSTEM_TIMERS: SchedulerTimers = {
  now: Date.now,
  // unref: a pending wake-up never keeps a CLI or a test process alive.
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** setTimeout's longest delay (2^31-1 ms, about 24.8 days); a later wake-up re-arms when this one fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** logs/trainer.log starts afresh (the old one kept as trainer.log.1) once it passes this size. */
const TRAINER_LOG_MAX_BYTES = 4 * 1024 * 1024;

interface TrainerLog {
  file: string;
  /** null when the log cannot be written (a full disk): the worker's output is dropped, the round still runs. */
  fd: number | null;
  /** Where this run's output starts in the file. */
  start: number;
}

function openTrainerLog(home: ReinHome, runId: number): TrainerLog {
  const file = path.join(home.logsDir, 'trainer.log');
  try {
    mkdirSync(home.logsDir, { recursive: true, mode: 0o700 });
    if (statSync(file).size > TRAINER_LOG_MAX_BYTES) renameSync(file, `${file}.1`);
  } catch {
    // no log yet
  }
  let fd: number | null = null;
  try {
    fd = openSync(file, 'a', 0o600);
    writeSync(fd, `--- run ${runId}, ${new Date().toISOString()}\n`);
    return { file, fd, start: fstatSync(fd).size };
  } catch {
    if (fd !== null) closeSync(fd);
    return { file, fd: null, start: Infinity };
  }
}

/** The last lines a run's worker wrote (up to 600 characters, on one line), '' if none. */
function trainerLogSince(log: TrainerLog): string {
  if (log.fd === null) return '';
  let fd: number;
  try {
    fd = openSync(log.file, 'r');
  } catch {
    return '';
  }
  try {
    const size = fstatSync(fd).size;
    const from = Math.max(log.start, size - 600);
    if (size <= from) return '';
    const buf = Buffer.alloc(size - from);
    readSync(fd, buf, 0, buf.length, from);
    return buf.toString('utf8').replace(/\s+/g, ' ').trim();
  } finally {
    closeSync(fd);
  }
}

export const WORKER_PATH = fileURLToPath(new URL('./worker.ts', import.meta.url));

// The Electron shell is one bundle with no worker.ts beside it: it builds the worker as its own entry and names
// that file here at start-up (electron.vite.config.ts, src-main/electron-main/index.ts).
let workerEntry = WORKER_PATH;
export function setWorkerEntry(file: string): void {
  workerEntry = file;
}

/** Idle: the 1-minute load average is below a third of the cores (other work leaves room for training). */
export function machineIdle(): boolean {
  return os.loadavg()[0]! < os.availableParallelism() / 3;
}

export class Scheduler {
  private readonly d: SchedulerDeps;
  private child: { proc: ChildProcess; runId: number; modelId: string; done: boolean; failed: string | null; log: TrainerLog } | null = null;
  /** The one wake-up timer: the schedule's next due time, or the next idle check. */
  private wake: { handle: unknown; at: number } | null = null;
  /** Set by startClock: only the serving process's scheduler wakes itself up (a CLI's core never does). */
  private clockRunning = false;
  private exitWaiters: (() => void)[] = [];
  private readonly timers: SchedulerTimers;
  private envPlayer: EnvPlayer | null = null;

  /**
   * Registers what plays an env-gated round's episodes (the gym's agent and env, node/gym/session.ts), or removes it
   * (null). The worker asks for them over IPC (worker.ts) and the answer goes back to it.
   */
  setEnvPlayer(player: EnvPlayer | null): void {
    this.envPlayer = player;
  }

  constructor(d: SchedulerDeps) {
    this.d = d;
    this.timers = d.timers ?? SYSTEM_TIMERS;
  }

  /** Lets the schedule wake the scheduler by the clock (interval and nightly rounds); `rein serve` and the app call it. */
  startClock(): void {
    this.clockRunning = true;
    this.maybeAutoStart();
  }

  /** When the wake-up timer is set to fire (tests and status), or null. */
  get nextWakeAt(): number | null {
    return this.wake?.at ?? null;
  }

  private setWake(at: number | null): void {
    if (this.wake !== null) this.timers.clearTimeout(this.wake.handle);
    this.wake = null;
    if (at === null || !this.clockRunning || this.closed) return;
    const ms = Math.min(MAX_TIMER_MS, Math.max(0, at - this.timers.now()));
    const wake = {
      at,
      handle: this.timers.setTimeout(() => {
        if (this.wake !== wake) return;
        this.wake = null;
        this.maybeAutoStart();
      }, ms),
    };
    this.wake = wake;
  }

  /** Crash recovery; call once at start-up. Returns the runs it marked failed. */
  recover(): number[] {
    const lock = readTrainingLock(this.d.home);
    const liveWorker = lock !== null && lock.pid !== process.pid && pidAlive(lock.pid) ? lock : null;
    if (lock !== null && liveWorker === null) releaseTrainingLock(this.d.home, lock.pid);
    const failed: number[] = [];
    for (const id of this.d.store.runs.running()) {
      if (liveWorker !== null && liveWorker.runId === id) continue; // a detached worker still finishing it
      const why = lock !== null && lock.runId === id ? `the trainer process (pid ${lock.pid}) is gone` : 'the app stopped while it was running';
      this.d.store.runs.end(id, 'failed', `interrupted: ${why}`);
      failed.push(id);
    }
    removeStaleStaging(this.d.home);
    if (liveWorker === null) removeOrphanVersions(this.d.home, this.d.store);
    return failed;
  }

  get runningRunId(): number | null {
    return this.busy() ? this.child!.runId : null;
  }

  /**
   * Whether a round runs: a worker that has reported its outcome ('done') is only retraining the reward model
   * (worker.ts, training lock already released), which never holds up the next round.
   */
  private busy(): boolean {
    return this.child !== null && !this.child.done;
  }

  /**
   * After a rating, a settings change, a round's end and each wake-up: start a round when training.schedule says one
   * is due (and training.auto), otherwise set the wake-up timer for the first moment the clock could make one due.
   */
  maybeAutoStart(): void {
    if (this.closed) return;
    const s = this.d.settings();
    if (!s['training.auto'] || this.busy()) return this.setWake(null);
    const modelId = this.d.modelId();
    const now = this.timers.now();
    const threshold = s['training.threshold'];
    const decision = scheduleDecision(s['training.schedule'], {
      now,
      pending: this.d.store.counts(modelId).pending,
      threshold,
      lastStartedAt: this.d.store.runs.lastStartedAt(modelId),
    });
    if (!decision.due) return this.setWake(decision.wakeAt);
    // After a rejected round its ratings are pending again: retrying on the same ratings would be rejected the same
    // way, again and again. Wait for `threshold` ratings the rejected round did not see (each rating calls here).
    const rejected = this.d.store.runs.lastRejected(modelId);
    if (rejected !== null && this.d.store.runs.pendingSince(modelId, rejected.runId) < threshold) return this.setWake(null);
    try {
      resolveModelDir(this.d.store, modelId);
    } catch {
      return this.setWake(null); // no trainable model configured yet: status shows the pending count, and `rein train` explains why
    }
    if ((decision.needsIdle || s['training.onlyWhenIdle']) && !(this.d.machineIdle ?? machineIdle)()) {
      return this.setWake(now + (this.d.idlePollMs ?? 60_000));
    }
    this.setWake(null);
    try {
      this.start('auto');
    } catch (e) {
      // An automatic start that cannot run (no model directory, a round already running elsewhere) waits for the
      // next rating; the reason is logged where the core's logs go.
      if (!(e instanceof ReinError)) throw e;
      console.error(`rein: automatic training did not start: ${e.message}`);
    }
  }

  /** Starts a round now; returns its run. */
  start(trigger: RunView['trigger'], fromVersion?: number, gate: GateKind = 'ratings'): RunView {
    const modelId = this.d.modelId();
    resolveModelDir(this.d.store, modelId); // fail before creating a run when the model has no directory
    if (this.busy()) throw new ConflictError(`training run ${this.child!.runId} is already running`, { runId: this.child!.runId });
    if (gate === 'env' && this.envPlayer === null) throw new ReinError('not_available', 'an env-gated round needs the env to play its gate on: start it from the gym (node/gym), which registers its agent and env');
    acquireTrainingLock(this.d.home, { pid: process.pid, runId: null });
    let run: RunView;
    try {
      run = this.d.store.runs.start(modelId, trigger, fromVersion ?? null, gate === 'env' ? { gate } : {});
    } catch (e) {
      releaseTrainingLock(this.d.home, process.pid);
      throw e;
    }
    writeTrainingLock(this.d.home, { pid: process.pid, runId: run.id });
    const log = openTrainerLog(this.d.home, run.id);
    let proc: ChildProcess;
    try {
      proc = fork(this.d.workerPath ?? workerEntry, [this.d.home.dir, String(run.id)], {
        // Electron's binary (process.execPath, fork's default) runs as plain Node for the worker.
        execPath: process.execPath,
        env: { ...process.env, ELECTRON_RUN_AS_NODE: '1', ...(this.d.store.cipher === null ? {} : keysForChild(this.d.store.cipher)) },
        // The worker's own output (native libraries' warnings, a crash's last words) goes to logs/trainer.log, not to
        // the terminal of whoever started the round: a file, so it outlives a `rein train` that exits mid-round.
        stdio: ['ignore', log.fd ?? 'ignore', log.fd ?? 'ignore', 'ipc'],
        serialization: 'advanced',
      });
    } finally {
      if (log.fd !== null) closeSync(log.fd);
    }
    const state = { proc, runId: run.id, modelId, done: false, failed: null as string | null, log };
    this.child = state;
    if (proc.pid !== undefined) {
      writeTrainingLock(this.d.home, { pid: proc.pid, runId: run.id });
      try {
        os.setPriority(proc.pid, this.d.priority ?? 10);
      } catch {
        // Lowering a child's priority is always allowed on Linux/macOS; elsewhere training runs at normal priority.
      }
    }
    proc.on('message', (m: WorkerMessage) => this.onMessage(state, m));
    proc.on('exit', (code, signal) => this.onExit(state, code, signal));
    proc.on('error', (err) => {
      state.failed = `the trainer process could not run: ${err.message}`;
    });
    return this.d.store.runs.list(modelId, 1000).find((r) => r.id === run.id) ?? run;
  }

  private onMessage(s: NonNullable<Scheduler['child']>, m: WorkerMessage): void {
    if (m.type === 'progress') this.d.emit('trainingProgress', m.progress);
    else if (m.type === 'envGate') this.playEnvGate(s, m);
    else if (m.type === 'done') {
      s.done = true;
      if (m.previousActive !== null) this.d.emit('adapterChanged', { modelId: s.modelId, version: m.previousActive, status: 'inactive' });
      this.d.emit('adapterChanged', { modelId: s.modelId, version: m.version, status: m.status });
    } else if (m.type === 'failed') s.failed = m.error;
  }

  private playEnvGate(s: NonNullable<Scheduler['child']>, m: Extract<WorkerMessage, { type: 'envGate' }>): void {
    const reply = (r: WorkerReply): void => {
      if (s.proc.connected) s.proc.send(r, undefined, {}, () => undefined);
    };
    const player = this.envPlayer;
    if (player === null) return reply({ type: 'envGateResult', runId: m.runId, error: 'no env player is registered in the process that started the round' });
    player({ runId: m.runId, candidate: m.candidate, parent: m.parent }).then(
      (metrics) => reply({ type: 'envGateResult', runId: m.runId, metrics }),
      (e: unknown) => reply({ type: 'envGateResult', runId: m.runId, error: e instanceof Error ? e.message : String(e) }),
    );
  }

  private onExit(s: NonNullable<Scheduler['child']>, code: number | null, signal: NodeJS.Signals | null): void {
    if (!s.done) {
      // A worker that died without recording its outcome (kill -9, OOM, a crash in native code) leaves its run
      // `running`: mark it failed here with what we know.
      const said = trainerLogSince(s.log);
      const why = (signal !== null ? `the trainer process was killed (${signal})` : `the trainer process exited with code ${code}`) + (said === '' ? '' : `; its last output (logs/trainer.log): ${said}`);
      const reason = s.failed ?? why;
      const changed = this.d.store.runs.end(s.runId, 'failed', reason);
      const row = this.d.store.runs.get(s.runId);
      const cancelled = row?.status === 'cancelled';
      this.d.emit('trainingProgress', {
        runId: s.runId,
        phase: cancelled ? 'cancelled' : 'failed',
        step: 0,
        steps: 0,
        loss: null,
        kl: null,
        clipFraction: null,
        tokensPerSecond: null,
        etaSeconds: null,
        message: changed ? reason : (row?.error ?? reason),
      });
      removeStaleStaging(this.d.home);
      // Killed between renaming its vN and committing the row: the directory goes too, unless a newer worker runs
      // (its own vN may be between those two steps right now).
      if (this.child === s) removeOrphanVersions(this.d.home, this.d.store);
    }
    if (s.proc.pid !== undefined) releaseTrainingLock(this.d.home, s.proc.pid);
    // A worker that outlived its round (the reward model's retrain) must not free the lock of the round after it.
    if (this.child !== s) return;
    releaseTrainingLock(this.d.home, process.pid);
    this.child = null;
    const waiters = this.exitWaiters;
    this.exitWaiters = [];
    for (const w of waiters) w();
    // Ratings that arrived during the round may already make the next one due.
    setImmediate(() => {
      if (!this.closed) this.maybeAutoStart();
    });
  }

  /** Asks the running round to stop; it is killed if it has not stopped within `graceMs`. */
  cancel(graceMs = 10_000): boolean {
    if (!this.busy()) return false;
    const s = this.child!;
    s.proc.send({ type: 'cancel' });
    const t = setTimeout(() => {
      if (this.child === s) s.proc.kill('SIGKILL');
    }, graceMs);
    t.unref();
    return true;
  }

  /** Resolves when no round runs in this process. */
  idle(): Promise<void> {
    if (this.child === null) return Promise.resolve();
    return new Promise((resolve) => this.exitWaiters.push(resolve));
  }

  private closed = false;

  /** Stops scheduling. A running worker is left to finish and record its own outcome. */
  close(): void {
    this.setWake(null);
    this.closed = true;
    const s = this.child;
    if (s !== null) {
      // The store closes with the core: from now on the worker records its own outcome, and a worker killed after
      // this is recovered at the next start-up.
      s.proc.removeAllListeners('message');
      s.proc.removeAllListeners('exit');
      if (s.proc.connected) s.proc.disconnect();
      s.proc.unref();
    }
  }
}
