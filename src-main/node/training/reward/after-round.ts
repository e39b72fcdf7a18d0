// The after-round hook the trainer worker runs (training/worker.ts): a new reward-model version from every live
// rating, read from the round's model. Its outcome is stored; a failure goes to `log` (the worker's stderr, where the
// core's logs go) and never fails the round, which is already recorded.
import type { Store } from '../../store/store.ts';
import { resolveModelDir } from '../../model-files/base-model.ts';
import { trainRewardModel } from './train.ts';

export async function retrainRewardModel(store: Store, runId: number, log: (line: string) => void): Promise<void> {
  const run = store.runs.get(runId);
  if (run === null) return;
  try {
    // Its outcome is recorded (rewardStatus, the Training screen, `rein reward status`); only a failure is logged.
    await trainRewardModel({ store, modelId: run.modelId, modelDir: resolveModelDir(store, run.modelId, 'trainRewardModel'), runId });
  } catch (e) {
    log(`rein: reward model not retrained after run ${runId}: ${(e as Error).message}`);
  }
}
