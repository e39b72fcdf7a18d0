// The after-round hook the trainer worker runs (training/worker.ts): a new reward-model version from every live
// rating, read from the round's model. Its outcome goes to `log` (the worker's stderr, where the core's logs go);
// a failure never fails the round, which is already recorded.
import type { Store } from '../../store/store.ts';
import { resolveModelDir } from '../../model-files/base-model.ts';
import { trainRewardModel } from './train.ts';

export async function retrainRewardModel(store: Store, runId: number, log: (line: string) => void): Promise<void> {
  const run = store.runs.get(runId);
  if (run === null) return;
  try {
    const m = await trainRewardModel({ store, modelId: run.modelId, modelDir: resolveModelDir(store, run.modelId, 'trainRewardModel'), runId });
    const a = m?.metrics.auroc ?? null;
    log(
      m === null
        ? 'rein: reward model not trained yet (the ratings need both a preferred and a not-preferred answer)'
        : `rein: reward model v${m.version}: ${m.ratings} examples, held-out AUROC ${a === null ? 'n/a' : `${a.value.toFixed(2)} [${a.ci[0].toFixed(2)}, ${a.ci[1].toFixed(2)}]`}`,
    );
  } catch (e) {
    log(`rein: reward model not retrained after run ${runId}: ${(e as Error).message}`);
  }
}
