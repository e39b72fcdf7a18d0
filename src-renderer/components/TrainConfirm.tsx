// Consent before work that takes hours or throws hours away (issue #15 item 9): Train now, Retrain from a version and
// Cancel ask first, with how many ratings the round trains on and how long it should take (store/estimate.ts: from
// measured rounds when there are any, else from the model's size, and always called an estimate).
import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/shallow';
import { durationWords, nextRoundConfig, paramWords, roundEstimate, timedRound } from '../store/estimate.ts';
import { useRein } from '../store/react.tsx';
import { selectLiveProgress, selectTrainingView } from '../store/training.ts';
import { Confirm } from './Confirm.tsx';

export type TrainAction = { kind: 'train' } | { kind: 'retrain'; fromVersion: number } | { kind: 'cancel' };

export function TrainConfirm(props: { action: TrainAction; onConfirm: () => void; onCancel: () => void }) {
  const { runs, presets, settings, status, running, loadPresets, active } = useRein(
    useShallow((s) => ({ runs: s.runs, presets: s.presets, settings: s.settings, status: s.status, running: selectLiveProgress(s), loadPresets: s.loadRoundPresets, active: s.status?.activeAdapter?.version ?? 0 })),
  );
  useEffect(() => void loadPresets(), [loadPresets]);
  const a = props.action;
  const pending = status?.pending ?? 0;
  if (a.kind === 'cancel') {
    return (
      <Confirm title="Cancel this training round?" confirmLabel="Cancel the round" cancelLabel="Keep training" danger onConfirm={props.onConfirm} onCancel={props.onCancel}>
        <p data-testid="confirm-text">
          {running ? (running.steps > 0 ? `Round ${running.runId} is at step ${running.step} of ${running.steps}. ` : `Round ${running.runId} is ${running.phase}. `) : ''}
          Cancelling throws away the work done so far. Its ratings go back to waiting and train in the next round; the version in use does not change.
        </p>
      </Confirm>
    );
  }
  const timed = timedRound(presets, settings?.['training.preset'], pending);
  const est = roundEstimate({ runs, config: nextRoundConfig(presets, settings?.['training.preset'], settings?.['training.custom']), timed });
  const held = timed?.heldout ?? 0;
  // As the round selects them (node/training/data.ts selectRound): round(pending × replayRatio) of the model's
  // trained ratings, at most as many as there are.
  const trained = Math.max(0, (status?.ratings.total ?? 0) - pending);
  const replay = Math.min(trained, Math.round(pending * (settings?.['training.replayRatio'] ?? 0)));
  const title = a.kind === 'train' ? 'Train a round now?' : `Train a new round from v${a.fromVersion}?`;
  return (
    <Confirm title={title} confirmLabel={a.kind === 'train' ? 'Start training' : `Retrain from v${a.fromVersion}`} onConfirm={props.onConfirm} onCancel={props.onCancel}>
      <p data-testid="confirm-text">
        It trains on the <strong>{pending}</strong> rating{pending === 1 ? '' : 's'} waiting
        {replay > 0 && `, plus ${replay} older one${replay === 1 ? '' : 's'} replayed`}
        {a.kind === 'retrain' && (a.fromVersion === active ? `, starting from v${a.fromVersion}, the version in use` : `, starting from v${a.fromVersion} instead of the version in use`)}.
      </p>
      {held > 0 && (
        <p data-testid="confirm-heldout">
          {held} of them, picked at random, are held out: they test the new version and train in the next round.
        </p>
      )}
      <p data-testid="confirm-estimate">
        {est === null
          ? 'No time estimate yet: no round has been measured and the model’s size is not known.'
          : `Estimated time: ${durationWords(est.seconds)} (${est.steps} steps of ${est.batchSize} turns). ` +
            (est.basis === 'runs'
              ? `An estimate from the measured speed of your last ${est.runs === 1 ? 'round' : `${est.runs} rounds`}.`
              : `A rough estimate from the model’s size (${paramWords(presets?.shape.activeParams ?? 0)} parameters); the first round measures the real speed.`)}
      </p>
      <p className="muted small">You can keep rating while it runs, and cancel it. If the check after training fails, the version in use stays and the ratings train again next round.</p>
    </Confirm>
  );
}

/**
 * Train now, behind its confirmation. With no trainable model set up there is nothing to consent to: the core's
 * answer (not available, and why) is shown at once.
 */
export function TrainNowButton(props: { className: string }) {
  const { running, starting, start, configured } = useRein(
    useShallow((s) => ({
      running: selectTrainingView(s).kind === 'running',
      starting: s.trainingStarting,
      start: s.startTraining,
      configured: s.status?.model.configured ?? false,
    })),
  );
  const [asking, setAsking] = useState(false);
  return (
    <>
      <button type="button" className={props.className} onClick={() => (configured ? setAsking(true) : void start())} disabled={starting || running}>
        {starting ? 'Starting…' : 'Train now'}
      </button>
      {asking && (
        <TrainConfirm
          action={{ kind: 'train' }}
          onCancel={() => setAsking(false)}
          onConfirm={() => {
            setAsking(false);
            void start();
          }}
        />
      )}
    </>
  );
}
