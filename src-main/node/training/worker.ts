// The trainer worker: a child process (`node worker.ts <home dir> <run id>`), started by the scheduler at lower
// priority, so a crash, an OOM or a kill -9 of training never takes the app down. It opens its own Database, runs
// the round, and writes the run's outcome itself, so it also finishes a round when the process that started it
// (a `rein train` without a running app) has exited. Progress goes to the parent over the IPC channel when there
// is one; a 'cancel' message aborts between sequences.
import path from 'node:path';
import type { TrainingProgress } from '../../common/domain.ts';
import { resolveHome } from '../home.ts';
import { openCipher } from '../store/keyring.ts';
import { Store } from '../store/store.ts';
import { releaseTrainingLock, writeTrainingLock } from './lock.ts';
import type { EnvGateMetrics } from '../../common/training/gate.ts';
import { CancelledError, runRound, type EnvPlayer } from './round.ts';
import { retrainRewardModel } from './reward/after-round.ts';

export type WorkerMessage =
  | { type: 'progress'; progress: TrainingProgress }
  | { type: 'done'; version: number; status: 'active' | 'rejected'; previousActive: number | null }
  | { type: 'failed'; error: string; cancelled: boolean }
  /** An env-gated round asks the process that started it to play its gate's episodes (round.ts EnvPlayer). */
  | ({ type: 'envGate' } & Parameters<EnvPlayer>[0]);

/** The parent's answer to an `envGate` message: the metrics, or why it could not play them. */
export type WorkerReply = { type: 'envGateResult'; runId: number; metrics: EnvGateMetrics } | { type: 'envGateResult'; runId: number; error: string };

/** The env gate's player, over IPC: the parent plays the episodes (Scheduler.setEnvPlayer) and answers. */
const playEnvOverIpc: EnvPlayer = (req) =>
  new Promise((resolve, reject) => {
    if (process.send === undefined || !process.connected) {
      reject(new Error(`run ${req.runId} is env-gated and the process that started it is gone: nothing can play its gate's episodes`));
      return;
    }
    const done = (): void => {
      process.off('message', onMessage);
      process.off('disconnect', onDisconnect);
    };
    const onMessage = (m: unknown): void => {
      const r = m as WorkerReply;
      if (r?.type !== 'envGateResult' || r.runId !== req.runId) return;
      done();
      if ('error' in r) reject(new Error(`the env gate's player failed: ${r.error}`));
      else resolve(r.metrics);
    };
    const onDisconnect = (): void => {
      done();
      reject(new Error(`the process playing run ${req.runId}'s env gate went away`));
    };
    process.on('message', onMessage);
    process.on('disconnect', onDisconnect);
    send({ type: 'envGate', ...req });
  });

function send(m: WorkerMessage): void {
  // The parent may go between the check and the write (a `rein train` CLI exits once the round started): with a
  // callback the EPIPE comes to it, not as an unhandled 'error' event that killed the worker mid-round.
  if (process.send !== undefined && process.connected) process.send(m, undefined, {}, () => undefined);
}

async function main(): Promise<number> {
  const [homeDir, runIdArg] = process.argv.slice(2);
  const runId = Number(runIdArg);
  if (homeDir === undefined || !Number.isInteger(runId) || runId < 1) {
    process.stderr.write('usage: worker.ts <home dir> <run id>\n');
    return 2;
  }
  const home = resolveHome({ REIN_HOME: path.resolve(homeDir) });
  // The keys of an encrypted home come from the parent (REIN_DATA_KEYS, removed from this environment as read).
  const store = new Store(home.dbPath, Date.now, openCipher(home));
  writeTrainingLock(home, { pid: process.pid, runId });
  const abort = new AbortController();
  process.on('message', (m: unknown) => {
    if ((m as { type?: unknown })?.type === 'cancel') abort.abort();
  });
  // Losing the parent (the app quit) is not a reason to stop: the worker records its own outcome.
  process.on('disconnect', () => undefined);
  try {
    const r = await runRound({ home, store, runId, signal: abort.signal, progress: (progress) => send({ type: 'progress', progress }), playEnv: playEnvOverIpc });
    // The round is recorded: free the training lock before the reward model's retrain, so the next round may start
    // while this process finishes it (the scheduler counts a worker that sent 'done' as no longer running).
    releaseTrainingLock(home, process.pid);
    send({ type: 'done', version: r.version, status: r.status, previousActive: r.previousActive });
    // The reward model learns from every rating after each round, accepted or rejected (the scheduler's idle()
    // waits for this process to exit). Its failure never fails the round, which is already recorded.
    await retrainRewardModel(store, runId, (line) => process.stderr.write(`${line}\n`));
    return 0;
  } catch (e) {
    const cancelled = e instanceof CancelledError;
    const error = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    store.runs.end(runId, cancelled ? 'cancelled' : 'failed', cancelled ? 'cancelled by the user' : error);
    send({ type: 'failed', error, cancelled });
    return cancelled ? 0 : 1;
  } finally {
    releaseTrainingLock(home, process.pid);
    store.close();
  }
}

const code = await main();
// Let the last IPC message flush before exiting.
if (process.connected) process.disconnect();
process.exitCode = code;
